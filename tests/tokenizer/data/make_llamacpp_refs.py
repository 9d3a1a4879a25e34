#!/usr/bin/env python3
"""Regenerates llamacpp_tokenize_refs.json: llama.cpp's own tokenization (llama-tokenize,
--no-bos, with and without --no-parse-special) of the strings below, for the vocabularies
the tokenizer tests load. This is the independent reference for special-token
splitting, whitespace/digit/contraction edge cases and long inputs.

  python3 make_llamacpp_refs.py SHARED_TESTDATA LLAMA_CPP_MODELS_DIR PEER_DIR > llamacpp_tokenize_refs.json

SHARED_TESTDATA: ../shared/testdata; LLAMA_CPP_MODELS_DIR: llama.cpp's models/ (for
ggml-vocab-llama-bpe.gguf); PEER_DIR: tools/llamacpp-peer (llama-tokenize under
native/build/bin, make_tiny_gguf.py for its GGUF writer). The Qwen3 vocabulary GGUF is
written here from tokenizers/qwen3/tokenizer.json the way convert_hf_to_gguf.py does.
"""
import json, os, subprocess, sys, tempfile

testdata, models_dir, peer = sys.argv[1:4]
sys.path.insert(0, peer)
import make_tiny_gguf as mt  # noqa: E402  (stdlib GGUF writer)

TOKENIZE = os.path.join(peer, "native/build/bin/llama-tokenize")


def looks_special(t):  # convert_hf_to_gguf.py does_token_look_special
    return (t in ("<pad>", "<mask>", "<2mass>", "[@BOS@]") or (t.startswith("<|") and t.endswith("|>"))
            or (t.startswith("<\uff5c") and t.endswith("\uff5c>")) or (t.startswith("<unused") and t.endswith(">")))


def qwen3_gguf(path):
    j = json.load(open(os.path.join(testdata, "tokenizers/qwen3/tokenizer.json"), encoding="utf-8"))
    vocab = j["model"]["vocab"]
    n = max(max(vocab.values()), max(t["id"] for t in j["added_tokens"])) + 1
    toks, types = [None] * n, [1] * n
    for t, i in vocab.items():
        toks[i] = t
    for t in j["added_tokens"]:
        toks[t["id"]] = t["content"]
        types[t["id"]] = 3 if t["special"] or looks_special(t["content"]) else 4
    merges = [m if isinstance(m, str) else m[0] + " " + m[1] for m in j["model"]["merges"]]
    K = mt
    meta = [K.kv("general.architecture", K.T_STR, "qwen3"), K.kv("general.name", K.T_STR, "Qwen3 vocab"),
            K.kv("qwen3.context_length", K.T_U32, 4096), K.kv("qwen3.embedding_length", K.T_U32, 64),
            K.kv("qwen3.block_count", K.T_U32, 1), K.kv("qwen3.feed_forward_length", K.T_U32, 128),
            K.kv("qwen3.attention.head_count", K.T_U32, 4), K.kv("qwen3.attention.head_count_kv", K.T_U32, 2),
            K.kv("qwen3.attention.layer_norm_rms_epsilon", K.T_F32, 1e-6),
            K.kv("qwen3.attention.key_length", K.T_U32, 16), K.kv("qwen3.attention.value_length", K.T_U32, 16),
            K.kv("qwen3.rope.freq_base", K.T_F32, 1000000.0),
            K.kv("tokenizer.ggml.model", K.T_STR, "gpt2"), K.kv("tokenizer.ggml.pre", K.T_STR, "qwen2"),
            K.kv("tokenizer.ggml.tokens", K.T_ARR, (K.T_STR, toks)),
            K.kv("tokenizer.ggml.token_type", K.T_ARR, (K.T_I32, types)),
            K.kv("tokenizer.ggml.merges", K.T_ARR, (K.T_STR, merges)),
            K.kv("tokenizer.ggml.eos_token_id", K.T_U32, 151645),
            K.kv("tokenizer.ggml.padding_token_id", K.T_U32, 151643),
            K.kv("tokenizer.ggml.bos_token_id", K.T_U32, 151643),
            K.kv("tokenizer.ggml.add_bos_token", K.T_BOOL, False)]
    with open(path, "wb") as f:
        f.write(b"GGUF" + mt.struct.pack("<IQQ", 3, 0, len(meta)) + b"".join(meta))


