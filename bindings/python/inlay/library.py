"""Finding and loading libinlay, and calling it.

The library is found, in this order, through: the path given to load_library(), the
INLAY_LIBRARY environment variable, the dynamic loader's own search for the SONAME
libinlay.so.1 (LD_LIBRARY_PATH, the ld.so cache, the system directories), and
ctypes.util.find_library("inlay").
"""
import ctypes
import ctypes.util
import os
import sys
import threading

from . import _capi
from .errors import LibraryNotFoundError, Status, make_error

SONAME = "libinlay.so.%d" % _capi.ABI_VERSION if sys.platform.startswith("linux") else None


class Library:
    """One loaded libinlay with every function of _capi.FUNCTIONS declared on it."""

    def __init__(self, path):
        try:
            self._dll = ctypes.CDLL(path)
        except OSError as e:
            raise LibraryNotFoundError("cannot load libinlay from %r: %s" % (path, e)) from None
        self.path = path
        for name, (restype, argtypes) in _capi.FUNCTIONS.items():
            try:
                fn = getattr(self._dll, name)
            except AttributeError:
                raise LibraryNotFoundError("%s has no %s: not libinlay, or older than this package"
                                           % (path, name)) from None
            fn.restype = restype
            fn.argtypes = argtypes
            setattr(self, name, fn)
        abi = self.inlay_abi_version()
        if abi != _capi.ABI_VERSION:
            raise LibraryNotFoundError("%s has ABI version %d; this package speaks ABI %d"
                                       % (path, abi, _capi.ABI_VERSION))

    @property
    def version(self):
        return self.inlay_version().decode()

    def error(self, status, result=None):
        """The exception for a failed call's status, with this thread's message (call it
        on the thread that made the failing call, before any other inlay call)."""
        message = (self.inlay_last_error() or b"").decode("utf-8", "replace")
        name = (self.inlay_status_name(status) or b"").decode()
        return make_error(status, message, name, result)

    def check(self, status):
        if status != Status.OK:
            raise self.error(status)


_default = None
_default_lock = threading.Lock()


def _candidates():
    env = os.environ.get("INLAY_LIBRARY")
    if env:
        return [("INLAY_LIBRARY", env)]
    found = []
    if SONAME:
        found.append(("the loader's search", SONAME))
    name = ctypes.util.find_library("inlay")
    if name:
        found.append(("ctypes.util.find_library", name))
    return found


def load_library(path=None):
    """Loads libinlay and makes it the library Model uses by default; returns it.

    With no path, INLAY_LIBRARY or the system's search is used (see the module doc).
    Loading another path later replaces the default for models loaded afterwards."""
    global _default
    with _default_lock:
        _default = Library(os.fspath(path)) if path is not None else _search()
        return _default


def _search():
    tried = []
    for how, candidate in _candidates():
        try:
            return Library(candidate)
        except LibraryNotFoundError as e:
            tried.append("%s (%s): %s" % (candidate, how, e))
    raise LibraryNotFoundError(
        "libinlay not found: pass its path to inlay.load_library(), set INLAY_LIBRARY to it "
        "(e.g. build/capi/libinlay.so), or install it where the loader finds %s%s"
        % (SONAME or "libinlay", "".join("\n  tried " + t for t in tried)))


def default_library():
    """The library load_library() loaded, loading it on first use."""
    global _default
    with _default_lock:
        if _default is None:
            _default = _search()
        return _default
