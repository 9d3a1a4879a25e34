"""The library's log messages into Python: a process-wide handler (inlay_set_log_sink).

The library may call it from any thread inside an inlay call (the engine's scheduler
thread too), so the handler must be thread-safe. An exception it raises has no caller
to go to: it is printed to stderr, and logging goes on."""
import enum
import sys
import threading
import traceback

from . import _capi
from .library import default_library


class LogLevel(enum.IntEnum):
    """inlay_log_level."""
    DEBUG = 0
    INFO = 1
    WARN = 2
    ERROR = 3
    NONE = 4


_lock = threading.Lock()
# Every callback object ever installed stays alive: a thread may still be running the
# previous one while a new handler replaces it.
_installed = []


def set_log_handler(handler, level=LogLevel.WARN, library=None):
    """handler(level: LogLevel, message: str) receives the messages at `level` and
    above; None restores the library's default (WARN and above to stderr)."""
    lib = library or default_library()
    level = LogLevel(level)

    def call(c_level, message, user):
        try:
            handler(LogLevel(c_level), (message or b"").decode("utf-8", "replace"))
        except BaseException:
            traceback.print_exc(file=sys.stderr)

    with _lock:
        if handler is None:
            lib.inlay_set_log_sink(_capi.log_fn(), level, None)
            return
        c = _capi.log_fn(call)
        _installed.append(c)
        lib.inlay_set_log_sink(c, level, None)
