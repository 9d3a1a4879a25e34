"""Model: loading with a progress callback (its values, aborting, an exception in it),
errors as exceptions with the status and message, device choice, info, tokenize and
detokenize, and the context manager and close()."""
import os
import tempfile
import threading
import unittest

import inlay

from . import support


class LoadTest(unittest.TestCase):
    def test_progress_runs_on_the_loading_thread_and_reaches_one(self):
        seen = []
        with support.model(progress=lambda f: seen.append((f, threading.get_ident()))) as model:
            self.assertFalse(model.closed)
        values = [f for f, _ in seen]
        self.assertGreaterEqual(len(values), 2)
        self.assertEqual(values, sorted(values))
        self.assertEqual(values[-1], 1.0)
        self.assertEqual({t for _, t in seen}, {threading.get_ident()})

    def test_progress_returning_false_cancels_the_load(self):
        calls = []

        def stop(fraction):
            calls.append(fraction)
            return False

        with self.assertRaises(inlay.CancelledError) as e:
            support.model(progress=stop)
        self.assertEqual(e.exception.status, inlay.Status.CANCELLED)
        self.assertEqual(e.exception.status_name, "INLAY_ERR_CANCELLED")
        self.assertEqual(len(calls), 1)

    def test_an_exception_in_progress_propagates(self):
        class Boom(Exception):
            pass

        def explode(fraction):
            if fraction > 0:
                raise Boom("from the progress callback")

        with self.assertRaises(Boom):
            support.model(progress=explode)
        # The failed load left nothing behind that breaks the next one.
        with support.model() as model:
            self.assertEqual(model.info.n_vocab, 1024)

    def test_missing_file_is_an_io_error(self):
        support.library()
        with self.assertRaises(inlay.FileIOError) as e:
            inlay.Model("/nonexistent/dir/model.gguf")
        err = e.exception
        self.assertIsInstance(err, inlay.InlayError)
        self.assertEqual(err.status, inlay.Status.IO)
        self.assertEqual(err.status_name, "INLAY_ERR_IO")
        self.assertIn("/nonexistent/dir/model.gguf", err.message)
        self.assertEqual(str(err), err.message)

    def test_not_a_model_is_bad_format(self):
        support.library()
        with tempfile.NamedTemporaryFile("w", suffix=".gguf", delete=False) as f:
            f.write("This is a text file, not a GGUF model; it is long enough to hold a header.\n")
        try:
            with self.assertRaises(inlay.BadFormatError) as e:
                inlay.Model(f.name)
            self.assertEqual(e.exception.status, inlay.Status.BAD_FORMAT)
        finally:
            os.unlink(f.name)

    def test_bad_arguments(self):
        support.library()
        with self.assertRaises(inlay.InvalidArgumentError) as e:
            support.model(n_threads=-3)
        self.assertEqual(e.exception.status, inlay.Status.INVALID_ARGUMENT)
        self.assertIsInstance(e.exception, ValueError)
        with self.assertRaises(inlay.InvalidArgumentError):
            support.model(context_length=2**40)  # would wrap in a C int32
        with self.assertRaises(inlay.InvalidArgumentError):
            inlay.Model("model\0.gguf")
        with self.assertRaises(TypeError):
            support.model(n_threads="two")


class DeviceTest(unittest.TestCase):
    def gpu_expected(self):
        return os.environ.get("INLAY_TEST_EXPECT_GPU") == "1"

    def test_cpu(self):
        with support.model(device="cpu") as model:
            self.assertEqual(model.info.device, "cpu")
        with support.model(device=inlay.Device.CPU) as model:
            self.assertEqual(model.info.device, "cpu")

    def test_auto(self):
        with support.model(device="auto") as model:
            self.assertEqual(model.info.device.split(":")[0], "cuda" if self.gpu_expected() else "cpu")

    def test_cuda_without_a_gpu_fails_clearly(self):
        if self.gpu_expected():
            with support.model(device="cuda:0") as model:
                self.assertEqual(model.info.device, "cuda:0")
            with self.assertRaises(inlay.UnsupportedError):
                support.model(device="cuda", device_index=1000)
            return
        for device in ("cuda", "cuda:0", "cuda:3"):
            with self.subTest(device=device):
                with self.assertRaises(inlay.UnsupportedError) as e:
                    support.model(device=device)
                self.assertEqual(e.exception.status, inlay.Status.UNSUPPORTED)
                self.assertIn("cuda", e.exception.message.lower())

    def test_device_choice_reaches_the_params(self):
        # What a GPU machine would act on: the device and index in inlay_model_params.
        from inlay.model import model_params
        lib = support.library()
        for device, index, want in (("auto", None, (0, 0)), ("cpu", None, (1, 0)), ("cuda", None, (2, 0)),
                                    ("cuda:3", None, (2, 3)), ("cuda", 2, (2, 2)), (inlay.Device.CUDA, 1, (2, 1)),
                                    (" CUDA:1 ", 1, (2, 1))):
            with self.subTest(device=device, index=index):
                p = model_params(lib, device, index, n_threads=3, context_length=64)
                self.assertEqual((p.device, p.device_index, p.n_threads, p.context_length), want + (3, 64))

    def test_bad_device_names(self):
        for device, kw in (("tpu", {}), ("cpu:1", {}), ("cuda:x", {}), ("cuda:1", {"device_index": 2}),
                           ("cuda", {"device_index": -1})):
            with self.subTest(device=device, **kw):
                with self.assertRaises(inlay.InvalidArgumentError):
                    support.model(device=device, **kw)


