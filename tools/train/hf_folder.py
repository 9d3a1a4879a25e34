"""Writes and reads a Hugging Face Llama folder (config.json, model.safetensors, tokenizer files)."""

import json
import os
import shutil

import safetensors_io
from llama_model import LlamaForCausalLM, LlamaShape

BOS_ID, EOS_ID = 1, 2


def config_json(shape: LlamaShape):
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": shape.vocab_size,
        "hidden_size": shape.hidden_size,
        "intermediate_size": shape.intermediate_size,
        "num_hidden_layers": shape.num_hidden_layers,
        "num_attention_heads": shape.num_attention_heads,
        "num_key_value_heads": shape.num_key_value_heads,
        "head_dim": shape.head_dim,
        "hidden_act": "silu",
        "max_position_embeddings": shape.max_position_embeddings,
        "rms_norm_eps": shape.rms_norm_eps,
        "rope_theta": shape.rope_theta,
        "rope_scaling": None,
        "attention_bias": False,
        "attention_dropout": 0.0,
        "mlp_bias": False,
        "pretraining_tp": 1,
        "initializer_range": 0.02,
        "tie_word_embeddings": shape.tie_word_embeddings,
        "bos_token_id": BOS_ID,
        "eos_token_id": EOS_ID,
        "torch_dtype": "float32",
        "use_cache": True,
    }


# A question-and-answer chat template: the fortunes hold Q:/A: jokes, the nearest thing to
# a dialogue the model has seen. System text goes first as it is; each user turn is a
# "Q:" line, each assistant turn an "A:" line, and the prompt ends with "A:" for the reply.
CHAT_TEMPLATE = ("{% for m in messages %}{% if m.role == 'system' %}{{ m.content }}\n"
                 "{% elif m.role == 'user' %}Q: {{ m.content }}\n"
                 "{% elif m.role == 'assistant' %}A:{{ m.content }}\n{% endif %}{% endfor %}"
                 "{% if add_generation_prompt %}A:{% endif %}")


def tokenizer_config_json(shape: LlamaShape):
    return {
        "tokenizer_class": "LlamaTokenizer",
        "add_bos_token": True,
        "add_eos_token": False,
        "bos_token": "<s>",
        "eos_token": "</s>",
        "unk_token": "<unk>",
        "pad_token": None,
        "clean_up_tokenization_spaces": False,
        "legacy": True,
        "model_max_length": shape.max_position_embeddings,
        "chat_template": CHAT_TEMPLATE,
    }


def _dump(obj, path):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


def write(folder, model: LlamaForCausalLM, tokenizer_model_path, recipe):
    os.makedirs(folder, exist_ok=True)
    shape = model.shape
    _dump(config_json(shape), os.path.join(folder, "config.json"))
    _dump({"bos_token_id": BOS_ID, "eos_token_id": EOS_ID, "do_sample": True, "temperature": 0.8, "top_k": 40},
          os.path.join(folder, "generation_config.json"))
    _dump(tokenizer_config_json(shape), os.path.join(folder, "tokenizer_config.json"))
    _dump({"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"},
          os.path.join(folder, "special_tokens_map.json"))
    shutil.copyfile(tokenizer_model_path, os.path.join(folder, "tokenizer.model"))
    safetensors_io.save(model.hf_state_dict(), os.path.join(folder, "model.safetensors"), {"format": "pt"})
    _dump(recipe, os.path.join(folder, "recipe.json"))


def read(folder):
    """Loads the folder back into a fresh model (eval mode) from config.json and model.safetensors only."""
    with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    shape = LlamaShape(vocab_size=cfg["vocab_size"], hidden_size=cfg["hidden_size"],
                       intermediate_size=cfg["intermediate_size"], num_hidden_layers=cfg["num_hidden_layers"],
                       num_attention_heads=cfg["num_attention_heads"],
                       num_key_value_heads=cfg["num_key_value_heads"],
                       max_position_embeddings=cfg["max_position_embeddings"], rms_norm_eps=cfg["rms_norm_eps"],
                       rope_theta=cfg["rope_theta"], tie_word_embeddings=cfg["tie_word_embeddings"])
    model = LlamaForCausalLM(shape)
    tensors, _ = safetensors_io.load(os.path.join(folder, "model.safetensors"))
    model.load_hf_state_dict(tensors)
    model.eval()
    return model
