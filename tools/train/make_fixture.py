#!/usr/bin/python3
"""Writes torch's own logits for a few fixed prompts, the reference that inlay is tested against.

The model is read back from the Hugging Face folder (config.json + model.safetensors), not
taken from training memory, so the fixture also checks the export. Output JSON:

  {"prompts": [{"text", "prompt_tokens" (SentencePiece ids with BOS), "greedy_tokens",
                "last_logits" (the full float32 row after the prompt),
                "top" (per position of prompt + greedy_tokens[:-1]: top-8 [id, logit]),
                "gap" (per position: top-1 minus top-2 logit)}], "model": {...}}

    /usr/bin/python3 tools/train/make_fixture.py models/default models/default/torch_logits.json
"""

import json
import os
import sys

import sentencepiece as spm
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_folder  # noqa: E402

PROMPTS = [
    "You will",
    "A day for firm decisions",
    "Q:\tHow many programmers does it take to change a light bulb?\nA:",
    "The meek shall inherit the earth",
]
GREEDY_TOKENS = 24
TOP_K = 8


@torch.no_grad()
def run(model, ids):
    """Greedy continuation recomputing the whole sequence each step (no cache to get wrong)."""
    seq = list(ids)
    for _ in range(GREEDY_TOKENS):
        logits = model(torch.tensor([seq]))[0, -1]
        seq.append(int(torch.argmax(logits)))
    logits = model(torch.tensor([seq[:-1]]))[0]
    return seq[len(ids):], logits


def main():
    folder, out_path = sys.argv[1], sys.argv[2]
    torch.set_num_threads(1)
    model = hf_folder.read(folder)
    sp = spm.SentencePieceProcessor(model_file=os.path.join(folder, "tokenizer.model"))
    cases = []
    for text in PROMPTS:
        ids = [sp.bos_id()] + sp.encode(text)
        greedy, logits = run(model, ids)
        top_vals, top_ids = torch.topk(logits, TOP_K, dim=-1)
        cases.append({
            "text": text,
            "prompt_tokens": ids,
            "greedy_tokens": greedy,
            "greedy_text": sp.decode(greedy),
            "last_logits": [float(v) for v in logits[len(ids) - 1]],
            "top": [[[int(i), float(v)] for i, v in zip(ti, tv)] for ti, tv in zip(top_ids, top_vals)],
            "gap": [float(tv[0] - tv[1]) for tv in top_vals],
        })
    fixture = {
        "about": "torch " + torch.__version__ + " float32 logits of the model in this folder, eval mode, "
                 "1 thread; written by tools/train/make_fixture.py",
        "vocab_size": model.shape.vocab_size,
        "prompts": cases,
    }
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(fixture, f, separators=(",", ":"))
        f.write("\n")
    for c in cases:
        print(repr(c["text"]), "->", repr(c["greedy_text"]))


if __name__ == "__main__":
    main()
