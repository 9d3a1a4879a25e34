"""Model: a loaded model (inlay_model), immutable and shareable by threads and sessions."""
import ctypes
import dataclasses
import enum
import os
import threading
import weakref

from . import _capi
from ._callbacks import ProgressCallback
from ._handle import Closable, Handle
from ._text import detokenize_call, to_cstr, tokenize_call
from .chat import Thinking, chat_arguments
from .errors import Status, invalid_argument
from .library import default_library, Library

_INT32_MAX = 2**31 - 1


class Device(enum.IntEnum):
    """inlay_device."""
    AUTO = 0
    CPU = 1
    CUDA = 2


def parse_device(device, device_index=None):
    """("auto" | "cpu" | "cuda" | "cuda:N" | Device, index) -> (Device, index)."""
    index = None
    if isinstance(device, Device):
        kind = device
    elif isinstance(device, str):
        name, sep, number = device.strip().lower().partition(":")
        try:
            kind = Device[name.upper()]
        except KeyError:
            raise invalid_argument("device %r: expected auto, cpu, cuda or cuda:N" % device) from None
        if sep:
            if kind != Device.CUDA or not number.isdigit():
                raise invalid_argument("device %r: only cuda takes an index (cuda:0, cuda:1, ...)" % device)
            index = int(number)
    else:
        raise TypeError("device must be a str or inlay.Device, not %s" % type(device).__name__)
    if device_index is not None:
        if index is not None and index != device_index:
            raise invalid_argument("device %r contradicts device_index=%d" % (device, device_index))
        index = device_index
    if index is None:
        index = 0
    if not 0 <= index <= _INT32_MAX:
        raise invalid_argument("device index %d is out of range" % index)
    return kind, index


@dataclasses.dataclass(frozen=True)
class ModelInfo:
    """inlay_model_info."""
    architecture: str
    name: str
    n_params: int
    file_bytes: int
    n_vocab: int
    n_embd: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    n_ff: int
    context_length: int
    train_context_length: int
    bos_token: int
    eos_token: int
    device: str  # where the model runs: "cpu", "cuda:0", ...


def _check_int32(name, value, low=0):
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError("%s must be an int, not %s" % (name, type(value).__name__))
    if not low <= value <= _INT32_MAX:
        raise invalid_argument("%s=%d is out of range" % (name, value))


def model_params(lib, device="auto", device_index=None, n_threads=0, context_length=0):
    """inlay_model_params: the library's defaults, then these choices."""
    kind, index = parse_device(device, device_index)
    _check_int32("n_threads", n_threads)
    _check_int32("context_length", context_length)
    params = _capi.ModelParams()
    lib.inlay_model_params_init_size(ctypes.byref(params), ctypes.sizeof(params))
    params.n_threads = n_threads
    params.context_length = context_length
    params.device = kind
    params.device_index = index
    return params


