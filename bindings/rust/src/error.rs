//! [`Error`]: the library's frozen status code and its message (which names the argument and
//! the value), and [`Result`].
use std::fmt;

use crate::sys;

/// The status code of an error, as attn_c.h numbers it (`attn_status_code_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// `ATTN_ERR_INVALID_ARGUMENT`: an argument, field or tensor is malformed.
    InvalidArgument,
    /// `ATTN_ERR_UNSUPPORTED`: valid, but not supported here.
    Unsupported,
    /// `ATTN_ERR_OUT_OF_MEMORY`.
    OutOfMemory,
    /// `ATTN_ERR_CUDA`: the CUDA runtime reported an error.
    Cuda,
    /// `ATTN_ERR_NOT_FOUND`: no backend, field, index, library or symbol of that name.
    NotFound,
    /// `ATTN_ERR_ABI_MISMATCH`: a version or plugin ABI does not match.
    AbiMismatch,
    /// `ATTN_ERR_BUSY`: in use by another thread, or still in use.
    Busy,
    /// `ATTN_ERR_INTERNAL`: a bug in libattn or a plugin.
    Internal,
    /// A number attn_c.h does not define (a newer library's code).
    Unknown(i32),
}

// The header's numbers (attn_status_code_t), from the generated sys layer.
const INVALID_ARGUMENT: i32 = sys::attn_status_code::ATTN_ERR_INVALID_ARGUMENT as i32;
const UNSUPPORTED: i32 = sys::attn_status_code::ATTN_ERR_UNSUPPORTED as i32;
const OUT_OF_MEMORY: i32 = sys::attn_status_code::ATTN_ERR_OUT_OF_MEMORY as i32;
const CUDA: i32 = sys::attn_status_code::ATTN_ERR_CUDA as i32;
const NOT_FOUND: i32 = sys::attn_status_code::ATTN_ERR_NOT_FOUND as i32;
const ABI_MISMATCH: i32 = sys::attn_status_code::ATTN_ERR_ABI_MISMATCH as i32;
const BUSY: i32 = sys::attn_status_code::ATTN_ERR_BUSY as i32;
const INTERNAL: i32 = sys::attn_status_code::ATTN_ERR_INTERNAL as i32;

impl ErrorCode {
    /// The code of a raw status number.
    pub fn from_raw(code: i32) -> ErrorCode {
        match code {
            INVALID_ARGUMENT => ErrorCode::InvalidArgument,
            UNSUPPORTED => ErrorCode::Unsupported,
            OUT_OF_MEMORY => ErrorCode::OutOfMemory,
            CUDA => ErrorCode::Cuda,
            NOT_FOUND => ErrorCode::NotFound,
            ABI_MISMATCH => ErrorCode::AbiMismatch,
            BUSY => ErrorCode::Busy,
            INTERNAL => ErrorCode::Internal,
            other => ErrorCode::Unknown(other),
        }
    }

    /// The raw status number.
    pub fn as_raw(self) -> i32 {
        match self {
            ErrorCode::InvalidArgument => INVALID_ARGUMENT,
            ErrorCode::Unsupported => UNSUPPORTED,
            ErrorCode::OutOfMemory => OUT_OF_MEMORY,
            ErrorCode::Cuda => CUDA,
            ErrorCode::NotFound => NOT_FOUND,
            ErrorCode::AbiMismatch => ABI_MISMATCH,
            ErrorCode::Busy => BUSY,
            ErrorCode::Internal => INTERNAL,
            ErrorCode::Unknown(other) => other,
        }
    }

    /// The same text as the library's `attn_status_string`.
    pub fn description(self) -> &'static str {
        match self {
            ErrorCode::InvalidArgument => "invalid argument",
            ErrorCode::Unsupported => "unsupported",
            ErrorCode::OutOfMemory => "out of memory",
            ErrorCode::Cuda => "CUDA error",
            ErrorCode::NotFound => "not found",
            ErrorCode::AbiMismatch => "ABI mismatch",
            ErrorCode::Busy => "busy",
            ErrorCode::Internal => "internal error",
            ErrorCode::Unknown(_) => "unknown status",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.description())
    }
}

/// An error from libattn (or from this binding, with the same codes: a library or symbol that
/// cannot be loaded is [`ErrorCode::NotFound`], an argument the binding refuses before the call
/// is [`ErrorCode::InvalidArgument`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// The status code.
    pub code: ErrorCode,
    /// The message; the library's names the argument and the value.
    pub message: String,
}

impl Error {
    /// An error with this code and message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Error {
        Error { code, message: message.into() }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Error {
        Error::new(ErrorCode::InvalidArgument, message)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {}", self.code, self.message)
    }
}

impl std::error::Error for Error {}

/// `std::result::Result` with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
