"""inlay.Vocab: a vocabulary without weights tokenizes as the model does; llama.cpp's
vocabulary-only files load; errors carry their status."""
import os
import pathlib
import unittest

import inlay

from . import support

SHARED = pathlib.Path(os.environ.get("INLAY_SHARED_DIR") or support.REPO.parent / "shared")
SPM_VOCAB = SHARED / "testdata" / "vocab" / "ggml-vocab-llama-spm.gguf"

TEXTS = ["Once upon a time", "", " leading space", "<s>special</s>", "\u00e4pfel \u20ac 12345"]


class VocabTest(unittest.TestCase):
    def test_same_as_the_model(self):
        support.library()
        with support.model() as model:
            for path in (support.MODEL, support.FOLDER):
                with self.subTest(path=str(path)), inlay.Vocab(path) as vocab:
                    info = vocab.info
                    self.assertEqual(info["n_vocab"], model.info.n_vocab)
                    self.assertEqual(info["bos_token"], model.info.bos_token)
                    self.assertEqual(info["tokenizer_model"], "llama")
                    for text in TEXTS:
                        for add_bos in (False, True):
                            for special in (False, True):
                                ids = vocab.tokenize(text, add_bos=add_bos, parse_special=special)
                                self.assertEqual(ids, model.tokenize(text, add_bos=add_bos, parse_special=special))
                                self.assertEqual(vocab.detokenize(ids), model.detokenize(ids))

    def test_vocabulary_only_file(self):
        support.library()
        support.require(SPM_VOCAB.is_file(), "%s is absent (set INLAY_SHARED_DIR)" % SPM_VOCAB)
        with inlay.Vocab(SPM_VOCAB) as vocab:
            self.assertEqual(vocab.info["n_vocab"], 32000)
            # llama.cpp's ids (ggml-vocab-llama-spm.gguf.out), BOS first as the file asks
            self.assertEqual(vocab.tokenize("Hello world"), [1, 15043, 3186])
            self.assertEqual(vocab.detokenize([15043, 3186]), "Hello world")
        with self.assertRaises(inlay.MissingError):  # it has no weights: not a model
            inlay.Model(SPM_VOCAB, n_threads=1)

    def test_errors_and_close(self):
        support.library()
        with self.assertRaises(inlay.FileIOError) as e:
            inlay.Vocab("no/such/vocab.gguf")
        self.assertEqual(e.exception.status, inlay.Status.IO)
        vocab = inlay.Vocab(support.MODEL)
        with self.assertRaises(inlay.InvalidTokenError):
            vocab.detokenize([1 << 30])
        vocab.close()
        vocab.close()
        self.assertTrue(vocab.closed)
        with self.assertRaises(inlay.InvalidArgumentError):
            vocab.tokenize("x")


if __name__ == "__main__":
    unittest.main()
