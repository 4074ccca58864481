//! Deferred calls: [`DeferredOn`] submits a verb to an executor and answers a [`Deferred`], which owns the one
//! box holding the call's outcome, argument struct, result struct and inputs until the call is final, and
//! which `wait`, `.await` ([`DeferredFuture`]) or its drop retires.

use core::alloc::Layout;
use core::ffi::{c_char, c_void};
use core::fmt;
use core::future::{Future, IntoFuture};
use core::marker::PhantomData;
use core::mem::{ManuallyDrop, MaybeUninit};
use core::pin::Pin;
use core::ptr::{self, NonNull};
use core::task::{Context, Poll};
use std::alloc;
use std::panic;

use crate::call::{sealed, HandlerSlot, Receiver, Target, Verb};
use crate::error::{check, failure};
use crate::inputs::Owned;
use crate::marshal::Handle;
use crate::{sys, Error, Executor, Model, Result, Status};

/// A receiver that submits verbs to an executor and answers [`Deferred`] calls: `model.deferred(&executor)`
/// or `trainer.deferred(&executor)`.
///
/// It takes owned inputs and `'static` configs and handlers (see [`Accepts`](crate::Accepts)), since the
/// library reads them after the verb returns. It borrows its target and the executor, so neither it nor a
/// `Deferred` it submits can outlive them.
pub struct DeferredOn<'r, T: ?Sized = Model> {
    pub(crate) target: &'r T,
    pub(crate) executor: &'r Executor,
}

impl<T: ?Sized> Clone for DeferredOn<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: ?Sized> Copy for DeferredOn<'_, T> {}

impl<T: ?Sized> fmt::Debug for DeferredOn<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeferredOn")
            .field("executor", self.executor)
            .finish_non_exhaustive()
    }
}

impl<T: ?Sized> sealed::Sealed for DeferredOn<'_, T> {}

impl<T: Target + ?Sized> Receiver for DeferredOn<'_, T> {
    type Mode = Owned;
    type Of = T::Of;
    type Answer<'a, U: 'a>
        = Result<Deferred<'a, U>>
    where
        Self: 'a;
    fn dispatch<'a, V: Verb<Self>>(self, verb: V) -> Result<Deferred<'a, V::Output>>
    where
        Self: 'a,
        V::Output: 'a,
    {
        submit::<Self, V>(self.target.target(), self.executor.raw(), verb)
    }
}

/// What every deferred call's box starts with.
#[repr(C)]
struct Head {
    /// The outcome the library wrote, `NULL` when the call finished before the verb returned.
    outcome: sys::uform_outcome_t,
    /// The handler and the panic it raised.
    slot: HandlerSlot,
    /// The box's layout, to free it.
    layout: Layout,
}

/// A deferred call's box: the head, the result struct, the held inputs and argument struct, then the
/// scratch the inputs were gathered into.
#[repr(C)]
struct Boxed<H, R> {
    head: Head,
    raw: MaybeUninit<R>,
    held: MaybeUninit<H>,
}

