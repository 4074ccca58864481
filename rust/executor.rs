//! `Executor`: the threads or streams every call runs on, with their scratch memory.

use core::cell::Cell;
use core::ffi::c_void;
use core::fmt;
use core::marker::PhantomData;
use core::ptr::{self, NonNull};

use crate::error::{check, unknown};
use crate::marshal::{self, Handle};
use crate::{sys, CPUClass, GPUClass, Mood, Result};

/// The host threads or device streams calls run on, the activation scratch, and the pinned buffers staging
/// passes through, grown to a high-water mark. One executor serves any number of models of its residency.
///
/// An executor runs one call at a time: a call finding another one holding it finishes at once with
/// [`Status::Contended`](crate::Status::Contended). So two threads that genuinely overlap take one apiece: an
/// executor is `Send` but not `Sync`, while models stay freely shared.
///
/// Wraps `uform_executor_t`. Dropping it drains it (`uform_executor_free`), unless a VRAM arena it made
/// still holds it, which then does so on its own drop.
#[doc(alias = "uform_executor_t")]
pub struct Executor {
    raw: NonNull<sys::uform_executor_s>,
    _not_sync: PhantomData<Cell<()>>,
}

// SAFETY: the library's executors may be used and freed from any thread.
unsafe impl Send for Executor {}

fn cpu_class(class: Option<CPUClass>) -> sys::uform_cpu_class_t {
    class.unwrap_or(CPUClass::Auto).to_raw()
}

impl Executor {
    fn from_status(
        status: sys::uform_status_t,
        raw: sys::uform_executor_t,
        message: *const core::ffi::c_char,
    ) -> Result<Self> {
        check(status, message)?;
        let raw = NonNull::new(raw).ok_or(unknown("the library answered a null executor"))?;
        Ok(Self {
            raw,
            _not_sync: PhantomData,
        })
    }

    /// Makes an executor of host threads for the RAM residency.
    ///
    /// - `numa_nodes`: NUMA nodes to interleave the threads across; empty takes the process's.
    /// - `cpu_class`: the [`CPUClass`] to dispatch as; `None` derives the hardware's own, and a class the
    ///   hardware lacks answers [`Status::Unsupported`](crate::Status::Unsupported).
    /// - `threads`: threads to own, the caller's excluded; zero takes 7/8 of the cores (at least one).
    ///
    /// Calls `uform_executor_init_ram`.
    #[doc(alias = "uform_executor_init_ram")]
    pub fn for_ram(
        numa_nodes: &[usize],
        cpu_class: Option<CPUClass>,
        threads: usize,
    ) -> Result<Self> {
        let mut executor = ptr::null_mut();
        let mut message = ptr::null();
        // SAFETY: the slice and the out-pointers are valid for the call.
        let status = unsafe {
            sys::uform_executor_init_ram(
                marshal::slice(numa_nodes),
                numa_nodes.len(),
                self::cpu_class(cpu_class),
                threads,
                &mut executor,
                &mut message,
            )
        };
        Self::from_status(status, executor, message)
    }

    /// Makes an executor of device streams for the VRAM residency, one stream per device.
    ///
    /// - `devices`: device ordinals, positions in [`gpu_devices`](crate::gpu_devices)' answer; at least one.
    /// - `gpu_class`: the [`GPUClass`] to dispatch as; `None` derives it from the devices.
    /// - `streams`: borrowed streams (`cudaStream_t` or `hipStream_t`), one per device, or empty to own new
    ///   ones; borrowing answers [`Status::Unsupported`](crate::Status::Unsupported) until it is designed.
    /// - `memory_pool`: a borrowed device memory pool (`cudaMemPool_t`), or `None`; likewise unsupported.
    /// - `scratch_bytes`: activation scratch to reserve per device up front, or empty to grow it on demand.
    /// - `pinned_bytes`: pinned host staging to reserve up front; zero grows it on demand.
    ///
    /// Builds without a GPU residency answer [`Status::Unsupported`](crate::Status::Unsupported).
    ///
    /// # Safety
    /// The streams and the memory pool, if any, must outlive the executor.
    ///
    /// Calls `uform_executor_init_vram`.
    #[doc(alias = "uform_executor_init_vram")]
    pub unsafe fn for_vram(
        devices: &[usize],
        gpu_class: Option<GPUClass>,
        streams: &[*mut c_void],
        memory_pool: Option<NonNull<c_void>>,
        scratch_bytes: &[usize],
        pinned_bytes: usize,
    ) -> Result<Self> {
        let mut executor = ptr::null_mut();
        let mut message = ptr::null();
        // SAFETY: the slices and the out-pointers are valid for the call; the caller vouches for the streams.
        let status = unsafe {
            sys::uform_executor_init_vram(
                marshal::slice(devices),
                devices.len(),
                gpu_class.unwrap_or(GPUClass::Auto).to_raw(),
                marshal::slice(streams),
                streams.len(),
                memory_pool.map_or(ptr::null_mut(), NonNull::as_ptr),
                marshal::slice(scratch_bytes),
                scratch_bytes.len(),
                pinned_bytes,
                &mut executor,
                &mut message,
            )
        };
        Self::from_status(status, executor, message)
    }

