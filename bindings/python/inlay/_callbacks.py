"""Python callbacks behind C function pointers. Each wrapper owns its ctypes callback
object, so whoever keeps the wrapper for the duration of the C call keeps the pointer
valid. An exception raised in the Python function cannot cross the C frames: it is
stored, the callback asks the library to stop (returns false), and the caller re-raises
it once the C call has returned (raise_pending)."""
import ctypes

from . import _capi


class _Callback:
    def __init__(self):
        self.error = None

    def _fail(self, error):
        if self.error is None:
            self.error = error
        return False

    def raise_pending(self):
        if self.error is not None:
            error, self.error = self.error, None
            raise error


class TokenCallback(_Callback):
    """fn(token_id, text) -> bool or None: False stops the generation."""

    def __init__(self, fn):
        super().__init__()
        self._fn = fn
        self.c = _capi.token_fn(self._call)

    def _call(self, token, piece, length, user):
        if self.error is not None:
            return False
        try:
            text = ctypes.string_at(piece, length).decode("utf-8") if length else ""
            return self._fn(token, text) is not False
        except BaseException as e:  # KeyboardInterrupt too: it is re-raised after the call
            return self._fail(e)


class ProgressCallback(_Callback):
    """fn(fraction) -> bool or None: False aborts the load (CancelledError)."""

    def __init__(self, fn):
        super().__init__()
        self._fn = fn
        self.c = _capi.progress_fn(self._call)

    def _call(self, progress, user):
        if self.error is not None:
            return False
        try:
            return self._fn(progress) is not False
        except BaseException as e:
            return self._fail(e)