/// Submits a verb: one allocation holds the outcome, the argument struct, the result struct and the inputs.
fn submit<'a, R: Receiver, V: Verb<R>>(
    target: *mut c_void,
    executor: sys::uform_executor_t,
    verb: V,
) -> Result<Deferred<'a, V::Output>> {
    let words = verb.measure()?;
    let (block, layout, tail) = allocate::<V::Held, V::Raw>(words)?;
    let memory = block.as_ptr();
    let boxed = memory.cast::<Boxed<V::Held, V::Raw>>();
    // SAFETY: `memory` is a fresh allocation of `layout`: a `Boxed` at its start, `words` words at `tail`. The
    // writes go through raw pointers to its fields, so nothing uninitialised is read or referenced.
    let (slot, mut tail) = unsafe {
        ptr::addr_of_mut!((*boxed).head).write(Head {
            outcome: ptr::null_mut(),
            slot: HandlerSlot::new(),
            layout,
        });
        ptr::addr_of_mut!((*boxed).raw).write(MaybeUninit::zeroed());
        let tail = memory.add(tail).cast::<usize>();
        tail.write_bytes(0, words);
        (
            ptr::addr_of_mut!((*boxed).head.slot),
            core::slice::from_raw_parts_mut(tail, words),
        )
    };
    let held = match verb.hold(&mut tail, slot) {
        Ok(held) => held,
        Err(error) => {
            // SAFETY: `memory` came from `alloc::alloc(layout)`, nothing was handed to the library, and the head
            // and result struct written so far own nothing: the slot's panic is empty.
            unsafe { alloc::dealloc(memory, layout) };
            return Err(error);
        }
    };
    // SAFETY: `boxed` is live and its `held` field is uninitialised until this write.
    unsafe { ptr::addr_of_mut!((*boxed).held).write(MaybeUninit::new(held)) };
    let call = Deferred {
        head: block.cast::<Head>(), // `Boxed` is `repr(C)` and starts with its head
        finish: finish::<R, V>,
        release: release::<V::Held, V::Raw>,
        _call: PhantomData,
    };
    let mut message = ptr::null();
    // SAFETY: every field of the box is initialised, and the box stays in place and unchanged until `release`
    // frees it, which `wait`, the drop and the refusal below reach only once the call is final: what
    // `Verb::call` and types.h ask of a deferred call. The receiver borrows the target and the executor for
    // `'a`, which the `Deferred` carries; `outcome` points into the box and `message` to a local.
    let status = unsafe {
        V::call(
            (*boxed).held.as_ptr(),
            target,
            executor,
            (*boxed).raw.as_mut_ptr(),
            ptr::addr_of_mut!((*boxed).head.outcome),
            &mut message,
        )
    };
    if status == sys::uform_status_t::uform_status_deferred_k
        || status == sys::uform_status_t::uform_status_ok_k
    {
        return Ok(call);
    }
    Err(refused(call, status, message))
}

/// The memory of a box with `words` words of scratch: the allocation, its layout and the scratch's offset in it.
fn allocate<H, Raw>(words: usize) -> Result<(NonNull<u8>, Layout, usize)> {
    let too_large = crate::error::invalid("an input is too large");
    let scratch = Layout::array::<usize>(words).map_err(|_| too_large)?;
    let (layout, tail) = Layout::new::<Boxed<H, Raw>>()
        .extend(scratch)
        .map_err(|_| too_large)?;
    let layout = layout.pad_to_align();
    // SAFETY: the layout is not zero-sized, since it holds a `Head`.
    let Some(block) = NonNull::new(unsafe { alloc::alloc(layout) }) else {
        alloc::handle_alloc_error(layout);
    };
    Ok((block, layout, tail))
}

/// Frees a call the library refused before it started (no outcome was taken and no handler ran) and answers
/// the refusal.
fn refused<T>(call: Deferred<'_, T>, status: sys::uform_status_t, message: *const c_char) -> Error {
    let call = ManuallyDrop::new(call);
    if !call.outcome().is_null() {
        // SAFETY: an outcome the library wrote is live until released, which happens once, here.
        unsafe { sys::uform_outcome_release(call.outcome()) };
    }
    // SAFETY: the call was refused before it started, so the library holds no pointer into the box, and
    // `release` runs once: `call` is never dropped.
    unsafe { (call.release)(call.head) };
    failure(status, message)
}

/// Converts a finished call's result struct.
///
/// # Safety
/// `head` starts the box `submit` made for `V`, whose call succeeded and is final.
unsafe fn finish<R: Receiver, V: Verb<R>>(head: NonNull<Head>) -> Result<V::Output> {
    let boxed = head.as_ptr().cast::<Boxed<V::Held, V::Raw>>();
    // SAFETY: the result struct was zeroed, a valid `V::Raw` (`Verb`'s contract), and the call succeeded, so the
    // library published its views into it and writes it no more.
    unsafe { V::finish((*boxed).raw.assume_init_ref()) }
}

