//! Blocking receivers: `&Model` runs a verb on the calling thread and [`On`] runs it blocking on an executor,
//! both lending their inputs for the duration of the call.

use core::ffi::c_void;
use core::fmt;
use core::mem::MaybeUninit;
use core::ptr;

use crate::call::{sealed, HandlerSlot, OfModel, Receiver, Target, Verb};
use crate::error::check;
use crate::inputs::Lent;
use crate::marshal::Handle;
use crate::{sys, Executor, Model, Result};

/// A receiver that blocks on an executor: `model.on(&executor)` or `trainer.on(&executor)`.
///
/// A call finding another one holding the executor fails at once with [`Status::Contended`](crate::Status::Contended).
/// It borrows its target and the executor, so neither it nor what it answers can outlive them.
pub struct On<'r, T: ?Sized = Model> {
    pub(crate) target: &'r T,
    pub(crate) executor: &'r Executor,
}

impl<T: ?Sized> Clone for On<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: ?Sized> Copy for On<'_, T> {}

impl<T: ?Sized> fmt::Debug for On<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("On")
            .field("executor", self.executor)
            .finish_non_exhaustive()
    }
}

impl sealed::Sealed for &Model {}
impl<T: ?Sized> sealed::Sealed for On<'_, T> {}

impl Receiver for &Model {
    type Mode = Lent;
    type Of = OfModel;
    type Answer<'a, T: 'a>
        = Result<T>
    where
        Self: 'a;
    fn dispatch<'a, V: Verb<Self>>(self, verb: V) -> Result<V::Output>
    where
        Self: 'a,
    {
        blocking::<Self, V>(self.target(), ptr::null_mut(), verb)
    }
}

impl<T: Target + ?Sized> Receiver for On<'_, T> {
    type Mode = Lent;
    type Of = T::Of;
    type Answer<'a, U: 'a>
        = Result<U>
    where
        Self: 'a;
    fn dispatch<'a, V: Verb<Self>>(self, verb: V) -> Result<V::Output>
    where
        Self: 'a,
    {
        blocking::<Self, V>(self.target.target(), self.executor.raw(), verb)
    }
}

/// Runs a verb blocking: the inputs gather into one scratch allocation (none for lent tapes), the handler
/// slot and the argument struct live on this stack, and a handler's panic resurfaces once the call returns.
fn blocking<R: Receiver, V: Verb<R>>(
    target: *mut c_void,
    executor: sys::uform_executor_t,
    verb: V,
) -> Result<V::Output> {
    let words = verb.measure()?;
    let mut scratch: Vec<usize> = vec![0; words];
    let mut slot = HandlerSlot::new();
    let slot: *mut HandlerSlot = &mut slot;
    let held = verb.hold(&mut scratch.as_mut_slice(), slot)?;
    let mut raw = MaybeUninit::<V::Raw>::zeroed();
    let mut message = ptr::null();
    // SAFETY: `held`, the scratch its tapes point into and the slot live on this stack, unchanged, until the call
    // returns, and with a `NULL` outcome it is final then (types.h): what `Verb::call` asks. The receiver
    // borrows the target and the executor for as long; `raw` and `message` are locals.
    let status = unsafe {
        V::call(
            &held,
            target,
            executor,
            raw.as_mut_ptr(),
            ptr::null_mut(),
            &mut message,
        )
    };
    // SAFETY: the slot lives on this stack, and the blocking call returned, so it is final and no trampoline
    // touches the slot any more.
    unsafe { HandlerSlot::resurface(slot) };
    check(status, message)?;
    // SAFETY: `raw` started zeroed, a valid `V::Raw` (`Verb`'s contract), and the call succeeded, so it holds
    // the views the library published, as `finish` asks.
    unsafe { V::finish(raw.assume_init_ref()) }
}
