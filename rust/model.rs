//! `Model`: a loaded model, the handle of `model.h`, and the receivers it lends.

use core::ffi::c_void;
use core::fmt;
use core::ptr::NonNull;

use crate::call::{OfModel, Target};
use crate::error::unknown;
use crate::marshal::Handle;
use crate::{sys, DeferredOn, Executor, On, Result};

/// A loaded model: immutable once loaded, and shared freely by any number of threads and executors of its
/// residency at once.
///
/// Load one with [`Model::load_ram`], [`Model::load_vram`], [`Model::load_ram_buffer`] or
/// [`Model::load_vram_buffer`]; run its verbs ([`EncodeVerbs`](crate::EncodeVerbs),
/// [`ModelVerbs`](crate::ModelVerbs)) through `&Model` on the calling thread, through
/// [`on`](Model::on) blocking on an executor, or through [`deferred`](Model::deferred) submitted to one.
/// `Model` carries no type parameter: quantization is the runtime [`Scalar`](crate::Scalar) passed at load.
///
/// Wraps `uform_model_t`. Dropping it waits for the calls reading it (`uform_model_free`).
#[doc(alias = "uform_model_t")]
pub struct Model {
    raw: NonNull<sys::uform_model_s>,
}

// SAFETY: a model is immutable once loaded and the library allows sharing it across threads.
unsafe impl Send for Model {}
// SAFETY: as above.
unsafe impl Sync for Model {}

impl Model {
    /// Wraps a handle the library answered.
    pub(crate) fn from_raw(raw: sys::uform_model_t) -> Result<Self> {
        Ok(Self {
            raw: NonNull::new(raw).ok_or(unknown("the library answered a null model"))?,
        })
    }

    /// A receiver that runs verbs blocking on `executor`, failing [`Status::Contended`](crate::Status::Contended)
    /// while another call holds it.
    pub fn on<'r>(&'r self, executor: &'r Executor) -> On<'r, Model> {
        On {
            target: self,
            executor,
        }
    }

    /// A receiver that submits verbs to `executor` and answers [`Deferred`](crate::Deferred) calls.
    pub fn deferred<'r>(&'r self, executor: &'r Executor) -> DeferredOn<'r, Model> {
        DeferredOn {
            target: self,
            executor,
        }
    }

    /// The C handle (`uform_model_t`), for calling the C ABI directly; it stays owned by this `Model`.
    pub fn as_ptr(&self) -> *mut c_void {
        self.raw.as_ptr().cast()
    }
}

impl Handle for Model {
    type Raw = sys::uform_model_t;
    fn raw(&self) -> sys::uform_model_t {
        self.raw.as_ptr()
    }
}

impl Target for Model {
    type Of = OfModel;
    fn target(&self) -> *mut c_void {
        self.raw.as_ptr().cast()
    }
}

impl Drop for Model {
    /// Waits for the calls reading the model, then frees it.
    #[doc(alias = "uform_model_free")]
    fn drop(&mut self) {
        // SAFETY: the model is live and owned. It answers `contended` only from a progress handler of a call
        // reading it, which cannot drop it: that call borrows it.
        unsafe { sys::uform_model_free(self.raw.as_ptr()) };
    }
}

impl fmt::Debug for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Model")
            .field("description", &self.describe())
            .finish()
    }
}