class ModelTest(unittest.TestCase):
    def setUp(self):
        self.model = support.model()
        self.addCleanup(self.model.close)

    def test_info(self):
        info = self.model.info
        self.assertEqual((info.architecture, info.n_vocab, info.n_embd, info.n_layers), ("llama", 1024, 256, 2))
        self.assertEqual((info.n_heads, info.n_kv_heads, info.head_dim, info.bos_token, info.eos_token),
                         (8, 2, 32, 1, 2))
        self.assertEqual(info.n_params, 984320)
        self.assertEqual(info.file_bytes, os.path.getsize(support.MODEL))

    def test_tokenize_and_detokenize(self):
        ids = self.model.tokenize("You will be happy.")
        self.assertEqual(ids[0], 1)  # BOS: the vocabulary asks for it
        self.assertEqual(self.model.tokenize("You will be happy.", add_bos=False), ids[1:])
        self.assertEqual(self.model.detokenize(ids), "You will be happy.")
        special = self.model.detokenize(ids, render_special=True)
        self.assertTrue(special.startswith("<s>") and special.endswith("You will be happy."), special)
        self.assertEqual(self.model.tokenize(b"You will be happy."), ids)  # bytes too
        self.assertEqual(self.model.tokenize("<s>", add_bos=False), [1])
        self.assertNotEqual(self.model.tokenize("<s>", add_bos=False, parse_special=False), [1])
        self.assertEqual(self.model.tokenize("", add_bos=False), [])
        self.assertEqual(self.model.detokenize([]), "")

    def test_long_text_round_trips(self):
        text = "A fortune a day keeps the doctor away. " * 200  # tokens and bytes beyond first guesses
        ids = self.model.tokenize(text, add_bos=False)
        self.assertGreater(len(ids), 500)
        self.assertEqual(self.model.detokenize(ids), text)
        self.assertEqual(self.model.detokenize(self.model.tokenize("ü€😀", add_bos=False)), "ü€😀")

    def test_tokenizer_errors(self):
        with self.assertRaises(inlay.InvalidTokenError) as e:
            self.model.detokenize([5, 1024])
        self.assertEqual(e.exception.status, inlay.Status.INVALID_TOKEN)
        with self.assertRaises(inlay.InvalidUtf8Error) as e:
            self.model.tokenize(b"caf\xe9")  # Latin-1, not UTF-8: the library says so
        self.assertEqual(e.exception.status, inlay.Status.INVALID_UTF8)
        with self.assertRaises(inlay.InvalidUtf8Error):
            self.model.tokenize("\ud800")  # a lone surrogate has no UTF-8
        with self.assertRaises(inlay.InvalidTokenError):
            self.model.detokenize([2**32 + 5])  # not wrapped into token 5


class LifetimeTest(unittest.TestCase):
    def test_context_manager_closes(self):
        with support.model() as model:
            session = model.session()
            self.assertFalse(model.closed)
        self.assertTrue(model.closed)
        self.assertTrue(session.closed)  # closing a model closes its sessions first
        with self.assertRaises(inlay.InvalidArgumentError) as e:
            model.info
        self.assertIn("closed", e.exception.message)
        with self.assertRaises(inlay.InvalidArgumentError):
            session.generate("x")
        model.close()  # idempotent
        session.close()

    def test_no_session_after_close(self):
        model = support.model()
        model.close()
        with self.assertRaises(inlay.InvalidArgumentError):
            model.session()
        with self.assertRaises(inlay.InvalidArgumentError):
            model.tokenize("x")

    def test_close_on_exception(self):
        with self.assertRaises(KeyError):
            with support.model() as model:
                raise KeyError("inside")
        self.assertTrue(model.closed)

    def test_a_session_keeps_its_model_alive(self):
        session = support.model().session()  # the Model object is not held here
        self.assertGreater(len(session.generate("You", max_tokens=4, temperature=0).tokens), 0)
        session.close()


if __name__ == "__main__":
    unittest.main()


class FreeOrderTest(unittest.TestCase):
    """The library needs a model's sessions freed before the model, whatever order
    Python drops them in: explicit closes, or a reference cycle that the garbage
    collector breaks in an order of its own."""

    def recording_library(self):
        lib = inlay.Library(support.library().path)
        self.freed = []
        for name in ("inlay_session_free", "inlay_model_free"):
            fn = getattr(lib, name)
            setattr(lib, name, lambda h, fn=fn, name=name: (self.freed.append(name), fn(h)))
        return lib

    def test_close_frees_sessions_first(self):
        model = inlay.Model(support.MODEL, library=self.recording_library(), n_threads=1)
        a, b = model.session(), model.session()
        model.close()
        self.assertEqual(self.freed, ["inlay_session_free", "inlay_session_free", "inlay_model_free"])
        self.assertTrue(a.closed and b.closed)

    def test_a_cycle_collected_in_any_order(self):
        import gc
        for first in ("model", "session"):
            with self.subTest(first=first):
                lib = self.recording_library()

                class Holder:
                    pass

                h = Holder()
                h.me = h  # a cycle: only the collector frees it
                model = inlay.Model(support.MODEL, library=lib, n_threads=1)
                session = model.session()
                if first == "model":
                    h.a, h.b = model, session
                else:
                    h.a, h.b = session, model
                session.self_ref = session.model.self_ref = h
                del h, model, session, Holder
                gc.collect()
                self.assertEqual(self.freed, ["inlay_session_free", "inlay_model_free"])
