"""Statuses and exceptions. Every failing inlay call raises an InlayError subclass that
carries the status (an inlay_status code) and the message of inlay_last_error()."""
import enum


class Status(enum.IntEnum):
    """inlay_status (inlay.h). Codes a newer library adds come through as plain ints."""
    OK = 0
    INVALID_ARGUMENT = 1
    IO = 2
    BAD_FORMAT = 3
    TRUNCATED = 4
    UNSUPPORTED = 5
    MISSING = 6
    SHAPE_MISMATCH = 7
    OUT_OF_MEMORY = 8
    CANCELLED = 9
    CONTEXT_FULL = 10
    KV_FULL = 11
    BUFFER_TOO_SMALL = 12
    BUSY = 13
    INVALID_TOKEN = 14
    INVALID_UTF8 = 15
    BAD_WEIGHTS = 16
    INTERNAL = 99


class InlayError(Exception):
    """A failed inlay call: `status` (Status, or int for a code this package does not
    know), `status_name` ("INLAY_ERR_IO", ...), `message` (inlay_last_error()), and
    `result` (the partial Result of a generate/chat call that failed after producing
    tokens, e.g. with KV_FULL; else None)."""

    def __init__(self, status, message, status_name=None, result=None):
        self.status = _as_status(status)
        self.status_name = status_name or _default_name(self.status)
        self.message = message
        self.result = result
        super().__init__(message if message else self.status_name)


class InvalidArgumentError(InlayError, ValueError):
    pass


class FileIOError(InlayError):
    pass


class BadFormatError(InlayError):
    pass


class TruncatedError(InlayError):
    pass


class UnsupportedError(InlayError):
    pass


class MissingError(InlayError):
    pass


class ShapeMismatchError(InlayError):
    pass


class OutOfMemoryError(InlayError, MemoryError):
    pass


class CancelledError(InlayError):
    pass


class ContextFullError(InlayError):
    pass


class KvFullError(InlayError):
    pass


class BufferTooSmallError(InlayError):
    pass


class BusyError(InlayError):
    pass


class InvalidTokenError(InlayError, ValueError):
    pass


class InvalidUtf8Error(InlayError, ValueError):
    pass


class BadWeightsError(InlayError):
    """The model computed NaN logits: its weights (or their quantization) are broken."""


class InternalError(InlayError):
    pass


class LibraryNotFoundError(OSError):
    """libinlay could not be found or loaded, or has another ABI major version."""


_CLASSES = {
    Status.INVALID_ARGUMENT: InvalidArgumentError,
    Status.IO: FileIOError,
    Status.BAD_FORMAT: BadFormatError,
    Status.TRUNCATED: TruncatedError,
    Status.UNSUPPORTED: UnsupportedError,
    Status.MISSING: MissingError,
    Status.SHAPE_MISMATCH: ShapeMismatchError,
    Status.OUT_OF_MEMORY: OutOfMemoryError,
    Status.CANCELLED: CancelledError,
    Status.CONTEXT_FULL: ContextFullError,
    Status.KV_FULL: KvFullError,
    Status.BUFFER_TOO_SMALL: BufferTooSmallError,
    Status.BUSY: BusyError,
    Status.INVALID_TOKEN: InvalidTokenError,
    Status.INVALID_UTF8: InvalidUtf8Error,
    Status.BAD_WEIGHTS: BadWeightsError,
    Status.INTERNAL: InternalError,
}


def _as_status(code):
    try:
        return Status(code)
    except ValueError:
        return int(code)


def _default_name(status):
    if isinstance(status, Status):
        return "INLAY_OK" if status == Status.OK else "INLAY_ERR_" + status.name
    return "INLAY_ERR_UNKNOWN"


def error_class(status):
    """The exception class raised for `status` (InlayError for unknown codes)."""
    return _CLASSES.get(_as_status(status), InlayError)


def make_error(status, message, status_name=None, result=None):
    return error_class(status)(status, message, status_name, result)


def invalid_argument(message):
    """An InvalidArgumentError raised by this package itself (before any C call)."""
    return InvalidArgumentError(Status.INVALID_ARGUMENT, message)
