//! The prepared data (`tools/data/prepare.py`, docs/data.md) and its batch recipe: `load` reads the data directory
//! into memory, `sample` draws a step's groups and items, `write` turns them into the batch a trainer step takes
//! (edges, sides, choice tapes) or into JSON (`uform-train batches`).

mod load;
mod sample;
mod write;

#[cfg(test)]
mod tests;

pub use load::{Data, Split};
#[cfg(test)]
pub use sample::RareBy;
pub use sample::{BatchRecipe, Random};
pub use write::{Batch, Rows};
