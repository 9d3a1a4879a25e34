"""Generation: greedy output of generate, of the stream and of on_token agree with each
other, with the C functions called directly, and with the inlay CLI; stop reasons;
options and their errors; an exception in on_token."""
import ctypes
import json
import os
import subprocess
import unittest

import inlay
from inlay import _capi

from . import support

PROMPT = "You will"
GREEDY = dict(temperature=0, max_tokens=40, ignore_eos=True)


def raw_c_generate(lib, model, prompt, max_tokens):
    """Greedy generation through the C functions alone (no package logic)."""
    session = ctypes.c_void_p()
    with model._use() as m:
        lib.check(lib.inlay_session_create(m, None, ctypes.byref(session)))
    try:
        p = _capi.GenerateParams()
        lib.inlay_generate_params_init_size(ctypes.byref(p), ctypes.sizeof(p))
        p.temperature, p.max_tokens, p.ignore_eos = 0.0, max_tokens, True
        result = ctypes.c_void_p()
        lib.check(lib.inlay_session_generate(session, prompt.encode(), ctypes.byref(p), ctypes.byref(result)))
        n = ctypes.c_size_t()
        ids = lib.inlay_result_tokens(result, ctypes.byref(n))
        out = (lib.inlay_result_text(result).decode(), [ids[i] for i in range(n.value)])
        lib.inlay_result_free(result)
        return out
    finally:
        lib.inlay_session_free(session)