    /// Makes an executor over a borrowed ForkUnion pool (`fu_pool_t *`), using `threads` of its threads (zero
    /// takes all) across `numa_nodes` (empty for all), dispatching as `cpu_class` (`None`: the hardware's own).
    ///
    /// Mirrors the C verb, which answers [`Status::Unsupported`](crate::Status::Unsupported) until borrowing
    /// pools is designed.
    ///
    /// # Safety
    /// `pool` must point to a live ForkUnion pool that outlives the executor.
    ///
    /// Calls `uform_executor_init_pool`.
    #[doc(alias = "uform_executor_init_pool")]
    pub unsafe fn on_pool(
        numa_nodes: &[usize],
        cpu_class: Option<CPUClass>,
        pool: *mut c_void,
        threads: usize,
    ) -> Result<Self> {
        let mut executor = ptr::null_mut();
        let mut message = ptr::null();
        // SAFETY: the slice and the out-pointers are valid for the call; the caller vouches for the pool.
        let status = unsafe {
            sys::uform_executor_init_pool(
                marshal::slice(numa_nodes),
                numa_nodes.len(),
                self::cpu_class(cpu_class),
                pool,
                threads,
                &mut executor,
                &mut message,
            )
        };
        Self::from_status(status, executor, message)
    }

    /// Makes an executor that owns no threads and runs calls on the calling thread.
    ///
    /// A deferred call submitted to it is held until its `wait`, the executor's next
    /// [`drain`](Executor::drain) or blocking call, or the drop of the executor, model or arena it names,
    /// whichever comes first; its status alone never runs it.
    ///
    /// Calls `uform_executor_init_local`.
    #[doc(alias = "uform_executor_init_local")]
    pub fn local() -> Result<Self> {
        let mut executor = ptr::null_mut();
        let mut message = ptr::null();
        // SAFETY: the out-pointers are valid for the call.
        let status = unsafe { sys::uform_executor_init_local(&mut executor, &mut message) };
        Self::from_status(status, executor, message)
    }

    /// Waits until no call holds the executor, running held deferred calls first, then idles in `mood`.
    /// Answers the failure of a held deferred call it ran, if any, which its outcome reports too.
    ///
    /// Calls `uform_executor_drain`.
    #[doc(alias = "uform_executor_drain")]
    pub fn drain(&self, mood: Mood) -> Result<()> {
        let mut message = ptr::null();
        // SAFETY: the executor is live for this borrow, and `message` is a local.
        let status =
            unsafe { sys::uform_executor_drain(self.raw.as_ptr(), mood.to_raw(), &mut message) };
        check(status, message)
    }

    /// The C handle (`uform_executor_t`), for calling the C ABI directly; it stays owned by this `Executor`.
    pub fn as_ptr(&self) -> *mut c_void {
        self.raw.as_ptr().cast()
    }
}

impl Default for Executor {
    /// An executor that owns nothing and runs on the calling thread, as [`Executor::local`] makes.
    ///
    /// # Panics
    /// When the library cannot allocate the executor's handle.
    #[doc(alias = "uform_executor_init_local")]
    fn default() -> Self {
        Self::local()
            .unwrap_or_else(|error| panic!("uform: making a local executor failed: {error}"))
    }
}

impl Handle for Executor {
    type Raw = sys::uform_executor_t;
    fn raw(&self) -> sys::uform_executor_t {
        self.raw.as_ptr()
    }
}

impl Drop for Executor {
    /// Drains and frees the executor, unless a VRAM arena it made still holds it.
    #[doc(alias = "uform_executor_free")]
    fn drop(&mut self) {
        // SAFETY: the executor is live and owned. It answers `contended` only from a progress handler of a call
        // holding it, which cannot drop it: that call borrows it.
        unsafe { sys::uform_executor_free(self.raw.as_ptr()) };
    }
}

impl fmt::Debug for Executor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Executor")
            .field("residency", &self.residency())
            .field("width", &self.width())
            .finish()
    }
}
