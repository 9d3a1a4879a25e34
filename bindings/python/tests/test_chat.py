"""Chat through the model's own template (the default model's folder with a
chat_template.jinja): rendering, a two-turn conversation whose second turn sees the
first and processes only its new tokens, streaming, an explicit template, and the
errors of a model without one and of a broken template."""
import shutil
import unittest

import inlay

from . import support

REPLY = dict(temperature=0, max_tokens=24, stop=["\n"])


class ChatTest(unittest.TestCase):
    def setUp(self):
        self.model, folder = support.model_with_template()
        self.addCleanup(shutil.rmtree, folder)
        self.addCleanup(self.model.close)

    def test_renders_the_models_template(self):
        messages = [{"role": "user", "content": "Why?"}, {"role": "assistant", "content": " Because."},
                    ("user", "Really?")]
        self.assertEqual(self.model.apply_chat_template(messages), "Q: Why?\nA: Because.\nQ: Really?\nA:")
        self.assertEqual(self.model.apply_chat_template(messages, add_generation_prompt=False),
                         "Q: Why?\nA: Because.\nQ: Really?\n")
        long = [("user", "x" * 3000)]  # longer than the first buffer
        self.assertEqual(self.model.apply_chat_template(long), "Q: " + "x" * 3000 + "\nA:")

    def test_two_turns(self):
        messages = [{"role": "user", "content": "What is the meaning of life?"}]
        with self.model.session() as session:
            first = session.chat(messages, **REPLY)
            self.assertTrue(first.text.strip())
            messages += [{"role": "assistant", "content": first.text},
                         {"role": "user", "content": "And what else?"}]
            before = session.n_tokens
            second = session.chat(messages, **REPLY)
            rendered = self.model.tokenize(self.model.apply_chat_template(messages))
            # The second turn saw the first: the session's history is the whole rendered
            # conversation plus the reply, and only the tokens it lacked were processed.
            self.assertEqual(session.n_tokens, len(rendered) + len(second.tokens))
            history = first.prompt_tokens + first.tokens
            self.assertEqual(len(history), before)
            common = next((i for i, (a, b) in enumerate(zip(history, rendered)) if a != b), before)
            self.assertEqual(second.timings.prompt_tokens, len(rendered) - common)
            self.assertEqual(second.prompt_tokens, rendered[common:])
            # All of the first turn was reused but its last token, the stop string's "\n",
            # which the template writes again (as a token of its own text).
            self.assertGreaterEqual(common, before - 1)
        # The same reply as a fresh session given the whole conversation at once.
        with self.model.session() as fresh:
            self.assertEqual(fresh.chat(messages, **REPLY).tokens, second.tokens)
            fresh.reset()
            self.assertEqual(fresh.generate(rendered, **REPLY).tokens, second.tokens)

    def test_chat_stream(self):
        messages = [("user", "Tell me a fortune.")]
        with self.model.session() as session:
            whole = session.chat(messages, **REPLY)
        with self.model.session() as session:
            stream = session.chat_stream(messages, **REPLY)
            self.assertEqual("".join(stream), whole.text)
            self.assertEqual(stream.result.tokens, whole.tokens)

    def test_explicit_template(self):
        template = "{% for m in messages %}{{ m.role }}> {{ m.content }}\n{% endfor %}"
        self.assertEqual(self.model.apply_chat_template([("user", "hi")], template=template), "user> hi\n")

    def test_thinking(self):
        template = "{% if enable_thinking is defined %}{% if enable_thinking %}on{% else %}off{% endif %}" \
                   "{% else %}default{% endif %}"
        render = lambda thinking: self.model.apply_chat_template([("user", "hi")], thinking=thinking,
                                                                 template=template)
        self.assertEqual([render(t) for t in (inlay.Thinking.DEFAULT, inlay.Thinking.OFF, inlay.Thinking.ON)],
                         ["default", "off", "on"])
        self.assertEqual([render(t) for t in (None, False, True)], ["default", "off", "on"])

    def test_template_errors(self):
        with self.assertRaises(inlay.BadFormatError) as e:
            self.model.apply_chat_template([("user", "hi")], template="{% for m in messages %}")
        self.assertEqual(e.exception.status, inlay.Status.BAD_FORMAT)
        with self.assertRaises(KeyError):
            self.model.apply_chat_template([{"role": "user"}])


class OwnTemplateTest(unittest.TestCase):
    def test_the_default_gguf_renders_its_own_template(self):
        with support.model() as model:
            self.assertEqual(model.apply_chat_template([("user", "hi")]), "Q: hi\nA:")
            self.assertEqual(model.apply_chat_template([("system", "Be brief."), ("user", "hi"),
                                                        ("assistant", " Hello."), ("user", "why?")]),
                             "Be brief.\nQ: hi\nA: Hello.\nQ: why?\nA:")

    def test_a_model_without_template(self):
        model, folder = support.model_without_template()
        try:
            with model, model.session() as session:
                with self.assertRaises(inlay.MissingError) as e:
                    session.chat([("user", "hi")])
                self.assertEqual(e.exception.status, inlay.Status.MISSING)
                self.assertIn("chat template", e.exception.message)
                self.assertEqual(session.n_tokens, 0)
                # With a template given, it chats.
                r = session.chat([("user", "hi")], template=support.QA_TEMPLATE, **REPLY)
                self.assertEqual(r.prompt_tokens, model.tokenize("Q: hi\nA:"))
        finally:
            shutil.rmtree(folder)


if __name__ == "__main__":
    unittest.main()
