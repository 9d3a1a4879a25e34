"""inlay for Python: the C ABI of libinlay (include/inlay/inlay.h) through ctypes.

    import inlay
    with inlay.Model("models/default-q8_0.gguf") as model, model.session() as session:
        for piece in session.stream("You will", max_tokens=32):
            print(piece, end="", flush=True)

The library is found through inlay.load_library(path), the INLAY_LIBRARY environment
variable, or the system's search for libinlay.so.1 (see inlay.library)."""
from .chat import Thinking
from .errors import (BadFormatError, BadWeightsError, BufferTooSmallError, BusyError, CancelledError, ContextFullError,
                     FileIOError, InlayError, InternalError, InvalidArgumentError, InvalidTokenError, InvalidUtf8Error,
                     KvFullError, LibraryNotFoundError, MissingError, OutOfMemoryError, ShapeMismatchError, Status, TruncatedError,
                     UnsupportedError, error_class)
from .library import Library, default_library, load_library
from .log import LogLevel, set_log_handler
from .model import Device, Model, ModelInfo
from .vocab import Vocab
from .result import Result, StopReason, Timings
from .session import Session
from .stream import TokenStream

__version__ = "0.1.0"


def library_version():
    """inlay_version() of the library in use, e.g. "0.1.0"."""
    return default_library().version


__all__ = [
    "Model", "ModelInfo", "Vocab", "Device", "Session", "TokenStream", "Result", "StopReason", "Timings", "Thinking",
    "LogLevel", "set_log_handler", "Library", "load_library", "default_library", "library_version", "Status", "error_class",
    "InlayError", "InvalidArgumentError", "FileIOError", "BadFormatError", "TruncatedError", "UnsupportedError",
    "MissingError", "ShapeMismatchError", "OutOfMemoryError", "CancelledError", "ContextFullError", "KvFullError",
    "BufferTooSmallError", "BusyError", "InvalidTokenError", "InvalidUtf8Error", "BadWeightsError", "InternalError",
    "LibraryNotFoundError",
]
