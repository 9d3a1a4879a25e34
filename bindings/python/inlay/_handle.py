"""The lifetime of a C handle used from several threads: calls on it may run on any
thread, and close() frees it only once no call is inside it (freeing a session while a
generate call runs in it, or a model under a tokenize call, would be a use after free)."""
import contextlib
import threading

from .errors import BusyError, Status, invalid_argument


class Handle:
    def __init__(self, value, free, what):
        self.value = value        # a c_void_p; None once freed
        self._free = free
        self._what = what         # "model", "session": for messages
        self._cv = threading.Condition()
        self._users = {}          # thread id -> calls it has inside the handle
        self.closing = False      # close() began (and interrupted the calls inside)

    @property
    def closed(self):
        return self.value is None

    @contextlib.contextmanager
    def use(self):
        """Holds the handle open around one C call; raises if it is closed."""
        me = threading.get_ident()
        with self._cv:
            if self.value is None:
                raise invalid_argument("the %s is closed" % self._what)
            self._users[me] = self._users.get(me, 0) + 1
        try:
            yield self.value
        finally:
            with self._cv:
                self._users[me] -= 1
                if not self._users[me]:
                    del self._users[me]
                self._cv.notify_all()

    def close(self, interrupt=None):
        """Frees the handle after the calls inside it return (True if this call freed it). `interrupt` (e.g. a
        cancel) is called first when some are running. Closing from inside one of its
        own calls (a callback) would wait for itself: that is a BusyError."""
        with self._cv:
            if self.value is None:
                return False
            if threading.get_ident() in self._users:
                raise BusyError(Status.BUSY, "the %s cannot be closed from inside one of its own calls "
                                             "(a callback)" % self._what)
            if self._users and interrupt is not None:
                interrupt(self.value)
            self.closing = True
            while self._users:
                self._cv.wait()
            value, self.value = self.value, None
        self._free(value)
        return True


class Closable:
    """What the classes owning a Handle share: `with` closes, and so does garbage
    collection of one still open. Each class defines close() (idempotent) and _handle."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_handle", None) is not None and not self._handle.closed:
            self.close()
