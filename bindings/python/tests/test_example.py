"""examples/chat.py, run as the README runs it: every part of the tour shows up, and
the completion it streams is the one generate gives with the same options."""
import os
import subprocess
import sys
import unittest

import inlay

from . import support


class ExampleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        lib = support.library()
        env = dict(os.environ, INLAY_LIBRARY=lib.path, PYTHONPATH=str(support.PACKAGE_ROOT))
        cls.run_ = subprocess.run([sys.executable, str(support.EXAMPLE), str(support.MODEL), "--device", "cpu",
                                   "--threads", "1"], env=env, capture_output=True, text=True, timeout=300)
        cls.out = cls.run_.stdout

    def section(self, title):
        self.assertIn("== %s ==" % title, self.out)
        return self.out.split("== %s ==\n" % title, 1)[1].split("\n== ", 1)[0]

    def test_exit_status(self):
        self.assertEqual(self.run_.returncode, 0, self.run_.stderr)
        self.assertEqual(self.run_.stderr, "")

    def test_load_with_progress(self):
        self.assertIn("loading [", self.out)
        self.assertIn("[##############################] 100%", self.out)
        self.assertIn("984320 parameters", self.out)
        self.assertIn("on cpu", self.out)

    def test_streamed_completion_is_generates(self):
        with support.model() as model, model.session() as session:
            text = session.generate("You will", max_tokens=48, seed=42, stop=["\n\n"]).text
        self.assertTrue(self.section("streaming").startswith("You will" + text + "\n  ["))

    def test_cancel(self):
        part = self.section("cancel from another thread")
        self.assertIn("stop cancelled", part)
        generated = int(part.split("stop cancelled, ")[1].split()[0])
        self.assertLess(generated, 200)

    def test_chat(self):
        part = self.section("chat through the model's template")
        self.assertEqual(part.count("you> "), 2)
        self.assertEqual(part.count("bot>"), 2)
        self.assertNotIn("has no chat template", part)  # the default model's own template is used

    def test_device_and_errors(self):
        device = self.section("device")
        if os.environ.get("INLAY_TEST_EXPECT_GPU") != "1":
            self.assertIn("cuda: INLAY_ERR_UNSUPPORTED", device)
        self.assertIn("FileIOError: INLAY_ERR_IO", self.section("errors"))
        self.assertIn("(status %d)" % inlay.Status.IO, self.section("errors"))

    def test_a_device_it_cannot_have_fails_cleanly(self):
        if os.environ.get("INLAY_TEST_EXPECT_GPU") == "1":
            self.skipTest("this machine has a GPU")
        env = dict(os.environ, INLAY_LIBRARY=support.library().path, PYTHONPATH=str(support.PACKAGE_ROOT))
        run = subprocess.run([sys.executable, str(support.EXAMPLE), "--device", "cuda"], env=env,
                             capture_output=True, text=True, timeout=300)
        self.assertEqual(run.returncode, 1)
        # Without a CUDA backend the message says so; with one but no usable device, it
        # names the device and the driver's reason. Either way: UNSUPPORTED, about CUDA.
        self.assertTrue(run.stderr.startswith("chat.py: INLAY_ERR_UNSUPPORTED: "), run.stderr)
        self.assertIn("cuda", run.stderr.lower())
        self.assertNotIn("Traceback", run.stderr)


if __name__ == "__main__":
    unittest.main()
