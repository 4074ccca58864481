//! The machinery a verb runs through: the generated verbs describe a call as a [`Verb`], unnameable outside
//! the crate, and a [`Receiver`] runs it blocking ([`On`](crate::On), `crate::blocking`) or deferred
//! ([`DeferredOn`](crate::DeferredOn), `crate::deferred`).

use core::ffi::{c_char, c_void};

use crate::sys;
use crate::Result;

pub use crate::progress::HandlerSlot;

/// The supertrait that seals [`Receiver`]: public, so the receivers implement it, in a module no other crate names.
pub mod sealed {
    /// Implemented by the crate's receivers alone.
    pub trait Sealed {}
}

/// Where and how a verb runs: `&Model` on the calling thread, [`On`](crate::On) blocking on an executor, and
/// [`DeferredOn`](crate::DeferredOn) submitted to an executor, answering a [`Deferred`](crate::Deferred).
///
/// The verb traits ([`EncodeVerbs`](crate::EncodeVerbs), [`ModelVerbs`](crate::ModelVerbs),
/// [`TrainVerbs`](crate::TrainVerbs)) write every verb once for all receivers; this trait is sealed.
pub trait Receiver: Sized + sealed::Sealed {
    /// How the receiver takes inputs: [`Lent`](crate::inputs::Lent) for the blocking ones,
    /// [`Owned`](crate::inputs::Owned) for the deferred one.
    type Mode;
    /// What the receiver's verbs name.
    #[doc(hidden)]
    type Of;
    /// What a verb answers: `Result<T>` when blocking, `Result<Deferred<'a, T>>` when deferred.
    type Answer<'a, T: 'a>
    where
        Self: 'a;
    /// Runs a verb.
    #[doc(hidden)]
    fn dispatch<'a, V: Verb<Self>>(self, verb: V) -> Self::Answer<'a, V::Output>
    where
        Self: 'a,
        V::Output: 'a;
}

/// What an input needs and holds: `words` of scratch to gather into, and `count` items.
#[derive(Clone, Copy, Debug)]
pub struct Measure {
    /// Words of scratch, zero for an input lent without a copy.
    pub words: usize,
    /// Items in the input.
    pub count: usize,
}

/// A tape as the C ABI takes it: `data`, `length` elements, `count + 1` offsets (or `NULL`).
#[derive(Debug)]
pub struct RawTape<E> {
    /// The first element.
    pub data: *const E,
    /// Elements in all.
    pub length: usize,
    /// `count + 1` offsets, or `NULL` for per-item arrays, single paths and empty tapes.
    pub offsets: *const usize,
    /// Items.
    pub count: usize,
}

impl<E> Clone for RawTape<E> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<E> Copy for RawTape<E> {}

/// Checks a config against the items of the verb's first tape before the call, as the library would.
pub trait Check {
    /// Fails with the status the library would answer.
    fn check(&self, items: usize) -> Result<()>;
}

/// Marks receivers of a model's verbs.
#[derive(Debug)]
pub struct OfModel;
/// Marks receivers of a trainer's verbs.
#[derive(Debug)]
pub struct OfTrainer;

/// What a receiver's verbs name: a model or a trainer.
pub trait Target {
    /// [`OfModel`] or [`OfTrainer`].
    type Of;
    /// The C handle, type-erased.
    fn target(&self) -> *mut c_void;
}

/// One call of a verb, as the generated layer describes it.
///
/// # Safety
/// `Raw` is valid when zeroed; `call` passes the C function pointers that stay valid while `held` and the
/// scratch `keep` filled stay in place, and `finish` reads only what the library published.
pub unsafe trait Verb<R: crate::Receiver>: Sized {
    /// The inputs, the argument struct and the scalars, held in place while the call runs.
    type Held;
    /// The C struct receiving the views (`uform_encoded_t`, ...), or `()`.
    type Raw;
    /// What the verb answers.
    type Output;
    /// Checks the inputs and the config and answers the words of scratch the inputs gather into.
    fn measure(&self) -> Result<usize>;
    /// Gathers the inputs into `tail` and converts the config, storing its handler in `slot`.
    fn hold(self, tail: &mut &mut [usize], slot: *mut HandlerSlot) -> Result<Self::Held>;
    /// Calls the C verb.
    ///
    /// # Safety
    /// Every pointer is valid; `held` and the scratch stay in place until the call is final.
    unsafe fn call(
        held: *const Self::Held,
        target: *mut c_void,
        executor: sys::uform_executor_t,
        raw: *mut Self::Raw,
        outcome: *mut sys::uform_outcome_t,
        message: *mut *const c_char,
    ) -> sys::uform_status_t;
    /// Converts the published views.
    ///
    /// # Safety
    /// The call succeeded and `raw` holds what it published.
    unsafe fn finish(raw: &Self::Raw) -> Result<Self::Output>;
}