class Model(Closable):
    """A model loaded from a GGUF file or a Hugging Face folder.

        with inlay.Model("models/default-q8_0.gguf", device="cpu", progress=bar) as model:
            ...

    progress(fraction) is called during the load on the calling thread; returning False
    aborts it (CancelledError). An exception it raises aborts the load and is re-raised
    here. device: "auto" (a usable GPU, else the CPU), "cpu", "cuda" or "cuda:N";
    UnsupportedError when the library or the machine cannot serve it. n_threads and
    context_length: 0 = the library's defaults. library: a Library or a path to
    libinlay (default: inlay.load_library()'s)."""

    def __init__(self, path, *, device="auto", device_index=None, n_threads=0, context_length=0,
                 progress=None, library=None):
        if library is None:
            library = default_library()
        elif not isinstance(library, Library):
            library = Library(os.fspath(library))
        self._lib = lib = library
        self._sessions = weakref.WeakSet()
        self._lock = threading.Lock()
        self._live_sessions = 0      # created and not yet freed, reachable or not
        self._close_pending = False  # close() was called while some were still alive
        self._handle = None
        params = model_params(lib, device, device_index, n_threads, context_length)
        callback = ProgressCallback(progress) if progress is not None else None
        if callback is not None:
            params.progress = callback.c  # kept alive by `callback` until the load returns
        out = ctypes.c_void_p()
        status = lib.inlay_model_load(to_cstr(os.fspath(path), "path"), ctypes.byref(params), ctypes.byref(out))
        error = lib.error(status) if status != Status.OK else None
        if callback is not None and callback.error is not None:
            lib.inlay_model_free(out)  # NULL unless the library loaded despite the abort
            callback.raise_pending()
        if error is not None:
            raise error
        self._handle = Handle(out, lib.inlay_model_free, "model")
        self.path = os.fspath(path)

    # --- lifetime -------------------------------------------------------------------
    def close(self):
        """Closes the model's open sessions, then frees it. Idempotent. (A session that
        is being garbage-collected, which close() cannot reach, frees the model once it
        has been freed itself: the library needs the sessions freed first.)"""
        if self._handle is None:
            return
        for session in list(self._sessions):
            session.close()
        with self._lock:
            self._close_pending = True
            if self._live_sessions:
                return
        self._handle.close()

    @property
    def closed(self):
        return self._handle is None or self._close_pending or self._handle.closed

    def _session_opening(self):
        """Counts a session about to be created (before the C call, under the lock that
        close() decides under, so a concurrent close() waits for it)."""
        with self._lock:
            if self._handle is None or self._close_pending:
                raise invalid_argument("the model is closed")
            self._live_sessions += 1

    def _session_freed(self):
        with self._lock:
            self._live_sessions -= 1
            free = self._close_pending and not self._live_sessions
        if free:
            self._handle.close()

    @property
    def library(self):
        return self._lib

    def _use(self):
        if self._handle is None or self._close_pending:
            raise invalid_argument("the model is closed")
        return self._handle.use()

    # --- queries --------------------------------------------------------------------
    @property
    def info(self):
        info = _capi.ModelInfo()
        info.struct_size = ctypes.sizeof(info)
        with self._use() as h:
            self._lib.check(self._lib.inlay_model_get_info(h, ctypes.byref(info)))
            values = {}
            for name, ctype in _capi.ModelInfo._fields_[1:]:
                v = getattr(info, name)
                values[name] = (v or b"").decode("utf-8", "replace") if ctype is ctypes.c_char_p else v
        return ModelInfo(**values)

    def session(self, **options):
        """A new Session on this model (see Session)."""
        from .session import Session
        return Session(self, **options)

    # --- tokenizer ------------------------------------------------------------------
    def tokenize(self, text, *, add_bos=True, parse_special=True):
        """Token ids of `text` (str or UTF-8 bytes). add_bos: prepend BOS if the
        vocabulary asks for it; parse_special: "<s>" and such become their ids."""
        with self._use() as h:
            return tokenize_call(self._lib, self._lib.inlay_tokenize, h, text, add_bos, parse_special)

    def detokenize(self, tokens, *, render_special=False):
        """The text of `tokens`; control tokens (BOS/EOS) render only with render_special."""
        with self._use() as h:
            return detokenize_call(self._lib, self._lib.inlay_detokenize, h, tokens, render_special)

    # --- chat -----------------------------------------------------------------------
    def apply_chat_template(self, messages, *, add_generation_prompt=True, thinking=Thinking.DEFAULT,
                            template=None):
        """The conversation rendered by the model's chat template (or `template`, Jinja
        source). messages: dicts {"role", "content"} or (role, content) pairs.
        MissingError when the model has no template and none is given."""
        lib = self._lib
        array, n, params = chat_arguments(lib, messages, add_generation_prompt, thinking, template)
        length = ctypes.c_size_t(0)
        capacity = 1024
        with self._use() as h:
            while True:
                out = ctypes.create_string_buffer(capacity)
                status = lib.inlay_chat_apply_template(h, array, n, ctypes.byref(params), out, capacity,
                                                       ctypes.byref(length))
                if status == Status.BUFFER_TOO_SMALL and length.value + 1 > capacity:
                    capacity = length.value + 1
                    continue
                lib.check(status)
                return out.raw[:length.value].decode("utf-8")


__all__ = ["Model", "ModelInfo", "Device", "parse_device"]
