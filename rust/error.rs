//! `Error` and `Result`: a failure's status and its static message, so nothing allocates on failure.

use core::ffi::c_char;
use core::fmt;

use crate::sys;
use crate::Status;

/// A failed call: the [`Status`] the library answered and its static message.
///
/// Nothing allocates on the failure path: the message is a static string the C library owns (written
/// through the `char const **message` out-pointer every fallible C function takes), or one of the
/// binding's own when it refuses an argument before the call crosses the boundary, in which case the
/// status is the one the library would have used. An `Error` never carries [`Status::Deferred`], which
/// only [`Deferred::status`](crate::Deferred::status) reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Error {
    /// What went wrong.
    pub status: Status,
    /// A static, human-readable explanation.
    pub message: &'static str,
}

/// The result of every fallible call of the crate.
pub type Result<T, E = Error> = core::result::Result<T, E>;

impl Error {
    /// An error with the given status and message.
    pub const fn new(status: Status, message: &'static str) -> Self {
        Self { status, message }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status, self.message)
    }
}

impl std::error::Error for Error {}

/// Turns a C status and message into a `Result`: zero is success. `message` is `NULL`, what the library wrote
/// through a `message` out-pointer, or a C string literal of the binding's: static strings all.
pub(crate) fn check(status: sys::uform_status_t, message: *const c_char) -> Result<()> {
    if status == sys::uform_status_t::uform_status_ok_k {
        return Ok(());
    }
    Err(failure(status, message))
}

/// The `Error` for a nonzero C status and its message, which is static as [`check`]'s is.
pub(crate) fn failure(status: sys::uform_status_t, message: *const c_char) -> Error {
    let Some(known) = Status::from_raw(status) else {
        return Error::new(
            Status::Internal,
            "the library answered a status this binding does not know",
        );
    };
    let status = if known == Status::Deferred {
        Status::Internal
    } else {
        known
    };
    // SAFETY: every caller passes `NULL`, a message the library wrote through a `message` out-pointer (static,
    // never freed nor overwritten: types.h) or a C string literal of the binding's.
    let message = unsafe { crate::marshal::static_str(message) }.unwrap_or_else(|| status.name());
    Error { status, message }
}

/// The error for a value the library answered that this binding's enums do not know.
pub(crate) const fn unknown(what: &'static str) -> Error {
    Error::new(Status::Internal, what)
}

/// The error for an argument the binding refuses before calling the library.
pub(crate) const fn invalid(message: &'static str) -> Error {
    Error::new(Status::InvalidArgument, message)
}

/// The error for sizes that disagree, found before calling the library.
pub(crate) const fn mismatch(message: &'static str) -> Error {
    Error::new(Status::ShapeMismatch, message)
}