class GenerateTest(unittest.TestCase):
    def setUp(self):
        self.model = support.model()
        self.addCleanup(self.model.close)
        self.session = self.model.session()

    def test_greedy_paths_agree(self):
        result = self.session.generate(PROMPT, **GREEDY)
        self.assertEqual(result.stop_reason, inlay.StopReason.MAX_TOKENS)
        self.assertEqual(len(result.tokens), 40)
        self.assertEqual(result.prompt_tokens, self.model.tokenize(PROMPT))
        self.assertEqual(result.timings.generated_tokens, 40)
        self.assertEqual(result.timings.prompt_tokens, len(result.prompt_tokens))
        self.assertEqual(self.model.detokenize(result.prompt_tokens + result.tokens), PROMPT + result.text)
        self.assertGreater(len(result.text), 40)

        # The C API directly.
        self.assertEqual(raw_c_generate(self.model.library, self.model, PROMPT, 40), (result.text, result.tokens))

        # The stream, on a fresh conversation.
        with self.model.session() as other:
            stream = other.stream(PROMPT, **GREEDY)
            pieces = list(stream)
            self.assertEqual("".join(pieces), result.text)
            self.assertGreater(len(pieces), 10)
            self.assertTrue(all(isinstance(p, str) and p for p in pieces))
            self.assertEqual(stream.result.tokens, result.tokens)
            self.assertEqual(stream.result.stop_reason, inlay.StopReason.MAX_TOKENS)

        # on_token, with the token ids.
        with self.model.session() as other:
            seen = []
            r = other.generate(PROMPT, on_token=lambda t, s: seen.append((t, s)), **GREEDY)
            self.assertEqual([t for t, _ in seen if t >= 0], result.tokens)
            self.assertEqual("".join(s for _, s in seen), result.text)
            self.assertEqual(r.text, result.text)

    def test_the_cli_agrees(self):
        cli = os.environ.get("INLAY_CLI")
        support.require(cli and os.path.isfile(cli), "INLAY_CLI (the inlay tool) is not set")
        out = subprocess.run([cli, "generate", "-m", str(support.MODEL), "-p", PROMPT, "--temp", "0", "-n", "40",
                              "--ignore-eos", "-t", "1", "--json"], capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        cli_result = json.loads(out.stdout)
        result = self.session.generate(PROMPT, **GREEDY)
        self.assertEqual(cli_result["tokens"], result.tokens)
        self.assertEqual(cli_result["text"], result.text)

    def test_token_prompt_equals_text_prompt(self):
        by_text = self.session.generate(PROMPT, **GREEDY)
        with self.model.session() as other:
            by_ids = other.generate(self.model.tokenize(PROMPT), **GREEDY)
        self.assertEqual(by_ids.tokens, by_text.tokens)

    def test_history_and_reset(self):
        r = self.session.generate(PROMPT, **GREEDY)
        self.assertEqual(self.session.n_tokens, len(r.prompt_tokens) + len(r.tokens))
        self.session.reset()
        self.assertEqual(self.session.n_tokens, 0)
        self.assertEqual(self.session.generate(PROMPT, **GREEDY).tokens, r.tokens)

    def test_sampling_with_a_seed_repeats(self):
        a = self.session.generate(PROMPT, temperature=0.9, seed=7, max_tokens=30, ignore_eos=True)
        with self.model.session() as other:
            b = other.generate(PROMPT, temperature=0.9, seed=7, max_tokens=30, ignore_eos=True)
        self.assertEqual(a.tokens, b.tokens)

    def test_stop_reasons(self):
        r = self.session.generate(PROMPT, max_tokens=0)
        self.assertEqual((r.stop_reason, r.tokens), (inlay.StopReason.NONE, []))
        self.session.reset()
        full = self.session.generate(PROMPT, **GREEDY).text
        stop = full[10:14]
        self.session.reset()
        r = self.session.generate(PROMPT, stop=[stop], **GREEDY)
        self.assertEqual(r.stop_reason, inlay.StopReason.STRING)
        self.assertEqual(r.text, full[:full.index(stop)])
        self.session.reset()
        r = self.session.generate(PROMPT, on_token=lambda t, s: len(s) < 0, **GREEDY)  # False at once
        self.assertEqual((r.stop_reason, len(r.tokens)), (inlay.StopReason.CALLBACK, 1))
        self.session.reset()
        r = self.session.generate(PROMPT, temperature=0, max_tokens=200)  # stops at </s>
        self.assertEqual(r.stop_reason, inlay.StopReason.EOG)
        self.assertEqual(r.tokens[-1], self.model.info.eos_token)

    def test_an_exception_in_on_token_propagates(self):
        calls = []

        def boom(token, text):
            calls.append(token)
            if len(calls) == 3:
                raise ZeroDivisionError("in on_token")

        with self.assertRaises(ZeroDivisionError):
            self.session.generate(PROMPT, on_token=boom, **GREEDY)
        self.assertEqual(len(calls), 3)  # the generation stopped there
        # The session is free again, and the exception did not leak into the next call.
        self.assertEqual(len(self.session.generate(" and", max_tokens=3, temperature=0, ignore_eos=True).tokens), 3)

    def test_option_errors(self):
        with self.assertRaises(inlay.InvalidArgumentError) as e:  # checked by the library
            self.session.generate(PROMPT, top_p=2.0)
        self.assertEqual(e.exception.status, inlay.Status.INVALID_ARGUMENT)
        self.assertIn("top_p", e.exception.message)
        with self.assertRaises(inlay.InvalidArgumentError):   # would wrap in an int32
            self.session.generate(PROMPT, max_tokens=2**31)
        with self.assertRaises(inlay.InvalidArgumentError):
            self.session.generate(PROMPT, stop=[""])
        with self.assertRaises(inlay.InvalidArgumentError):
            self.session.generate("a\0b")
        with self.assertRaises(TypeError):
            self.session.generate(PROMPT, max_token=3)        # a misspelt option
        with self.assertRaises(TypeError):
            self.session.stream(PROMPT, temperature="hot")    # streams check options at once
        with self.assertRaises(inlay.InvalidUtf8Error):
            self.session.generate(b"\xff")
        self.assertEqual(self.session.n_tokens, 0)  # none of them touched the conversation

    def test_context_full(self):
        with self.model.session(context_length=8) as small:
            with self.assertRaises(inlay.ContextFullError) as e:
                small.generate("A very long prompt that does not fit into eight tokens at all")
            self.assertEqual(e.exception.status, inlay.Status.CONTEXT_FULL)
            self.assertEqual(small.n_tokens, 0)
            r = small.generate("You", temperature=0, max_tokens=100, ignore_eos=True)
            self.assertEqual(r.stop_reason, inlay.StopReason.CONTEXT_FULL)
            self.assertEqual(small.n_tokens, 8)


if __name__ == "__main__":
    unittest.main()