/// Drops what a final call held and frees its box.
///
/// # Safety
/// `head` starts a box `submit` made for `H` and `R`, with `held` written, whose call is final or was refused;
/// nothing uses the box afterwards.
unsafe fn release<H, R>(head: NonNull<Head>) {
    let boxed = head.as_ptr().cast::<Boxed<H, R>>();
    // SAFETY: the call is final (or refused), so the library no longer reads the box, whose head and `held`
    // `submit` initialised; the result struct owns nothing, and the layout is the one it was allocated with.
    unsafe {
        let layout = (*boxed).head.layout;
        ptr::drop_in_place((*boxed).held.as_mut_ptr());
        ptr::drop_in_place(ptr::addr_of_mut!((*boxed).head));
        alloc::dealloc(boxed.cast(), layout);
    }
}

/// A submitted call, answered by a [`DeferredOn`] receiver.
///
/// It owns the inputs the library reads until the call is final, in the one box the call allocated with
/// its outcome, argument struct and result struct, and borrows the model (or trainer), the executor and
/// the arena, as a blocking call does.
///
/// - [`status`](Deferred::status) polls without blocking (`uform_outcome_status`);
/// - [`wait`](Deferred::wait) blocks the thread without spinning (`uform_outcome_wait`), running the call on
///   the calling thread if an executor without threads of its own holds it;
/// - `.await` polls the status word until the call is final, waking itself, since the library has no
///   wake-up. An executor without threads of its own may hold a call until its `wait`, its next `drain` or
///   blocking call, so `drain` it before an `.await` there.
///
/// Dropping an unfinished `Deferred` waits for the call (`uform_outcome_release`). A panic a progress
/// handler raised resurfaces from `wait`, `.await`, or a drop outside unwinding. A `Deferred` is `Send`, so
/// waiting off-thread goes through a scoped thread:
/// `std::thread::scope(|scope| scope.spawn(move || call.wait()).join())`.
#[doc(alias = "uform_outcome_t")]
#[must_use = "dropping a deferred call waits for it"]
pub struct Deferred<'a, T> {
    head: NonNull<Head>,
    finish: unsafe fn(NonNull<Head>) -> Result<T>,
    release: unsafe fn(NonNull<Head>),
    _call: PhantomData<(&'a mut (), T)>,
}

// SAFETY: the box holds owned inputs (the `Accepts<Owned, _>` bounds require them `Send`), `'static` configs
// whose handlers are `Send`, and views of arenas; the library's outcome functions are thread-safe.
unsafe impl<T: Send> Send for Deferred<'_, T> {}

