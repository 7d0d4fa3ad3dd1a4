//! [`Error`]: the library's frozen status code and its message (which names the argument and
//! the value), and [`Result`].
use std::fmt;

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

impl ErrorCode {
    /// The code of a raw status number.
    pub fn from_raw(code: i32) -> ErrorCode {
        match code {
            1 => ErrorCode::InvalidArgument,
            2 => ErrorCode::Unsupported,
            3 => ErrorCode::OutOfMemory,
            4 => ErrorCode::Cuda,
            5 => ErrorCode::NotFound,
            6 => ErrorCode::AbiMismatch,
            7 => ErrorCode::Busy,
            8 => ErrorCode::Internal,
            other => ErrorCode::Unknown(other),
        }
    }

    /// The raw status number.
    pub fn as_raw(self) -> i32 {
        match self {
            ErrorCode::InvalidArgument => 1,
            ErrorCode::Unsupported => 2,
            ErrorCode::OutOfMemory => 3,
            ErrorCode::Cuda => 4,
            ErrorCode::NotFound => 5,
            ErrorCode::AbiMismatch => 6,
            ErrorCode::Busy => 7,
            ErrorCode::Internal => 8,
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
