"""Cancelling: from another thread (generate and streams), from a callback, by closing
or dropping a stream early, by closing a session a call is running in; a session stays
usable afterwards, and a second call while one runs is BUSY. Threads meet at events the
test controls (the callback waits for the canceller), never at sleeps."""
import threading
import unittest

import inlay
from inlay import stream as stream_module

from . import support

PROMPT = "You will"
LONG = dict(temperature=0, max_tokens=200, ignore_eos=True)
WAIT = 60  # seconds: only a hang reaches it


class CancelTest(unittest.TestCase):
    def setUp(self):
        self.model = support.model()
        self.addCleanup(self.model.close)
        self.session = self.model.session()

    def assert_usable(self):
        r = self.session.generate(" and", temperature=0, max_tokens=3, ignore_eos=True)
        self.assertEqual((len(r.tokens), r.stop_reason), (3, inlay.StopReason.MAX_TOKENS))

    def test_cancel_generate_from_another_thread(self):
        reached, cancelled = threading.Event(), threading.Event()
        calls = []

        def on_token(token, text):
            calls.append(token)
            if len(calls) == 3:
                reached.set()
                self.assertTrue(cancelled.wait(WAIT))  # the canceller has called cancel()

        def canceller():
            self.assertTrue(reached.wait(WAIT))
            self.session.cancel()
            cancelled.set()

        t = threading.Thread(target=canceller)
        t.start()
        r = self.session.generate(PROMPT, on_token=on_token, **LONG)
        t.join()
        self.assertEqual(r.stop_reason, inlay.StopReason.CANCELLED)
        self.assertTrue(r.cancelled)
        self.assertLessEqual(len(r.tokens), 4)  # at most one more token after the cancel
        self.assert_usable()

    def test_cancel_from_the_callback(self):
        r = self.session.generate(PROMPT, on_token=lambda t, s: self.session.cancel(), **LONG)
        self.assertEqual(r.stop_reason, inlay.StopReason.CANCELLED)
        self.assertLessEqual(len(r.tokens), 2)

    def test_cancel_while_idle_is_ignored(self):
        self.session.cancel()
        r = self.session.generate(PROMPT, temperature=0, max_tokens=40, ignore_eos=True)
        self.assertEqual((r.stop_reason, len(r.tokens)), (inlay.StopReason.MAX_TOKENS, 40))

    def test_cancel_a_stream_from_another_thread(self):
        stream = self.session.stream(PROMPT, **LONG)
        pieces = [next(stream) for _ in range(3)]
        t = threading.Thread(target=stream.cancel)
        t.start()
        t.join()
        pieces += list(stream)  # ends by itself after the cancel
        r = stream.result
        self.assertEqual(r.stop_reason, inlay.StopReason.CANCELLED)
        # The worker runs at most a buffer ahead of the consumer, then one more token.
        self.assertLessEqual(len(r.tokens), 3 + stream_module._BUFFER + 2)
        self.assertEqual("".join(pieces), r.text)
        self.assert_usable()

    def test_closing_a_stream_early_cancels_it(self):
        with self.session.stream(PROMPT, **LONG) as stream:
            for i, piece in enumerate(stream):
                if i == 2:
                    break
        r = stream.result
        self.assertIn(r.stop_reason, (inlay.StopReason.CANCELLED, inlay.StopReason.CALLBACK))
        self.assertLess(len(r.tokens), 200)
        self.assertEqual(list(stream), [])
        self.assert_usable()

    def test_dropping_a_stream_closes_it(self):
        self.assertTrue(next(iter(self.session.stream(PROMPT, **LONG))))
        # The stream is gone, and with it its call: the session is free at once.
        self.assert_usable()

    def test_a_second_call_while_streaming_is_busy(self):
        with self.session.stream(PROMPT, **LONG) as stream:
            next(stream)  # the worker is now inside the call, held by the full buffer
            with self.assertRaises(inlay.BusyError) as e:
                self.session.generate("x", max_tokens=1)
            self.assertEqual(e.exception.status, inlay.Status.BUSY)
        self.assert_usable()

    def test_closing_the_session_stops_its_stream(self):
        stream = self.session.stream(PROMPT, **LONG)
        next(stream)
        self.session.close()
        self.assertTrue(self.session.closed)
        self.assertEqual(list(stream), [])
        self.assertLess(len(stream.result.tokens), 200)

    def test_closing_the_session_cancels_a_call_on_another_thread(self):
        results = []
        started = threading.Event()
        handle = self.session._handle

        def on_token(token, text):
            started.set()
            # Hold the call until close() has begun (and cancelled it).
            while not handle.closing:
                threading.Event().wait(0.001)

        t = threading.Thread(target=lambda: results.append(self.session.generate(PROMPT, on_token=on_token,
                                                                                  **LONG)))
        t.start()
        self.assertTrue(started.wait(WAIT))
        self.session.close()  # waits for the call to return
        t.join(WAIT)
        self.assertFalse(t.is_alive())
        self.assertEqual(results[0].stop_reason, inlay.StopReason.CANCELLED)
        self.assertTrue(self.session.closed)

    def test_closing_from_a_callback_is_busy(self):
        with self.assertRaises(inlay.BusyError):
            self.session.generate(PROMPT, on_token=lambda t, s: self.session.close(), **LONG)
        self.assertFalse(self.session.closed)
        self.assert_usable()

    def test_a_stream_raises_the_call_error(self):
        with self.model.session(context_length=8) as small:
            stream = small.stream("A very long prompt that does not fit into eight tokens at all")
            with self.assertRaises(inlay.ContextFullError) as e:
                next(stream)
            self.assertEqual(e.exception.status, inlay.Status.CONTEXT_FULL)
            with self.assertRaises(inlay.ContextFullError):
                stream.result
            self.assertEqual(list(stream), [])


if __name__ == "__main__":
    unittest.main()