impl<T> Deferred<'_, T> {
    fn outcome(&self) -> sys::uform_outcome_t {
        // SAFETY: the head is initialised and lives until `release`; the library wrote `outcome`, if at all,
        // before the verb returned, and never writes it again.
        unsafe { (*self.head.as_ptr()).outcome }
    }

    /// Polls the call without blocking: `Ok(())` once it succeeded, `Err(Status::Deferred)` while it is not
    /// final, and its failure otherwise. Never runs a call an executor holds.
    ///
    /// Calls `uform_outcome_status`.
    #[doc(alias = "uform_outcome_status")]
    pub fn status(&self) -> Result<(), Status> {
        let outcome = self.outcome();
        if outcome.is_null() {
            return Ok(());
        }
        // SAFETY: the outcome is live until this `Deferred` releases it; the message out-pointer may be `NULL`.
        let status = unsafe { sys::uform_outcome_status(outcome, ptr::null_mut()) };
        if status == sys::uform_status_t::uform_status_ok_k {
            Ok(())
        } else {
            Err(Status::from_raw(status).unwrap_or(Status::Internal))
        }
    }

    /// Blocks without spinning until the call is final, running it on the calling thread if its executor
    /// holds it, then answers what it answers. A panic its progress handler raised resumes here.
    ///
    /// Calls `uform_outcome_wait`, then `uform_outcome_release`.
    #[doc(alias = "uform_outcome_wait")]
    pub fn wait(self) -> Result<T> {
        let call = ManuallyDrop::new(self);
        let outcome = call.outcome();
        let mut message = ptr::null();
        let status = if outcome.is_null() {
            sys::uform_status_t::uform_status_ok_k
        } else {
            // SAFETY: the outcome is live until released below, and `message` is a local.
            unsafe { sys::uform_outcome_wait(outcome, &mut message) }
        };
        // SAFETY: `uform_outcome_wait` returned, or the call finished before the verb did (no outcome), so the
        // call is final and no trampoline touches the slot in the live box any more.
        let panicked =
            unsafe { HandlerSlot::take_panic(ptr::addr_of_mut!((*call.head.as_ptr()).slot)) };
        let answer = match panicked {
            // SAFETY: the box is `finish`'s, and the call is final and succeeded, which `check` just saw.
            None => check(status, message).and_then(|()| unsafe { (call.finish)(call.head) }),
            Some(_) => Err(crate::error::unknown("a progress handler panicked")),
        };
        // SAFETY: the call is final; the outcome is released once, here, and the box freed once, since `call` is
        // never dropped; nothing reads either afterwards.
        unsafe {
            if !outcome.is_null() {
                sys::uform_outcome_release(outcome);
            }
            (call.release)(call.head);
        }
        if let Some(payload) = panicked {
            panic::resume_unwind(payload);
        }
        answer
    }
}

impl<T> Drop for Deferred<'_, T> {
    /// Waits for the call, then releases its outcome and its box; resumes a handler's panic unless the
    /// thread is already unwinding.
    #[doc(alias = "uform_outcome_release")]
    fn drop(&mut self) {
        let outcome = self.outcome();
        // SAFETY: `uform_outcome_release` waits until the call is final (types.h), after which the slot and the
        // box are this `Deferred`'s alone; `release` frees the box once, in this drop.
        let panicked = unsafe {
            if !outcome.is_null() {
                sys::uform_outcome_release(outcome);
            }
            let panicked = HandlerSlot::take_panic(ptr::addr_of_mut!((*self.head.as_ptr()).slot));
            (self.release)(self.head);
            panicked
        };
        if let Some(payload) = panicked {
            if !std::thread::panicking() {
                panic::resume_unwind(payload);
            }
        }
    }
}

impl<T> fmt::Debug for Deferred<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Deferred")
            .field("status", &self.status())
            .finish()
    }
}

impl<'a, T> IntoFuture for Deferred<'a, T> {
    type Output = Result<T>;
    type IntoFuture = DeferredFuture<'a, T>;
    fn into_future(self) -> Self::IntoFuture {
        DeferredFuture { call: Some(self) }
    }
}

/// The future of a [`Deferred`] call: each poll reads the call's status word (`uform_outcome_status`) and,
/// while it is not final, wakes itself, so other tasks run meanwhile.
#[must_use = "futures do nothing unless polled"]
pub struct DeferredFuture<'a, T> {
    call: Option<Deferred<'a, T>>,
}

impl<T> fmt::Debug for DeferredFuture<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeferredFuture")
            .field("call", &self.call)
            .finish()
    }
}

// The future never pins what it holds: the call's box lives on the heap and moves with nothing.
impl<T> Unpin for DeferredFuture<'_, T> {}

impl<T> Future for DeferredFuture<'_, T> {
    type Output = Result<T>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T>> {
        let call = self
            .call
            .as_ref()
            .expect("a deferred call polled after it completed");
        if call.status() == Err(Status::Deferred) {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let call = self
            .call
            .take()
            .expect("a deferred call polled after it completed");
        Poll::Ready(call.wait())
    }
}
