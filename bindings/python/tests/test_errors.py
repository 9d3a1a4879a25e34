"""The exception classes: one per status, each an InlayError carrying its status, name
and the library's message; codes this package does not know still raise InlayError."""
import unittest

import inlay
from inlay import errors

from . import support


class ErrorsTest(unittest.TestCase):
    def test_every_status_has_its_class(self):
        lib = support.library()
        classes = set()
        for status in inlay.Status:
            if status == inlay.Status.OK:
                continue
            with self.subTest(status=status.name):
                e = lib.error(status)
                self.assertIsInstance(e, inlay.InlayError)
                self.assertIs(type(e), inlay.error_class(status))
                self.assertEqual(e.status, status)
                # The library's name for the code, which this package's enum mirrors.
                self.assertEqual(e.status_name, lib.inlay_status_name(status).decode())
                self.assertEqual(e.status_name, "INLAY_ERR_" + status.name)
                classes.add(type(e))
        self.assertEqual(len(classes), len(inlay.Status) - 1)  # no two statuses share a class

    def test_unknown_status(self):
        lib = support.library()
        e = lib.error(1234)
        self.assertIs(type(e), inlay.InlayError)
        self.assertEqual((e.status, e.status_name), (1234, "INLAY_ERR_UNKNOWN"))

    def test_message_is_the_last_error_of_this_thread(self):
        support.library()
        with self.assertRaises(inlay.FileIOError) as e:
            inlay.Model("/nonexistent/a.gguf")
        self.assertIn("/nonexistent/a.gguf", e.exception.message)
        self.assertTrue(e.exception.message.startswith("INLAY_ERR_IO"))

    def test_python_side_checks_use_the_same_classes(self):
        e = errors.invalid_argument("x")
        self.assertEqual((e.status, e.status_name, e.message, str(e)),
                         (inlay.Status.INVALID_ARGUMENT, "INLAY_ERR_INVALID_ARGUMENT", "x", "x"))
        self.assertIsInstance(e, ValueError)


if __name__ == "__main__":
    unittest.main()
