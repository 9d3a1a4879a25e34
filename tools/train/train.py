#!/usr/bin/python3
"""Trains inlay's default model: a ~1M-parameter Llama on Debian's fortune cookies.

Runs with Debian 12 packages only (python3-torch, python3-numpy, python3-sentencepiece,
sentencepiece, fortunes, fortunes-min; libopenblas0-serial for speed). Deterministic for a
given seed, torch build, BLAS and thread count: see tools/train/README.md for the recipe
and the figures of the committed model.

    nice /usr/bin/python3 tools/train/train.py --out models/default

Stages: corpus -> SentencePiece BPE vocabulary (spm_train) -> token stream -> training ->
Hugging Face folder (config.json, model.safetensors, tokenizer.model, ...) -> recipe.json.
"""

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time

import numpy as np
import sentencepiece as spm
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus  # noqa: E402
import hf_folder  # noqa: E402
from llama_model import LlamaForCausalLM, LlamaShape  # noqa: E402

BOS, EOS = 1, 2


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="output Hugging Face folder")
    p.add_argument("--work", default="/tmp/inlay-train", help="scratch folder (corpus, checkpoints)")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--threads", type=int, default=1, help="torch threads; results are bitwise tied to it")
    p.add_argument("--vocab", type=int, default=1024)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--ffn", type=int, default=256)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--ctx", type=int, default=256, help="training window and max_position_embeddings")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--min-lr-ratio", type=float, default=0.1)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--grad-clip", type=float, default=1.0)
    p.add_argument("--eval-every", type=int, default=100)
    p.add_argument("--checkpoint-every", type=int, default=50)
    p.add_argument("--resume", action="store_true", help="continue from the checkpoint in --work")
    return p.parse_args()


def train_tokenizer(train_texts, work, vocab_size, seed):
    """Trains a Llama-style SentencePiece BPE model with Debian's spm_train; returns its path.

    Llama conventions: BPE (what llama.cpp's SPM tokenizer reproduces), identity
    normalisation, whitespace kept as is, digits split, byte fallback (newlines become
    <0x0A>), unk/bos/eos = 0/1/2.
    """
    lines_path = os.path.join(work, "spm_input.txt")
    with open(lines_path, "w", encoding="utf-8") as f:
        for text in train_texts:
            for line in text.split("\n"):
                if line.strip():
                    f.write(line + "\n")
    prefix = os.path.join(work, "tokenizer")
    cmd = [
        "spm_train", f"--input={lines_path}", f"--model_prefix={prefix}", f"--vocab_size={vocab_size}",
        "--model_type=bpe", "--character_coverage=0.9999", "--byte_fallback=true",
        "--normalization_rule_name=identity", "--remove_extra_whitespaces=false", "--add_dummy_prefix=true",
        "--split_digits=true", "--allow_whitespace_only_pieces=true", "--max_sentence_length=8192",
        "--unk_id=0", "--bos_id=1", "--eos_id=2", "--pad_id=-1", "--num_threads=1",
        f"--random_seed={seed}", "--minloglevel=1",
    ]
    subprocess.run(cmd, check=True)
    return prefix + ".model"


def encode_docs(sp, texts):
    """One int32 stream of [BOS] text [EOS] documents and the offset of each BOS."""
    pieces = []
    starts = []
    n = 0
    for ids in sp.encode(texts):
        starts.append(n)
        pieces.append(np.asarray([BOS] + ids + [EOS], dtype=np.int64))
        n += len(ids) + 2
    return np.concatenate(pieces), np.asarray(starts, dtype=np.int64)


def windows_at(stream, starts, ctx):
    """Windows of ctx + 1 tokens that begin at a document's BOS (as prompts do at run time);
    a window runs on into the following documents. Starts too close to the end are dropped."""
    ok = starts[starts + ctx + 1 <= len(stream)]
    return ok


def batch_of(stream, offsets, ctx):
    idx = offsets[:, None] + np.arange(ctx + 1)[None, :]
    return torch.from_numpy(stream[idx])


def lr_at(step, args):
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    progress = (step - args.warmup) / max(1, args.steps - args.warmup)
    cosine = 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))
    return args.lr * (args.min_lr_ratio + (1 - args.min_lr_ratio) * cosine)


@torch.no_grad()
def evaluate(model, stream, starts, ctx, batch, every=1):
    """Mean next-token loss (nats) over non-overlapping document-aligned windows (every n-th one)."""
    model.eval()
    offsets = []
    end = -1
    for s in windows_at(stream, starts, ctx):
        if s >= end:
            offsets.append(s)
            end = s + ctx
    offsets = offsets[::every]
    total, count = 0.0, 0
    for i in range(0, len(offsets), batch):
        x = batch_of(stream, np.asarray(offsets[i:i + batch]), ctx)
        logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1), reduction="sum")
        total += loss.item()
        count += x[:, 1:].numel()
    model.train()
    return total / count, count


