"""inlay_generate_params from keyword options, and one generate/chat call run to its
Result. Options left out (or None) keep the library's defaults (*_params_init_size)."""
import ctypes

from . import _capi
from ._callbacks import TokenCallback
from ._text import to_cstr
from .errors import Status, invalid_argument
from .result import take_result

# name -> (low, high) for integers, None for floats and bools. ctypes would wrap an
# out-of-range int silently, so ranges are checked here.
_OPTIONS = {
    "max_tokens": (0, 2**31 - 1),
    "temperature": None,
    "top_k": (-2**31, 2**31 - 1),
    "top_p": None,
    "min_p": None,
    "repeat_penalty": None,
    "frequency_penalty": None,
    "presence_penalty": None,
    "penalty_last_n": (-2**31, 2**31 - 1),
    "seed": (-1, 2**64 - 1),  # -1 (or None): random, as the library's default
    "ignore_eos": None,
    "add_bos": None,
    "parse_special": None,
}
OPTION_NAMES = tuple(_OPTIONS) + ("stop",)


class Params:
    """A filled GenerateParams plus everything its pointers point to."""

    def __init__(self, lib, options, on_token=None):
        unknown = set(options) - set(OPTION_NAMES)
        if unknown:
            raise TypeError("unknown generation option(s): %s (known: %s)"
                            % (", ".join(sorted(unknown)), ", ".join(OPTION_NAMES)))
        p = self.c = _capi.GenerateParams()
        lib.inlay_generate_params_init_size(ctypes.byref(p), ctypes.sizeof(p))
        for name, limits in _OPTIONS.items():
            value = options.get(name)
            if value is None:
                continue
            if limits is not None:
                if not isinstance(value, int) or isinstance(value, bool):
                    raise TypeError("%s must be an int, not %s" % (name, type(value).__name__))
                if not limits[0] <= value <= limits[1]:
                    raise invalid_argument("%s=%d is out of range [%d, %d]" % (name, value, *limits))
                if name == "seed" and value == -1:
                    value = 2**64 - 1
            elif _capi_type(name) is ctypes.c_bool:
                value = bool(value)
            elif not isinstance(value, (int, float)) or isinstance(value, bool):
                raise TypeError("%s must be a number, not %s" % (name, type(value).__name__))
            setattr(p, name, value)
        stop = options.get("stop")
        if stop is not None:
            if isinstance(stop, (str, bytes)):
                stop = [stop]
            strings = [to_cstr(s, "stop[%d]" % i) for i, s in enumerate(stop)]
            self._stop = (ctypes.c_char_p * max(1, len(strings)))(*strings)
            p.stop = ctypes.cast(self._stop, ctypes.POINTER(ctypes.c_char_p))
            p.n_stop = len(strings)
        self.callback = TokenCallback(on_token) if on_token is not None else None
        if self.callback is not None:
            p.on_token = self.callback.c


def _capi_type(name):
    return dict(_capi.GenerateParams._fields_)[name]


def run(lib, call, params):
    """Runs call(byref(c_params), byref(out)) -> status and returns its Result.

    CANCELLED is an outcome, not an error: the Result says so (stop_reason CANCELLED).
    An exception from on_token is re-raised after the call; any other failure raises
    an InlayError with the partial result, if the library gave one, as .result."""
    out = ctypes.c_void_p()
    status = call(ctypes.byref(params.c), ctypes.byref(out))
    error = lib.error(status) if status not in (Status.OK, Status.CANCELLED) else None
    result = take_result(lib, out) if out.value else None
    if params.callback is not None:
        params.callback.raise_pending()
    if error is not None:
        error.result = result
        raise error
    return result
