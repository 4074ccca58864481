//! UForm: a pocket-sized multimodal encoder library, from Rust.
//!
//! A thin, safe layer over the C ABI in `include/uform/*.h`. The raw bindings live in [`sys`]; the enums,
//! configs, plain structs and verb traits are generated from the headers' `@uform` annotations by
//! `tools/uform-gen` (`cargo run -p uform-gen`), and the handles, views, inputs and deferred calls are
//! written by hand. Every public name is its C name without `uform_` and `_t`, in CamelCase; a verb's
//! argument struct becomes its `*Config`; every wrapper's documentation names the C symbol it calls.
//!
//! - [`Model`] encodes text, images, video and audio into pooled embeddings, per-token states and token
//!   vectors, and scores calibrated choices over text, through [`EncodeVerbs`] and [`ModelVerbs`].
//! - [`Trainer`] trains one on GPUs through [`TrainVerbs`], joined across hosts by a [`Mesh`].
//! - [`Executor`] owns the threads or streams every call runs on; [`Arena`] owns the memory outputs land
//!   in, which [`Rows`], [`RowsTape`] and [`Tape`] view without copying.
//!
//! ```no_run
//! use uform::*;
//!
//! # fn main() -> uform::Result<()> {
//! let executor = Executor::for_ram(&[], None, 0)?;
//! let mut arena = Arena::new_in(&executor)?;
//! let model = Model::load_ram("model.safetensors")?;
//!
//! let texts = ["a cat on a mat", "a dog in the fog"];
//! let encoded = model.on(&executor).text_encode(&texts, Outputs::EMBEDDINGS, Scalar::F32, &mut arena)?;
//! if let Some(embeddings) = encoded.embeddings {
//!     let values: &[f32] = embeddings.values()?;
//!     assert_eq!(values.len(), texts.len() * model.describe()?.dimensions);
//! }
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

pub mod sys;

mod arena;
mod blocking;
mod call;
mod deferred;
mod error;
mod executor;
pub mod inputs;
mod marshal;
mod model;
mod progress;
mod rows;
#[cfg(test)]
mod tests;
mod training;

/// The safe layer `tools/uform-gen` writes from the headers' annotations, one module per header.
mod generated {
    pub mod encode;
    pub mod model;
    pub mod train;
    pub mod types;
}

pub use crate::arena::Arena;
pub use crate::blocking::On;
pub use crate::call::Receiver;
pub use crate::deferred::{Deferred, DeferredFuture, DeferredOn};
pub use crate::error::{Error, Result};
pub use crate::executor::Executor;
pub use crate::generated::encode::*;
pub use crate::generated::model::*;
pub use crate::generated::train::*;
pub use crate::generated::types::*;
pub use crate::inputs::Accepts;
pub use crate::model::Model;
pub use crate::progress::Progress;
pub use crate::rows::{Encoded, Rows, RowsTape, Tape, Value};
pub use crate::training::{Mesh, Trainer};

/// The library's version as `"MAJOR.MINOR.PATCH"`, which may differ from the headers' macros.
///
/// Calls `uform_version`.
#[doc(alias = "uform_version")]
pub fn version() -> &'static str {
    // SAFETY: `uform_version` takes nothing and answers a NUL-terminated string literal of the library, valid for
    // the life of the process.
    unsafe { marshal::static_str(sys::uform_version()) }.unwrap_or("")
}

/// The residencies this build carries, such as `"ram"`, `"ram,cuda"` or `"stub"`.
///
/// Calls `uform_build_flavor`.
#[doc(alias = "uform_build_flavor")]
pub fn build_flavor() -> &'static str {
    // SAFETY: `uform_build_flavor` takes nothing and answers a NUL-terminated string literal of the library, valid
    // for the life of the process.
    unsafe { marshal::static_str(sys::uform_build_flavor()) }.unwrap_or("")
}

/// The version of the C ABI the bindings were generated from, as the headers' `UFORM_VERSION_*` macros say.
#[doc(alias = "UFORM_VERSION_MAJOR")]
pub const HEADER_VERSION: (u32, u32, u32) = (
    sys::UFORM_VERSION_MAJOR,
    sys::UFORM_VERSION_MINOR,
    sys::UFORM_VERSION_PATCH,
);

/// Every `rust` block of the repository's README.md runs as a doc-test of this item, in every build, and its `c`
/// block must be `tests/c/readme_quickstart.c` word for word, which ctest compiles and runs:
///
/// ```
/// let readme = std::fs::read_to_string("README.md").unwrap();
/// let program = std::fs::read_to_string("tests/c/readme_quickstart.c").unwrap();
/// let block = format!("```c\n{program}```\n");
/// assert!(readme.contains(&block), "README.md's C quickstart is not tests/c/readme_quickstart.c");
/// ```
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
