#!/usr/bin/env python3
"""chat.py: inlay from Python, in one tour.

    python3 chat.py [MODEL] [--device auto|cpu|cuda|cuda:N] [--threads N]

MODEL defaults to the repository's models/default-q8_0.gguf. The tour: load with a
progress bar, stream a completion, cancel a generation from another thread, a two-turn
chat through the model's chat template, asking for a device this machine may not have,
and what an error looks like. Needs libinlay: set INLAY_LIBRARY to it (e.g.
build/capi/libinlay.so) unless it is installed where the loader finds it."""
import argparse
import pathlib
import sys
import threading

import inlay

DEFAULT_MODEL = pathlib.Path(__file__).resolve().parents[3] / "models" / "default-q8_0.gguf"

# The default model learnt fortunes, whose jokes go "Q: ... A: ...", and ships no chat
# template; this one is used when the model has none.
QA_TEMPLATE = ("{% for m in messages %}{% if m.role == 'user' %}Q: {{ m.content }}\n"
               "{% elif m.role == 'assistant' %}A:{{ m.content }}\n{% endif %}{% endfor %}"
               "{% if add_generation_prompt %}A:{% endif %}")


_bar = {"open": False}  # a progress bar is drawn on the current line


def progress_bar(fraction):
    done = int(fraction * 30)
    print("\r  loading [%s%s] %3d%%" % ("#" * done, "." * (30 - done), fraction * 100), end="", flush=True)
    _bar["open"] = fraction < 1.0
    if not _bar["open"]:
        print()
    return True  # False would abort the load


def stream_completion(session, prompt):
    print("\n== streaming ==\n%s" % prompt, end="")
    stream = session.stream(prompt, max_tokens=48, seed=42, stop=["\n\n"])
    for piece in stream:
        print(piece, end="", flush=True)
    r = stream.result
    print("\n  [%d tokens, stop: %s, %.0f tokens/s]" % (len(r.tokens), r.stop_reason.name.lower(),
                                                      r.timings.decode_tokens_per_s))


def cancel_from_another_thread(session):
    print("\n== cancel from another thread ==")
    five, cancelled = threading.Event(), threading.Event()

    def canceller():
        five.wait()
        session.cancel()  # safe from any thread
        cancelled.set()

    thread = threading.Thread(target=canceller)
    thread.start()
    count = 0
    stream = session.stream(" Once upon a time", max_tokens=200, ignore_eos=True, seed=7)
    for piece in stream:
        print(piece, end="", flush=True)
        count += 1
        if count == 5:
            five.set()        # ask the other thread to cancel,
            cancelled.wait()  # and read on once it has: the stream then ends by itself
    thread.join()
    r = stream.result
    print("\n  [cancelled after reading 5 pieces: stop %s, %d of up to 200 tokens generated]"
          % (r.stop_reason.name.lower(), len(r.tokens)))


def chat(model, session):
    print("\n== chat through the model's template ==")
    session.reset()
    template = None
    try:
        model.apply_chat_template([("user", "hi")])
    except inlay.MissingError as e:
        print("  (%s; using a Q/A template)" % e.message)
        template = QA_TEMPLATE
    messages = []
    for question in ("What is the secret of happiness?", "And what about money?"):
        messages.append({"role": "user", "content": question})
        print("you> %s\nbot>" % question, end="", flush=True)
        stream = session.chat_stream(messages, template=template, max_tokens=40, seed=3, stop=["\n"])
        for piece in stream:
            print(piece, end="", flush=True)
        r = stream.result
        messages.append({"role": "assistant", "content": r.text})  # the reply as generated
        print("\n  [conversation: %d tokens; this turn processed %d new prompt tokens, generated %d]"
              % (session.n_tokens, r.timings.prompt_tokens, len(r.tokens)))


def other_device(path, device):
    print("\n== device ==")
    other = "cuda" if not device.startswith("cuda") else "cpu"
    try:
        with inlay.Model(path, device=other) as m:
            print("  %s: runs on %s" % (other, m.info.device))
    except inlay.UnsupportedError as e:
        print("  %s: %s (status %d)" % (other, e.message, e.status))


def errors():
    print("\n== errors ==")
    try:
        inlay.Model("no/such/model.gguf")
    except inlay.InlayError as e:
        print("  %s: %s (status %d)" % (type(e).__name__, e.message, e.status))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", nargs="?", default=str(DEFAULT_MODEL))
    ap.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N (default auto)")
    ap.add_argument("--threads", type=int, default=0, help="compute threads; 0 = all cores")
    args = ap.parse_args()
    try:
        print("libinlay %s, model %s" % (inlay.library_version(), args.model))
        with inlay.Model(args.model, device=args.device, n_threads=args.threads, progress=progress_bar) as model:
            info = model.info
            print("  %s: %d parameters, %d layers, vocabulary %d, on %s"
                  % (info.name or info.architecture, info.n_params, info.n_layers, info.n_vocab, info.device))
            with model.session() as session:
                stream_completion(session, "You will")
                cancel_from_another_thread(session)
                chat(model, session)
        other_device(args.model, args.device)
        errors()
    except (inlay.InlayError, inlay.LibraryNotFoundError) as e:
        if _bar["open"]:
            print(flush=True)  # end the bar's line
        print("chat.py: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
