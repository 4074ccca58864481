//! Marshalling between the safe types and the C ABI's raw ones, shared by the hand-written and generated
//! layers: handles, slices, paths and strings as the pointers and lengths C takes, and C strings back.

use core::ffi::{c_char, CStr};
use core::ptr;
use std::path::Path;

use crate::error::invalid;
use crate::Result;

/// A static, NUL-terminated C string as `&'static str`; `None` for `NULL` or text that is not UTF-8.
///
/// # Safety
/// `text` is `NULL` or a NUL-terminated string that stays valid and unchanged for the rest of the process, as
/// the library's names and messages are (types.h).
pub(crate) unsafe fn static_str(text: *const c_char) -> Option<&'static str> {
    if text.is_null() {
        return None;
    }
    // SAFETY: `text` is not `NULL`, so by the caller's promise it is NUL-terminated and lives for `'static`.
    unsafe { CStr::from_ptr(text) }.to_str().ok()
}

/// A Rust handle wrapping one of the C ABI's opaque handles.
pub(crate) trait Handle {
    /// The C handle type, an opaque pointer.
    type Raw: Copy;
    /// The C handle.
    fn raw(&self) -> Self::Raw;
}

/// The C handle of an optional borrowed handle, `NULL` for `None`.
pub(crate) fn handle<H: Handle<Raw = *mut T>, T>(handle: Option<&H>) -> *mut T {
    handle.map_or(ptr::null_mut(), Handle::raw)
}

/// The C handle of an optional mutably borrowed handle, `NULL` for `None`.
pub(crate) fn handle_mut<H: Handle<Raw = *mut T>, T>(handle: Option<&mut H>) -> *mut T {
    handle.map_or(ptr::null_mut(), |handle| handle.raw())
}

/// The first element of a slice, or `NULL` when it is empty.
pub(crate) fn slice<T>(slice: &[T]) -> *const T {
    if slice.is_empty() {
        ptr::null()
    } else {
        slice.as_ptr()
    }
}

/// A mutable borrow as the C struct it mirrors field by field, or `NULL` for `None`.
pub(crate) fn out<T, C>(value: Option<&mut T>) -> *mut C {
    value.map_or(ptr::null_mut(), |value| (value as *mut T).cast())
}

/// A path as the OS's bytes: on Unix any bytes, elsewhere its UTF-8 (a path that is not UTF-8 there is
/// `Status::InvalidArgument`). `NULL` and zero for an empty path.
pub(crate) fn path_bytes(path: &Path) -> Result<&[u8]> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        Ok(path.as_os_str().as_bytes())
    }
    #[cfg(not(unix))]
    {
        path.to_str().map(str::as_bytes).ok_or(invalid(
            "a path is not valid UTF-8, which this platform needs",
        ))
    }
}

/// A path as the pointer and length a C argument struct takes.
pub(crate) fn path(path: &Path) -> Result<(*const c_char, usize)> {
    let bytes = path_bytes(path)?;
    Ok((slice(bytes).cast(), bytes.len()))
}

/// A string as the pointer and length a C argument struct takes.
pub(crate) fn str(text: &str) -> (*const c_char, usize) {
    (slice(text.as_bytes()).cast(), text.len())
}

/// A NUL-terminated C character array as a `String`, lossily for bytes that are not UTF-8.
pub(crate) fn string(chars: &[c_char]) -> String {
    let bytes: Vec<u8> = chars
        .iter()
        .map(|&c| c as u8)
        .take_while(|&b| b != 0)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Parses `text` through a C `uform_<enum>_parse` function, handing it a NUL-terminated copy.
pub(crate) fn parse(
    text: &str,
    parse: impl FnOnce(*const c_char) -> crate::sys::uform_status_t,
) -> Result<()> {
    if text.as_bytes().contains(&0) {
        return Err(invalid("a name holds a NUL byte"));
    }
    let mut buffer = [0u8; 64];
    let status = if text.len() < buffer.len() {
        buffer[..text.len()].copy_from_slice(text.as_bytes());
        parse(buffer.as_ptr().cast())
    } else {
        let owned = std::ffi::CString::new(text).map_err(|_| invalid("a name holds a NUL byte"))?;
        parse(owned.as_ptr())
    };
    let unknown = c"the name is not one the library's table knows";
    crate::error::check(status, unknown.as_ptr())
}