def tokenize(model, text, parse_special):
    args = [TOKENIZE, "-m", model, "--stdin", "--ids", "--no-bos", "--no-escape", "--log-disable"]
    if not parse_special:
        args.append("--no-parse-special")
    out = subprocess.run(args, input=text.encode("utf-8"), capture_output=True, check=True).stdout.decode()
    return json.loads(out.strip().splitlines()[-1])


def read(rel):
    return open(os.path.join(testdata, rel), encoding="utf-8", newline="").read()


inp = read("vocab/ggml-vocab-gpt-2.gguf.inp")
STRINGS = [
    "<s>hello</s>", "Hello <s> world</s>!", "<s> <s>  x </s>\n", "<unk>x <unk>",
    "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
    "<think>\nhmm, 2+2\n</think>\n\nThe answer is 4.<|im_end|>",
    "<tool_call>\n{\"name\": \"f\"}\n</tool_call>", "<|endoftext|>", " <|endoftext|> a<|endoftext|>b",
    "<|user|>\nHello<|end|>\n<|assistant|>\nHi<|end|>  \n", "<|system|> x <|end|>\t\ny",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
    "<|im_start|><|im_end|>", "<|im_start|<|im_end|>|>", "<s</s>>",
    "a" + " " * 300 + "b", "\n" * 40 + "x", " " * 17, "x\t\t\t \n \u00a0y \u00a0 z",
    "123456789 1234567 12 0.5 1,000,000", "don't I'M you'LL He'S we'Re they'VE 'd 'D",
    "\u017f's 's \u212a \u0130stanbul", "\u216b \u00bd \u00b2\u00b3 \u0663\u0664\u0665 \u0e55",
    "\u0085a\u2028b\u2029c spaces\u3000here\u200bzero\ufeffbom",
    "e\u0301 cafe\u0301 \u1100\u1161\u11a8", "\ud55c\uad6d\uc5b4 \u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8",
    "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645 \u0928\u092e\u0938\u094d\u0924\u0947",
    "\U0001f469\u200d\U0001f469\u200d\U0001f467 \U0001f3f3\ufe0f\u200d\U0001f308 \U0001f999\U0001f999",
    "def f(x):\n    return x**2  # comment\r\n\tpass\n", "!!!...???,,,;;;:::---___===+++",
    "<<>> [[ ]] {{ }} $$ ^^ ~~ || \\\\ // ``", "\x01\x02\x7f control \x1b[0m",
    "\u2581leading lower block \u2581\u2581x", "\U00010348 \U0001d11e \U0010fffd",
    read("chat/ollama-chatml.system-user-assistant-user.txt"),
    read("chat/ollama-llama3-instruct.system-user-assistant-user.txt"),
    inp,
]

VOCABS = {
    "llama-spm": os.path.join(testdata, "vocab/ggml-vocab-llama-spm.gguf"),
    "phi-3": os.path.join(testdata, "vocab/ggml-vocab-phi-3.gguf"),
    "gpt-2": os.path.join(testdata, "vocab/ggml-vocab-gpt-2.gguf"),
    "llama-bpe": os.path.join(models_dir, "ggml-vocab-llama-bpe.gguf"),
    "llama-r256": os.path.join(testdata, "llamacpp-refs/llama-r256-f32.gguf"),
    "qwen3-r256": os.path.join(testdata, "llamacpp-refs/qwen3-r256-f32.gguf"),
}

with tempfile.TemporaryDirectory() as tmp:
    VOCABS["qwen3"] = os.path.join(tmp, "qwen3-vocab.gguf")
    qwen3_gguf(VOCABS["qwen3"])
    result = {"generator": "tests/tokenizer/data/make_llamacpp_refs.py with llama-tokenize (llama.cpp 80fb11a)",
              "strings": STRINGS, "vocabs": {}}
    for name, path in VOCABS.items():
        result["vocabs"][name] = {
            "parse_special": [tokenize(path, s, True) for s in STRINGS],
            "plain": [tokenize(path, s, False) for s in STRINGS],
        }
        print(name, "done", file=sys.stderr)
json.dump(result, sys.stdout, ensure_ascii=True, indent=None, separators=(",", ":"))
sys.stdout.write("\n")
