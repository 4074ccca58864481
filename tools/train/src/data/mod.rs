//! The prepared data (`tools/data/prepare.py`, docs/data.md) and its batch recipe: `load` reads the data directory
//! into memory, `sample` draws a step's groups and items, `write` turns them into the batch a trainer step takes
//! (edges, sides, choice tapes, teacher rows) or into JSON (`uform-train batches`); `teacher` reads the
//! distillation teacher's rows.

mod load;
mod sample;
mod teacher;
mod write;

#[cfg(test)]
mod teacher_tests;
#[cfg(test)]
mod tests;

pub use load::{Data, Split};
#[cfg(test)]
pub use sample::RareBy;
pub use sample::{BatchRecipe, Random};
pub use teacher::read_pairs;
pub use write::{Batch, Rows};
