//! `Arena`: the memory every output whose length only the call knows lands in.

use core::ffi::c_void;
use core::fmt;
use core::ptr;
use core::sync::atomic::{AtomicPtr, Ordering};

use crate::error::{check, unknown};
use crate::marshal::Handle;
use crate::{sys, Executor, Result};

/// The memory outputs land in, rewound by each call, so a steady loop allocates once.
///
/// Every verb borrows its arena as `&mut Arena` and answers views ([`Rows`](crate::Rows),
/// [`RowsTape`](crate::RowsTape), [`Tape`](crate::Tape)) borrowing it in turn, so the borrow checker refuses a
/// stale view at compile time. To keep a result past the next call, pass that call another arena; an arena
/// serves one call at a time, so each deferred call needs its own, and a call naming an arena that serves
/// another call finishes with [`Status::Contended`](crate::Status::Contended). An arena allocates only when a
/// call writes into it, growing to a high-water mark.
///
/// An arena made by a VRAM executor holds device memory, which the views' host accessors refuse with
/// [`Status::Device`](crate::Status::Device), while [`Rows::as_ptr`](crate::Rows::as_ptr) still hands the
/// rows to another library; it keeps its executor alive until it is dropped.
///
/// Wraps `uform_arena_t`. Dropping it waits for the calls writing into it (`uform_arena_free`), so even a
/// leaked [`Deferred`](crate::Deferred) leaves it safe.
#[doc(alias = "uform_arena_t")]
pub struct Arena {
    /// The C handle; null until the first use of an arena made by [`Arena::new`].
    raw: AtomicPtr<sys::uform_arena_s>,
}

// SAFETY: the library's arenas may be used and freed from any thread; calls through `&mut` serialize use.
unsafe impl Send for Arena {}
// SAFETY: `&Arena` only reads its residency and capacity, which the library synchronizes.
unsafe impl Sync for Arena {}

impl Arena {
    fn init(executor: sys::uform_executor_t) -> Result<sys::uform_arena_t> {
        let mut raw = ptr::null_mut();
        let mut message = ptr::null();
        // SAFETY: the executor is live or `NULL`, and the library writes only through `raw` and `message`, locals
        // that outlive the call.
        let status = unsafe { sys::uform_arena_init(executor, &mut raw, &mut message) };
        check(status, message)?;
        if raw.is_null() {
            return Err(unknown("the library answered a null arena"));
        }
        Ok(raw)
    }

    /// Makes an arena of host pages for calls on the calling thread. It allocates nothing until a call uses it:
    /// its handle then, and its pages as that call writes outputs.
    ///
    /// Calls `uform_arena_init` with a null executor at first use; should even that handle's few hundred bytes
    /// be refused, the process aborts, as Rust's own allocations do.
    #[doc(alias = "uform_arena_init")]
    pub const fn new() -> Self {
        Self {
            raw: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Makes an arena where `executor` computes, decided once: host pages for a RAM or local executor, device
    /// memory for a VRAM one.
    ///
    /// Calls `uform_arena_init`.
    #[doc(alias = "uform_arena_init")]
    pub fn new_in(executor: &Executor) -> Result<Self> {
        Ok(Self {
            raw: AtomicPtr::new(Self::init(executor.raw())?),
        })
    }

    /// The C handle (`uform_arena_t`), for calling the C ABI directly; it stays owned by this `Arena`.
    pub fn as_ptr(&self) -> *mut c_void {
        self.raw().cast()
    }
}

impl Default for Arena {
    /// An arena of host pages for calls on the calling thread, as [`Arena::new`].
    fn default() -> Self {
        Self::new()
    }
}

impl Handle for Arena {
    type Raw = sys::uform_arena_t;
    fn raw(&self) -> sys::uform_arena_t {
        let raw = self.raw.load(Ordering::Acquire);
        if !raw.is_null() {
            return raw;
        }
        let Ok(made) = Self::init(ptr::null_mut()) else {
            std::process::abort(); // a handle of a few hundred bytes refused: as Rust's own allocations do
        };
        match self
            .raw
            .compare_exchange(ptr::null_mut(), made, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => made,
            Err(first) => {
                // SAFETY: `made` is ours alone and serves no call; another thread's first use won the race.
                unsafe { sys::uform_arena_free(made) };
                first
            }
        }
    }
}

impl Drop for Arena {
    /// Waits for the calls writing into the arena, then frees it.
    #[doc(alias = "uform_arena_free")]
    fn drop(&mut self) {
        let raw = *self.raw.get_mut();
        if raw.is_null() {
            return;
        }
        // SAFETY: the arena is live and owned; freeing waits for its calls. It answers `contended` only from a
        // progress handler of a call writing into it, which cannot hold this arena: that call borrows it.
        unsafe { sys::uform_arena_free(raw) };
    }
}

impl fmt::Debug for Arena {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Arena")
            .field("residency", &self.residency())
            .field("capacity", &self.capacity())
            .finish()
    }
}
