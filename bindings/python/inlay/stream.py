"""TokenStream: a generate or chat call as an iterator of text pieces.

The C library streams through a callback on the thread that calls generate, for the
whole call. So the call runs on a worker thread, started by the first next(), and its
callback hands each piece to the iterating thread through a small buffer; when the
buffer is full the callback waits, so generation stays at most a few tokens ahead of
the consumer. Closing the stream early (close(), leaving a `with` block, or dropping it)
cancels the call (inlay_session_cancel, then the callback refuses further tokens) and
waits for the worker, so the session is free again once close() returns."""
import atexit
import collections
import threading
import weakref

_BUFFER = 4  # pieces the worker may run ahead of the consumer

# Streams still open at exit are closed first: their daemon workers must not be left
# inside a C call while the interpreter shuts down.
_open = weakref.WeakSet()
atexit.register(lambda: [s.close() for s in list(_open)])


class _Channel:
    """What the worker and the consumer share (the worker never refers to the stream
    itself, so a stream nobody holds is collected, and closed, at once)."""

    def __init__(self):
        self.cv = threading.Condition()
        self.pieces = collections.deque()
        self.started = False
        self.done = False
        self.closed = False
        self.result = None
        self.error = None
        self.error_raised = False
        self.thread = None

    def put(self, token, text):
        with self.cv:
            while len(self.pieces) >= _BUFFER and not self.closed:
                self.cv.wait()
            if self.closed:
                return False
            if text:
                self.pieces.append(text)
                self.cv.notify_all()
            return True


def _work(channel, session, call, options):
    result = error = None
    try:
        result = session._run(call, options, channel.put)
    except BaseException as e:
        error = e
    with channel.cv:
        channel.result, channel.error, channel.done = result, error, True
        channel.cv.notify_all()


class TokenStream:
    """Iterates over the text of the generated tokens as they come (non-empty str
    pieces; their concatenation is result.text). After the iteration, `result` is the
    Result (stop reason, tokens, timings). An error of the call (an InlayError) is
    raised by next() after the pieces produced before it."""

    def __init__(self, session, call, options):
        self._session = session
        self._call = call
        self._options = options
        self._channel = _Channel()
        _open.add(self)

    def _start(self):
        ch = self._channel
        if not ch.started and not ch.closed:
            ch.started = True
            ch.thread = threading.Thread(target=_work, args=(ch, self._session, self._call, self._options),
                                         name="inlay-stream", daemon=True)
            ch.thread.start()

    def __iter__(self):
        return self

    def __next__(self):
        ch = self._channel
        with ch.cv:
            self._start()
            while not ch.pieces and not ch.done and not ch.closed:
                ch.cv.wait()
            if ch.pieces:
                piece = ch.pieces.popleft()
                ch.cv.notify_all()
                return piece
            if ch.error is not None and not ch.error_raised:
                ch.error_raised = True
                raise ch.error
        raise StopIteration

    @property
    def result(self):
        """The Result, once the call has finished (waits for it; pieces not yet read
        are dropped, result.text has them all). Raises the call's error, if any."""
        ch = self._channel
        with ch.cv:
            self._start()
            while not ch.done and ch.started:
                ch.pieces.clear()
                ch.cv.notify_all()
                ch.cv.wait()
            if ch.error is not None:
                raise ch.error
            return ch.result

    def cancel(self):
        """Cancels the call from any thread; the iteration then ends (stop reason
        CANCELLED) after at most one more token."""
        ch = self._channel
        with ch.cv:
            running = ch.started and not ch.done
        if running:
            self._session.cancel()

    def close(self):
        """Stops the call if it still runs and waits for it (see the module doc)."""
        ch = self._channel
        with ch.cv:
            ch.closed = True
            ch.pieces.clear()
            ch.cv.notify_all()
            running = ch.started and not ch.done
        if running:
            self._session.cancel()
        if ch.thread is not None and ch.thread is not threading.current_thread():
            ch.thread.join()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: nothing left to stop
            pass
