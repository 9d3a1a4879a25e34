#!/usr/bin/python3
"""Prints text sampled by torch from a Hugging Face folder written by train.py.

    /usr/bin/python3 tools/train/sample.py models/default --prompt "You will" -n 5 --temp 0.8 --top-k 40

Without --prompt each sample starts from BOS alone (a whole new fortune). Sampling stops
at EOS or after --max-tokens; the whole sequence is recomputed each step.
"""

import argparse
import os
import sys

import sentencepiece as spm
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_folder  # noqa: E402


@torch.no_grad()
def sample(model, ids, max_tokens, temp, top_k, gen, eos):
    seq = list(ids)
    for _ in range(max_tokens):
        if len(seq) >= model.shape.max_position_embeddings:
            break
        logits = model(torch.tensor([seq]))[0, -1]
        if temp <= 0:
            nxt = int(torch.argmax(logits))
        else:
            vals, idx = torch.topk(logits / temp, min(top_k, logits.numel()))
            nxt = int(idx[torch.multinomial(torch.softmax(vals, -1), 1, generator=gen)])
        if nxt == eos:
            break
        seq.append(nxt)
    return seq[len(ids):]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("folder")
    p.add_argument("--prompt", default="")
    p.add_argument("-n", type=int, default=5, help="number of samples")
    p.add_argument("--max-tokens", type=int, default=160)
    p.add_argument("--temp", type=float, default=0.8)
    p.add_argument("--top-k", type=int, default=40)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    torch.set_num_threads(1)
    model = hf_folder.read(args.folder)
    sp = spm.SentencePieceProcessor(model_file=os.path.join(args.folder, "tokenizer.model"))
    gen = torch.Generator().manual_seed(args.seed)
    ids = [sp.bos_id()] + (sp.encode(args.prompt) if args.prompt else [])
    for _ in range(args.n):
        out = sample(model, ids, args.max_tokens, args.temp, args.top_k, gen, sp.eos_id())
        print(args.prompt + sp.decode(out) if args.prompt else sp.decode(out))
        print("%")


if __name__ == "__main__":
    main()
