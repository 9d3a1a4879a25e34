"""Vocab: a model's vocabulary alone (inlay_vocab), for tokenizing without weights."""
import ctypes
import os

from . import _capi
from ._handle import Closable, Handle
from ._text import detokenize_call, to_cstr, tokenize_call
from .library import default_library, Library


class Vocab(Closable):
    """The vocabulary of a GGUF file (a whole model or vocabulary only, as llama.cpp's
    ggml-vocab-*.gguf) or of a model folder (tokenizer.model, else tokenizer.json); no
    weights are read. Tokenizes exactly as the Model of the same file does. Read-only:
    any thread may use it.

        with inlay.Vocab("models/default-q8_0.gguf") as vocab:
            ids = vocab.tokenize("Hello")
    """

    def __init__(self, path, *, library=None):
        if library is None:
            library = default_library()
        elif not isinstance(library, Library):
            library = Library(os.fspath(library))
        self._lib = library
        self._handle = None
        out = ctypes.c_void_p()
        library.check(library.inlay_vocab_load(to_cstr(os.fspath(path), "path"), ctypes.byref(out)))
        self._handle = Handle(out, library.inlay_vocab_free, "vocabulary")
        self.path = os.fspath(path)

    def close(self):
        """Frees the vocabulary (after any call inside it returns). Idempotent."""
        if self._handle is not None:
            self._handle.close()

    @property
    def closed(self):
        return self._handle is None or self._handle.closed

    @property
    def info(self):
        """{"tokenizer_model", "name", "n_vocab", "bos_token", "eos_token", "add_bos"}."""
        info = _capi.VocabInfo()
        info.struct_size = ctypes.sizeof(info)
        with self._handle.use() as h:
            self._lib.check(self._lib.inlay_vocab_get_info(h, ctypes.byref(info)))
            return {name: ((getattr(info, name) or b"").decode("utf-8", "replace") if ctype is ctypes.c_char_p
                           else getattr(info, name))
                    for name, ctype in _capi.VocabInfo._fields_[1:]}

    def tokenize(self, text, *, add_bos=True, parse_special=True):
        """As Model.tokenize."""
        with self._handle.use() as h:
            return tokenize_call(self._lib, self._lib.inlay_vocab_tokenize, h, text, add_bos, parse_special)

    def detokenize(self, tokens, *, render_special=False):
        """As Model.detokenize."""
        with self._handle.use() as h:
            return detokenize_call(self._lib, self._lib.inlay_vocab_detokenize, h, tokens, render_special)
