"""Session: one conversation on a model (inlay_session), with its token history and KV
cache, used by one call at a time."""
import ctypes
import weakref

from . import _capi, _generate
from ._handle import Closable, Handle
from ._text import to_cstr, to_token_array
from .chat import Thinking, chat_arguments
from .errors import invalid_argument
from .stream import TokenStream


class Session(Closable):
    """A conversation on `model`. context_length: 0 = the model's.

    Generation options (keyword arguments of generate, stream, chat, chat_stream; left
    out = the library's default): max_tokens (256), temperature (0.8; <= 0 greedy),
    top_k (40), top_p (0.95), min_p (0.05), repeat_penalty (1), frequency_penalty (0),
    presence_penalty (0), penalty_last_n (64), seed (-1: random), ignore_eos (False),
    stop (a string or list of strings), add_bos (True), parse_special (True).

    One call at a time: a call made while another thread is inside this session raises
    BusyError. cancel() may be called from any thread."""

    def __init__(self, model, *, context_length=0):
        self._model = model  # keeps the model alive as long as the session
        self._lib = lib = model.library
        self._handle = None
        self._streams = weakref.WeakSet()
        if not isinstance(context_length, int) or not 0 <= context_length < 2**31:
            raise invalid_argument("context_length=%r must be an int in [0, 2^31)" % (context_length,))
        params = _capi.SessionParams()
        lib.inlay_session_params_init_size(ctypes.byref(params), ctypes.sizeof(params))
        params.context_length = context_length
        out = ctypes.c_void_p()
        model._session_opening()
        try:
            with model._use() as m:
                lib.check(lib.inlay_session_create(m, ctypes.byref(params), ctypes.byref(out)))
        except BaseException:
            model._session_freed()
            raise
        self._handle = Handle(out, lib.inlay_session_free, "session")
        model._sessions.add(self)

    # --- lifetime -------------------------------------------------------------------
    def close(self):
        """Stops this session's streams, cancels a call running on another thread and
        waits for it, then frees the session. Idempotent."""
        if self._handle is None:
            return
        for stream in list(self._streams):
            stream.close()
        if self._handle.close(interrupt=self._lib.inlay_session_cancel):
            self._model._session_freed()

    @property
    def closed(self):
        return self._handle is None or self._handle.closed

    @property
    def model(self):
        return self._model

    def _use(self):
        if self._handle is None:
            raise invalid_argument("the session is closed")
        return self._handle.use()

    # --- state ----------------------------------------------------------------------
    @property
    def n_tokens(self):
        """Tokens in the conversation so far (prompts and replies)."""
        n = ctypes.c_size_t(0)
        with self._use() as h:
            self._lib.check(self._lib.inlay_session_n_tokens(h, ctypes.byref(n)))
        return n.value

    def reset(self):
        """Forgets the conversation."""
        with self._use() as h:
            self._lib.check(self._lib.inlay_session_reset(h))

    def cancel(self):
        """Asks the call running on this session (on any thread) to stop: it returns
        with stop reason CANCELLED after at most one more token. Safe from any thread
        and from callbacks; does nothing when no call runs or the session is closed."""
        if self._handle is None or self._handle.closed:
            return
        try:
            with self._handle.use() as h:
                self._lib.check(self._lib.inlay_session_cancel(h))
        except Exception:
            if not self.closed:
                raise

    # --- generation -----------------------------------------------------------------
    def _generate_call(self, prompt):
        """call(params, out) -> status for a prompt: str/bytes text, or a list of ids."""
        lib = self._lib
        if isinstance(prompt, (str, bytes, bytearray)):
            text = to_cstr(prompt, "prompt")
            return lambda h, params, out: lib.inlay_session_generate(h, text, params, out)
        array, n = to_token_array(prompt)
        return lambda h, params, out: lib.inlay_session_generate_tokens(h, array, n, params, out)

    def _chat_call(self, messages, add_generation_prompt, thinking, template):
        lib = self._lib
        array, n, chat_params = chat_arguments(lib, messages, add_generation_prompt, thinking, template)
        return lambda h, params, out: lib.inlay_session_chat(h, array, n, ctypes.byref(chat_params), params, out)

    def _run(self, call, options, on_token):
        params = _generate.Params(self._lib, options, on_token)
        with self._use() as h:
            return _generate.run(self._lib, lambda p, out: call(h, p, out), params)

    def generate(self, prompt, *, on_token=None, **options):
        """Appends `prompt` (str, UTF-8 bytes, or a list of token ids, to which nothing
        is added) to the conversation, generates, and returns the Result.
        on_token(token_id, text) is called on this thread for every piece; returning
        False stops (stop reason CALLBACK); an exception it raises stops the generation
        and is re-raised here."""
        return self._run(self._generate_call(prompt), options, on_token)

    def stream(self, prompt, **options):
        """Like generate, as an iterator of the text pieces (see TokenStream)."""
        return self._stream(self._generate_call(prompt), options)

    def chat(self, messages, *, on_token=None, add_generation_prompt=True, thinking=Thinking.DEFAULT,
             template=None, **options):
        """Renders the whole conversation `messages` (dicts {"role", "content"} or
        (role, content) pairs; pass each reply back as an "assistant" message) with the
        model's chat template, or `template` (Jinja source), processes only what this
        session lacks of it and generates the reply. MissingError when the model has no
        template and none is given."""
        return self._run(self._chat_call(messages, add_generation_prompt, thinking, template), options, on_token)

    def chat_stream(self, messages, *, add_generation_prompt=True, thinking=Thinking.DEFAULT, template=None,
                    **options):
        """Like chat, as an iterator of the reply's text pieces."""
        return self._stream(self._chat_call(messages, add_generation_prompt, thinking, template), options)

    def _stream(self, call, options):
        _generate.Params(self._lib, options)  # bad options raise here, not on first next()
        stream = TokenStream(self, call, options)
        self._streams.add(stream)
        return stream