def param_groups(model, weight_decay):
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        # Linear weights decay; embeddings (tied with the output) and norm gains do not.
        (decay if p.ndim == 2 and "embed_tokens" not in name else no_decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def main():
    args = parse_args()
    os.makedirs(args.work, exist_ok=True)
    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(args.seed)
    t_start = time.time()

    fortunes = corpus.read_fortunes()
    train_texts, val_texts = corpus.split(fortunes)
    print(f"corpus: {len(fortunes)} fortunes from {len(corpus.fortune_files())} files, "
          f"{len(train_texts)} unique for training, {len(val_texts)} for validation", flush=True)

    tok_path = train_tokenizer(train_texts, args.work, args.vocab, args.seed)
    sp = spm.SentencePieceProcessor(model_file=tok_path)
    if sp.get_piece_size() != args.vocab or sp.bos_id() != BOS or sp.eos_id() != EOS:
        raise RuntimeError("unexpected tokenizer layout")

    train_stream, train_starts = encode_docs(sp, train_texts)
    val_stream, val_starts = encode_docs(sp, val_texts)
    train_chars = sum(len(t) for t in train_texts)
    print(f"tokens: train {len(train_stream)} ({train_chars / len(train_stream):.2f} chars/token), "
          f"validation {len(val_stream)}", flush=True)

    shape = LlamaShape(vocab_size=args.vocab, hidden_size=args.hidden, intermediate_size=args.ffn,
                       num_hidden_layers=args.layers, num_attention_heads=args.heads,
                       num_key_value_heads=args.kv_heads, max_position_embeddings=args.ctx)
    model = LlamaForCausalLM(shape)
    init_gen = torch.Generator().manual_seed(args.seed)
    model.init_weights(init_gen)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"model: {n_params} parameters", flush=True)

    opt = torch.optim.AdamW(param_groups(model, args.weight_decay), lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    rng = np.random.Generator(np.random.PCG64(args.seed))
    candidates = windows_at(train_stream, train_starts, args.ctx)
    ckpt_path = os.path.join(args.work, "checkpoint.pt")
    history = []
    step0 = 0
    if args.resume and os.path.exists(ckpt_path):
        ckpt = torch.load(ckpt_path)
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["opt"])
        rng.bit_generator.state = ckpt["rng"]
        history = ckpt["history"]
        step0 = ckpt["step"]
        print(f"resumed at step {step0}", flush=True)

    model.train()
    t_train = time.time()
    for step in range(step0, args.steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, args)
        x = batch_of(train_stream, rng.choice(candidates, size=args.batch, replace=False), args.ctx)
        logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, args.vocab), x[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
        opt.step()
        entry = {"step": step + 1, "loss": loss.item(), "lr": lr_at(step, args)}
        if (step + 1) % args.eval_every == 0 or step + 1 == args.steps:
            entry["val_loss"], _ = evaluate(model, val_stream, val_starts, args.ctx, args.batch)
        history.append(entry)
        if (step + 1) % 10 == 0 or "val_loss" in entry:
            rate = (step + 1 - step0) * args.batch * args.ctx / (time.time() - t_train)
            extra = f" val {entry['val_loss']:.4f}" if "val_loss" in entry else ""
            print(f"step {step + 1}/{args.steps} loss {entry['loss']:.4f}{extra} lr {entry['lr']:.2e} "
                  f"({rate:.0f} tok/s)", flush=True)
        if (step + 1) % args.checkpoint_every == 0:
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "rng": rng.bit_generator.state,
                        "history": history, "step": step + 1}, ckpt_path + ".tmp")
            os.replace(ckpt_path + ".tmp", ckpt_path)

    # A quarter of the training windows keeps this pass short; it is a fixed, seed-free subset.
    train_loss, train_tokens = evaluate(model, train_stream, train_starts, args.ctx, args.batch, every=4)
    val_loss, val_tokens = evaluate(model, val_stream, val_starts, args.ctx, args.batch)
    print(f"final: train loss {train_loss:.4f} ({train_tokens} tokens), "
          f"validation loss {val_loss:.4f} ({val_tokens} tokens)", flush=True)

    recipe = {
        "corpus": {
            "packages": corpus_packages(),
            "directory": corpus.FORTUNE_DIR,
            "files": corpus.fortune_files(),
            "excluded_files": sorted(corpus.EXCLUDED_FILES),
            "fortunes": len(fortunes),
            "train_fortunes": len(train_texts),
            "validation_fortunes": len(val_texts),
            "validation_rule": f"sha256(text)[0:4] as u32 little-endian % 100 < {corpus.VALIDATION_PERCENT}",
            "train_chars": train_chars,
            "train_tokens": int(len(train_stream)),
            "validation_tokens": int(len(val_stream)),
        },
        "tokenizer": {"trainer": "spm_train (Debian sentencepiece " + package_version("sentencepiece") + ")",
                      "vocab_size": args.vocab, "model_type": "bpe"},
        "model": shape.to_dict() | {"parameters": n_params},
        "training": {k: getattr(args, k) for k in
                     ("seed", "threads", "ctx", "batch", "steps", "lr", "min_lr_ratio", "warmup",
                      "weight_decay", "grad_clip")}
                    | {"optimizer": "AdamW(betas=(0.9, 0.95), eps=1e-8)", "schedule": "linear warmup, cosine decay",
                       "tokens_seen": args.steps * args.batch * args.ctx},
        "result": {"train_loss": train_loss, "validation_loss": val_loss,
                   "train_loss_eval_tokens": train_tokens, "validation_loss_eval_tokens": val_tokens,
                   "last_logged": history[-1]},
        "environment": {"torch": torch.__version__, "numpy": np.__version__, "python": platform.python_version(),
                        "python3-torch": package_version("python3-torch"),
                        "blas": package_version("libopenblas0-serial") and
                        "libopenblas0-serial " + package_version("libopenblas0-serial"),
                        "cpu": cpu_name(), "training_seconds": round(time.time() - t_train),
                        "total_seconds": round(time.time() - t_start)},
        "history": history,
    }
    hf_folder.write(args.out, model, tok_path, recipe)
    print(f"wrote {args.out}", flush=True)


def package_version(name):
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", name], capture_output=True, text=True)
        return out.stdout.strip() if out.returncode == 0 else ""
    except OSError:
        return ""


def corpus_packages():
    return {name: package_version(name) for name in ("fortunes", "fortunes-min")}


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


if __name__ == "__main__":
    main()
