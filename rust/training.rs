//! `Mesh` and `Trainer`: the handles of `train.h`, a training run's hosts joined and the model it trains, and the
//! receivers a trainer lends.

use core::ffi::c_void;
use core::fmt;
use core::marker::PhantomData;
use core::ptr::NonNull;

use crate::call::{OfTrainer, Target};
use crate::error::unknown;
use crate::marshal::Handle;
use crate::{sys, DeferredOn, Executor, On, Result};

/// The devices of every host of a training run, joined for collectives; made by [`Mesh::bootstrap`].
///
/// A [`Trainer`] borrows its mesh, so the mesh outlives every trainer made over it.
///
/// Wraps `uform_mesh_t`; dropping it calls `uform_mesh_free`.
#[doc(alias = "uform_mesh_t")]
pub struct Mesh {
    raw: NonNull<sys::uform_mesh_s>,
}

// SAFETY: a mesh is only read by the trainers made over it, which the library synchronizes.
unsafe impl Send for Mesh {}
// SAFETY: as above.
unsafe impl Sync for Mesh {}

impl Mesh {
    /// Wraps a handle the library answered.
    pub(crate) fn from_raw(raw: sys::uform_mesh_t) -> Result<Self> {
        Ok(Self {
            raw: NonNull::new(raw).ok_or(unknown("the library answered a null mesh"))?,
        })
    }

    /// The C handle (`uform_mesh_t`), for calling the C ABI directly; it stays owned by this `Mesh`.
    pub fn as_ptr(&self) -> *mut c_void {
        self.raw.as_ptr().cast()
    }
}

impl Handle for Mesh {
    type Raw = sys::uform_mesh_t;
    fn raw(&self) -> sys::uform_mesh_t {
        self.raw.as_ptr()
    }
}

impl Drop for Mesh {
    /// Frees the mesh; the borrow checker has already ended every trainer made over it.
    #[doc(alias = "uform_mesh_free")]
    fn drop(&mut self) {
        // SAFETY: the mesh is live and owned, and no trainer borrows it any more.
        unsafe { sys::uform_mesh_free(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for Mesh {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mesh")
            .field("description", &self.describe())
            .finish()
    }
}

/// A model in training on a VRAM executor's devices, made by [`Trainer::init_vram`], borrowing the
/// [`Mesh`] it trains across for `'m`.
///
/// Its verbs ([`TrainVerbs`](crate::TrainVerbs)) run through [`on`](Trainer::on), blocking on an executor,
/// or [`deferred`](Trainer::deferred), submitted to one.
///
/// Wraps `uform_trainer_t`; dropping it waits for its calls (`uform_trainer_free`).
#[doc(alias = "uform_trainer_t")]
pub struct Trainer<'m> {
    raw: NonNull<sys::uform_trainer_s>,
    _mesh: PhantomData<&'m crate::Mesh>,
}

// SAFETY: a trainer may move between threads; it is not `Sync`, so its steps never overlap through `&`.
unsafe impl Send for Trainer<'_> {}

impl<'m> Trainer<'m> {
    /// Wraps a handle the library answered.
    pub(crate) fn from_raw(raw: sys::uform_trainer_t) -> Result<Self> {
        let raw = NonNull::new(raw).ok_or(unknown("the library answered a null trainer"))?;
        Ok(Self {
            raw,
            _mesh: PhantomData,
        })
    }

    /// A receiver that runs steps blocking on `executor`.
    pub fn on<'r>(&'r self, executor: &'r Executor) -> On<'r, Trainer<'m>> {
        On {
            target: self,
            executor,
        }
    }

    /// A receiver that submits steps to `executor` and answers [`Deferred`](crate::Deferred) calls.
    pub fn deferred<'r>(&'r self, executor: &'r Executor) -> DeferredOn<'r, Trainer<'m>> {
        DeferredOn {
            target: self,
            executor,
        }
    }

    /// The C handle (`uform_trainer_t`), for calling the C ABI directly; it stays owned by this `Trainer`.
    pub fn as_ptr(&self) -> *mut c_void {
        self.raw.as_ptr().cast()
    }
}

impl Handle for Trainer<'_> {
    type Raw = sys::uform_trainer_t;
    fn raw(&self) -> sys::uform_trainer_t {
        self.raw.as_ptr()
    }
}

impl Target for Trainer<'_> {
    type Of = OfTrainer;
    fn target(&self) -> *mut c_void {
        self.raw.as_ptr().cast()
    }
}

impl Drop for Trainer<'_> {
    /// Waits for the trainer's calls, then frees it.
    #[doc(alias = "uform_trainer_free")]
    fn drop(&mut self) {
        // SAFETY: the trainer is live and owned. It answers `contended` only from a progress handler of one of its
        // calls, which cannot drop it: that call borrows it.
        unsafe { sys::uform_trainer_free(self.raw.as_ptr()) };
    }
}

impl fmt::Debug for Trainer<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Trainer").finish_non_exhaustive()
    }
}
