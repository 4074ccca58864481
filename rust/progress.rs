//! Progress handlers: the [`Progress`] type a config takes, the [`HandlerSlot`] a call keeps its handler and
//! the handler's panic in, and the panic-catching `extern "C"` trampoline the library calls the handler through.

use core::ffi::c_void;
use core::ops::ControlFlow;
use core::ptr::{self, NonNull};
use std::any::Any;
use std::panic::{self, AssertUnwindSafe};

use crate::sys;

/// A progress handler, called with the units completed so far and the total; answering
/// [`ControlFlow::Break`] stops the call, which then fails with [`Status::Cancelled`](crate::Status::Cancelled)
/// and publishes nothing.
///
/// It runs on one of the executor's threads, never on two at once for one call, hence `Send`. A panic
/// inside it is caught at the C frame (unwinding into the library would abort), stops the call, and
/// resurfaces once the call is final: from the blocking verb, or from a deferred call's `wait`, `.await`,
/// or its drop outside unwinding.
///
/// This is the `uform_progress_t` and `progress_context` pair of every C argument struct that has one.
#[doc(alias = "uform_progress_t")]
pub type Progress<'a> = &'a mut (dyn FnMut(usize, usize) -> ControlFlow<()> + Send + 'a);

/// The type-erased handler the trampoline calls.
type Erased = dyn FnMut(usize, usize) -> ControlFlow<()> + Send + 'static;

/// Where a call's handler and the panic it raised live while the call runs: on the stack of a blocking
/// call, in the box of a deferred one. The trampoline receives its address as `progress_context`.
pub struct HandlerSlot {
    handler: Option<NonNull<Erased>>,
    panic: Option<Box<dyn Any + Send + 'static>>,
}

impl HandlerSlot {
    /// An empty slot.
    pub const fn new() -> Self {
        Self {
            handler: None,
            panic: None,
        }
    }

    /// Takes the panic a handler raised, if any.
    ///
    /// # Safety
    /// `slot` is valid and the call it served is final, so no trampoline runs on it.
    pub unsafe fn take_panic(slot: *mut HandlerSlot) -> Option<Box<dyn Any + Send + 'static>> {
        // SAFETY: the caller promises a live slot whose call is final, so no trampoline writes it meanwhile.
        unsafe { (*slot).panic.take() }
    }

    /// Resumes the panic a handler raised, if any, once the call is final.
    ///
    /// # Safety
    /// As for [`HandlerSlot::take_panic`].
    pub unsafe fn resurface(slot: *mut HandlerSlot) {
        // SAFETY: the caller's promise is the one `take_panic` asks for.
        if let Some(payload) = unsafe { Self::take_panic(slot) } {
            panic::resume_unwind(payload);
        }
    }
}

/// Stores `handler` in `slot` and answers the `progress` and `progress_context` pair of a C argument struct:
/// the trampoline and the slot's address, or `NULL`s without a handler.
///
/// `slot` points to a live slot that nothing else touches until the call starts, and the caller keeps the
/// handler's borrow alive until the call is final: a blocking call holds it for its duration, and a deferred
/// receiver admits only `'static` handlers. Every caller in the crate passes the slot of the call being armed,
/// on its stack or in its box.
pub(crate) fn arm(
    slot: *mut HandlerSlot,
    handler: Option<Progress<'_>>,
) -> (sys::uform_progress_t, *mut c_void) {
    let Some(handler) = handler else {
        return (None, ptr::null_mut());
    };
    let handler: *mut (dyn FnMut(usize, usize) -> ControlFlow<()> + Send + '_) = handler;
    // SAFETY: the two pointer types differ only in the trait object's lifetime bound, so they share a layout and
    // a vtable; the trampoline calls the handler only while the call runs, which the caller keeps it alive for.
    let handler: *mut Erased = unsafe { core::mem::transmute(handler) };
    // SAFETY: `slot` points to a live slot that nothing else touches until the call starts (see above).
    unsafe { (*slot).handler = NonNull::new(handler) };
    (Some(trampoline), slot.cast())
}

/// The `uform_progress_t` every handler is called through: it catches a panic, stashes it in the slot and
/// answers `true` to stop the call.
///
/// # Safety
/// `context` is the slot [`arm`] armed, for a call that is not final yet; the library calls this on one thread
/// at a time for one call (encode.h's handlers).
unsafe extern "C" fn trampoline(context: *mut c_void, completed: usize, total: usize) -> bool {
    let slot = context.cast::<HandlerSlot>();
    // SAFETY: the library passes back, untouched, the `progress_context` `arm` answered: the slot, live until the
    // call is final. It calls the handler on one thread at a time, the slot's owner reads it only once the call
    // is final, and the handler `arm` stored outlives the call.
    unsafe {
        if (*slot).panic.is_some() {
            return true;
        }
        let Some(handler) = (*slot).handler else {
            return false;
        };
        match panic::catch_unwind(AssertUnwindSafe(|| (*handler.as_ptr())(completed, total))) {
            Ok(ControlFlow::Continue(())) => false,
            Ok(ControlFlow::Break(())) => true,
            Err(payload) => {
                (*slot).panic = Some(payload);
                true
            }
        }
    }
}
