//! Errors: every failing call returns `Err(Error)` with the library's status and the
//! message inlay_last_error() gave for it.
use std::ffi::CStr;
use std::fmt;

use crate::sys;

/// An `inlay_status` other than `INLAY_OK`. Codes this binding does not know (a newer
/// library may add some, docs/ABI.md) are kept as `Other`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    InvalidArgument,
    Io,
    BadFormat,
    Truncated,
    Unsupported,
    Missing,
    ShapeMismatch,
    OutOfMemory,
    Cancelled,
    ContextFull,
    KvFull,
    BufferTooSmall,
    Busy,
    InvalidToken,
    InvalidUtf8,
    BadWeights,
    Internal,
    Other(i32),
}

impl Status {
    /// The status of a C return code; `None` for `INLAY_OK`.
    pub fn from_code(code: sys::inlay_status) -> Option<Status> {
        Some(match code {
            sys::INLAY_OK => return None,
            sys::INLAY_ERR_INVALID_ARGUMENT => Status::InvalidArgument,
            sys::INLAY_ERR_IO => Status::Io,
            sys::INLAY_ERR_BAD_FORMAT => Status::BadFormat,
            sys::INLAY_ERR_TRUNCATED => Status::Truncated,
            sys::INLAY_ERR_UNSUPPORTED => Status::Unsupported,
            sys::INLAY_ERR_MISSING => Status::Missing,
            sys::INLAY_ERR_SHAPE_MISMATCH => Status::ShapeMismatch,
            sys::INLAY_ERR_OUT_OF_MEMORY => Status::OutOfMemory,
            sys::INLAY_ERR_CANCELLED => Status::Cancelled,
            sys::INLAY_ERR_CONTEXT_FULL => Status::ContextFull,
            sys::INLAY_ERR_KV_FULL => Status::KvFull,
            sys::INLAY_ERR_BUFFER_TOO_SMALL => Status::BufferTooSmall,
            sys::INLAY_ERR_BUSY => Status::Busy,
            sys::INLAY_ERR_INVALID_TOKEN => Status::InvalidToken,
            sys::INLAY_ERR_INVALID_UTF8 => Status::InvalidUtf8,
            sys::INLAY_ERR_BAD_WEIGHTS => Status::BadWeights,
            sys::INLAY_ERR_INTERNAL => Status::Internal,
            other => Status::Other(other),
        })
    }

    /// The C code (`INLAY_ERR_*`).
    pub fn code(self) -> sys::inlay_status {
        match self {
            Status::InvalidArgument => sys::INLAY_ERR_INVALID_ARGUMENT,
            Status::Io => sys::INLAY_ERR_IO,
            Status::BadFormat => sys::INLAY_ERR_BAD_FORMAT,
            Status::Truncated => sys::INLAY_ERR_TRUNCATED,
            Status::Unsupported => sys::INLAY_ERR_UNSUPPORTED,
            Status::Missing => sys::INLAY_ERR_MISSING,
            Status::ShapeMismatch => sys::INLAY_ERR_SHAPE_MISMATCH,
            Status::OutOfMemory => sys::INLAY_ERR_OUT_OF_MEMORY,
            Status::Cancelled => sys::INLAY_ERR_CANCELLED,
            Status::ContextFull => sys::INLAY_ERR_CONTEXT_FULL,
            Status::KvFull => sys::INLAY_ERR_KV_FULL,
            Status::BufferTooSmall => sys::INLAY_ERR_BUFFER_TOO_SMALL,
            Status::Busy => sys::INLAY_ERR_BUSY,
            Status::InvalidToken => sys::INLAY_ERR_INVALID_TOKEN,
            Status::InvalidUtf8 => sys::INLAY_ERR_INVALID_UTF8,
            Status::BadWeights => sys::INLAY_ERR_BAD_WEIGHTS,
            Status::Internal => sys::INLAY_ERR_INTERNAL,
            Status::Other(code) => code,
        }
    }

    /// "INLAY_ERR_IO", ... from the library (inlay_status_name); "INLAY_ERR_UNKNOWN" for
    /// codes it does not know.
    pub fn name(self) -> &'static str {
        // SAFETY: inlay_status_name accepts any value and returns a static string.
        let name = unsafe { CStr::from_ptr(sys::inlay_status_name(self.code())) };
        name.to_str().unwrap_or("INLAY_ERR_UNKNOWN")
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A failed call: its status, and the library's message, which starts with the status
/// name ("INLAY_ERR_IO: cannot open ...").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    status: Status,
    message: String,
}

impl Error {
    /// The error of the call that just returned `code` on this thread. It must be made
    /// before any other inlay call on this thread: the message is only valid until then.
    pub(crate) fn last(status: Status) -> Error {
        // SAFETY: inlay_last_error returns a NUL-terminated string (possibly "") that
        // stays valid until the next inlay call on this thread; it is copied at once.
        let raw = unsafe { CStr::from_ptr(sys::inlay_last_error()) };
        let message = raw.to_string_lossy().into_owned();
        if message.is_empty() {
            return Error { status, message: status.name().to_string() };
        }
        Error { status, message }
    }

    /// An error found by the wrapper before calling the library (a NUL byte inside a
    /// string, a size that does not fit), in the library's message style.
    pub(crate) fn new(status: Status, what: &str) -> Error {
        Error { status, message: format!("{}: {}", status.name(), what) }
    }

    pub fn status(&self) -> Status {
        self.status
    }

    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// `Result<T, inlay::Error>`.
pub type Result<T> = std::result::Result<T, Error>;

/// `Ok(())` for INLAY_OK, else the error of this call.
pub(crate) fn check(code: sys::inlay_status) -> Result<()> {
    match Status::from_code(code) {
        None => Ok(()),
        Some(status) => Err(Error::last(status)),
    }
}
