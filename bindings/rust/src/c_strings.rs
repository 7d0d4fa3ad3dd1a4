//! Conversions between Rust strings and the C strings of the ABI.
use std::ffi::{c_char, CStr, CString};

use crate::error::{Error, Result};

/// `s` as a C string; `what` names the argument in the error for an interior NUL byte.
pub(crate) fn to_c(what: &str, s: &str) -> Result<CString> {
    CString::new(s).map_err(|e| Error::invalid(format!("{what} {s:?} contains a NUL byte at {}", e.nul_position())))
}

/// A C string the library returned, as `&str` ("" for NULL; the library's strings are UTF-8,
/// others show as "<not UTF-8>").
///
/// # Safety
/// `p` is NULL or a NUL-terminated string valid for `'a`.
pub(crate) unsafe fn from_c<'a>(p: *const c_char) -> &'a str {
    if p.is_null() {
        return "";
    }
    // SAFETY: per the contract.
    unsafe { CStr::from_ptr(p) }.to_str().unwrap_or("<not UTF-8>")
}
