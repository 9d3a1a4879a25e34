"""set_log_handler: the library's messages reach a Python handler at the level asked
for, a failing handler does not break the call that logged, and None restores the
default sink."""
import contextlib
import io
import threading
import unittest

import inlay

from . import support


class LogTest(unittest.TestCase):
    def setUp(self):
        support.library()
        self.addCleanup(inlay.set_log_handler, None)

    def test_messages_at_the_level_asked(self):
        got = []
        lock = threading.Lock()

        def handler(level, message):
            with lock:
                got.append((level, message))

        inlay.set_log_handler(handler, inlay.LogLevel.DEBUG)
        with support.model(device="auto") as model:  # auto logs the device it took, at INFO
            took = model.info.device.split(":")[0]
        info = [m for lvl, m in got if lvl == inlay.LogLevel.INFO]
        self.assertTrue(any(took in m for m in info), got)
        self.assertTrue(all(isinstance(lvl, inlay.LogLevel) and isinstance(m, str) for lvl, m in got))

        got.clear()
        inlay.set_log_handler(handler, inlay.LogLevel.WARN)
        support.model(device="auto").close()
        self.assertEqual([m for lvl, m in got if lvl < inlay.LogLevel.WARN], [])

    def test_a_failing_handler_is_reported_not_raised(self):
        def handler(level, message):
            raise RuntimeError("handler broke")

        inlay.set_log_handler(handler, inlay.LogLevel.DEBUG)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            with support.model(device="auto") as model:
                self.assertTrue(model.info.device)
        self.assertIn("handler broke", err.getvalue())


if __name__ == "__main__":
    unittest.main()
