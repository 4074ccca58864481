//! Receivers and deferred calls: `&Model` and [`On`] run a verb blocking, [`DeferredOn`] submits it and
//! answers a [`Deferred`], which owns the one box holding the call's outcome, argument struct, result
//! struct and inputs until the call is final.

use core::alloc::Layout;
use core::ffi::c_void;
use core::fmt;
use core::future::{Future, IntoFuture};
use core::marker::PhantomData;
use core::mem::{ManuallyDrop, MaybeUninit};
use core::pin::Pin;
use core::ptr::{self, NonNull};
use core::task::{Context, Poll};
use std::alloc;
use std::panic;

use crate::call::{HandlerSlot, OfModel, Target, Verb};
use crate::error::{check, failure};
use crate::inputs::{Lent, Owned};
use crate::raw::Handle;
use crate::{sys, Executor, Model, Result, Status};

mod sealed {
    pub trait Sealed {}
}

/// Where and how a verb runs: `&Model` on the calling thread, [`On`] blocking on an executor, and
/// [`DeferredOn`] submitted to an executor, answering a [`Deferred`].
///
/// The verb traits ([`EncodeVerbs`](crate::EncodeVerbs), [`ModelVerbs`](crate::ModelVerbs),
/// [`TrainVerbs`](crate::TrainVerbs)) write every verb once for all receivers; this trait is sealed.
pub trait Receiver: Sized + sealed::Sealed {
    /// How the receiver takes inputs: [`Lent`] for the blocking ones, [`Owned`] for the deferred one.
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

/// A receiver that blocks on an executor: `model.on(&executor)` or `trainer.on(&executor)`.
///
/// A call finding another one holding the executor fails at once with [`Status::Contended`]. It borrows its
/// target and the executor, so neither it nor what it answers can outlive them.
pub struct On<'r, T: ?Sized = Model> {
    pub(crate) target: &'r T,
    pub(crate) executor: &'r Executor,
}

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

macro_rules! receiver_traits {
    ($($name:ident),+) => {$(
        impl<T: ?Sized> Clone for $name<'_, T> {
            fn clone(&self) -> Self {
                *self
            }
        }
        impl<T: ?Sized> Copy for $name<'_, T> {}
        impl<T: ?Sized> fmt::Debug for $name<'_, T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($name)).field("executor", self.executor).finish_non_exhaustive()
            }
        }
    )+};
}
receiver_traits!(On, DeferredOn);

impl sealed::Sealed for &Model {}
impl<T: ?Sized> sealed::Sealed for On<'_, T> {}
impl<T: ?Sized> sealed::Sealed for DeferredOn<'_, T> {}

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
    // SAFETY: `held`, the scratch and the slot stay in place until the blocking call returns.
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
    // SAFETY: the call returned, so it is final and no handler runs any more.
    unsafe { HandlerSlot::resurface(slot) };
    check(status, message)?;
    // SAFETY: the call succeeded, and `Raw` is valid zeroed.
    unsafe { V::finish(raw.assume_init_ref()) }
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
    let too_large = crate::error::invalid("an input is too large");
    let scratch = Layout::array::<usize>(words).map_err(|_| too_large)?;
    let (layout, tail) = Layout::new::<Boxed<V::Held, V::Raw>>()
        .extend(scratch)
        .map_err(|_| too_large)?;
    let layout = layout.pad_to_align();
    // SAFETY: the layout is not zero-sized, since it holds a `Head`.
    let memory = unsafe { alloc::alloc(layout) };
    if memory.is_null() {
        alloc::handle_alloc_error(layout);
    }
    let boxed = memory.cast::<Boxed<V::Held, V::Raw>>();
    // SAFETY: `boxed` points to fresh memory of the right layout, which stays in place until released;
    // the fields are written before anything reads them.
    unsafe {
        ptr::addr_of_mut!((*boxed).head).write(Head {
            outcome: ptr::null_mut(),
            slot: HandlerSlot::new(),
            layout,
        });
        ptr::addr_of_mut!((*boxed).raw).write(MaybeUninit::zeroed());
        let tail = memory.add(tail).cast::<usize>();
        tail.write_bytes(0, words);
        let mut tail = core::slice::from_raw_parts_mut(tail, words);
        let slot = ptr::addr_of_mut!((*boxed).head.slot);
        match verb.hold(&mut tail, slot) {
            Ok(held) => ptr::addr_of_mut!((*boxed).held).write(MaybeUninit::new(held)),
            Err(error) => {
                alloc::dealloc(memory, layout);
                return Err(error);
            }
        }
        let call = Deferred {
            head: NonNull::new_unchecked(boxed.cast::<Head>()),
            finish: finish::<R, V>,
            release: release::<V::Held, V::Raw>,
            _call: PhantomData,
        };
        let mut message = ptr::null();
        let status = V::call(
            (*boxed).held.as_ptr(),
            target,
            executor,
            (*boxed).raw.as_mut_ptr(),
            ptr::addr_of_mut!((*boxed).head.outcome),
            &mut message,
        );
        if status == sys::uform_status_t::uform_status_deferred_k
            || status == sys::uform_status_t::uform_status_ok_k
        {
            return Ok(call);
        }
        // Refused before it started: no outcome was taken and no handler ran.
        let call = ManuallyDrop::new(call);
        if !call.outcome().is_null() {
            sys::uform_outcome_release(call.outcome());
        }
        (call.release)(call.head);
        Err(failure(status, message))
    }
}

/// Converts a finished call's result struct.
unsafe fn finish<R: Receiver, V: Verb<R>>(head: NonNull<Head>) -> Result<V::Output> {
    let boxed = head.as_ptr().cast::<Boxed<V::Held, V::Raw>>();
    // SAFETY: the call succeeded, so the library published the result struct.
    unsafe { V::finish((*boxed).raw.assume_init_ref()) }
}

/// Drops what a final call held and frees its box.
unsafe fn release<H, R>(head: NonNull<Head>) {
    let boxed = head.as_ptr().cast::<Boxed<H, R>>();
    // SAFETY: the call is final, so the library no longer reads the box, which `submit` initialised.
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
        // SAFETY: the head lives until release; the library wrote `outcome` before the verb returned.
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
        // SAFETY: the outcome is live until this `Deferred` releases it.
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
            // SAFETY: the outcome is live until released below.
            unsafe { sys::uform_outcome_wait(outcome, &mut message) }
        };
        // SAFETY: the call is final, so the slot is ours again.
        let panicked =
            unsafe { HandlerSlot::take_panic(ptr::addr_of_mut!((*call.head.as_ptr()).slot)) };
        let answer = match panicked {
            // SAFETY: the call succeeded.
            None => check(status, message).and_then(|()| unsafe { (call.finish)(call.head) }),
            Some(_) => Err(crate::error::unknown("a progress handler panicked")),
        };
        // SAFETY: the call is final; nothing reads the outcome or the box after this.
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
        // SAFETY: releasing waits until the call is final; then the slot and the box are ours.
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
