"""A Hugging Face-compatible Llama decoder in plain torch (no transformers package).

Parameter names and conventions follow transformers' LlamaForCausalLM so that the
state dict written by safetensors_io.py is a genuine HF checkpoint:
RMSNorm in float32, RoPE applied with rotate_half ("neox" pairs i and i + d/2) to
unpermuted q/k projections, SwiGLU MLP, causal attention with grouped KV heads,
optionally tied input/output embeddings.
"""

import math
from dataclasses import dataclass, asdict

import torch
from torch import nn
import torch.nn.functional as F


@dataclass
class LlamaShape:
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    max_position_embeddings: int
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    tie_word_embeddings: bool = True

    @property
    def head_dim(self):
        return self.hidden_size // self.num_attention_heads

    def to_dict(self):
        return asdict(self)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        # Normalise in float32 as HF does, whatever the activation dtype.
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * xf.to(x.dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rope_tables(head_dim, n_pos, theta, device=None):
    """cos/sin tables [n_pos, head_dim] in HF layout (frequencies repeated for both halves)."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32, device=device) / head_dim))
    pos = torch.arange(n_pos, dtype=torch.float32, device=device)
    freqs = torch.outer(pos, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


class Attention(nn.Module):
    def __init__(self, s: LlamaShape):
        super().__init__()
        self.n_head = s.num_attention_heads
        self.n_kv = s.num_key_value_heads
        self.hd = s.head_dim
        self.q_proj = nn.Linear(s.hidden_size, self.n_head * self.hd, bias=False)
        self.k_proj = nn.Linear(s.hidden_size, self.n_kv * self.hd, bias=False)
        self.v_proj = nn.Linear(s.hidden_size, self.n_kv * self.hd, bias=False)
        self.o_proj = nn.Linear(self.n_head * self.hd, s.hidden_size, bias=False)

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.n_head, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.n_kv, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.n_kv, self.hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if self.n_kv != self.n_head:
            rep = self.n_head // self.n_kv
            k = k.repeat_interleave(rep, dim=1)
            v = v.repeat_interleave(rep, dim=1)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.hd)
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
        y = F.softmax(scores.float(), dim=-1).to(q.dtype) @ v
        return self.o_proj(y.transpose(1, 2).reshape(b, t, self.n_head * self.hd))


class Mlp(nn.Module):
    def __init__(self, s: LlamaShape):
        super().__init__()
        self.gate_proj = nn.Linear(s.hidden_size, s.intermediate_size, bias=False)
        self.up_proj = nn.Linear(s.hidden_size, s.intermediate_size, bias=False)
        self.down_proj = nn.Linear(s.intermediate_size, s.hidden_size, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, s: LlamaShape):
        super().__init__()
        self.input_layernorm = RMSNorm(s.hidden_size, s.rms_norm_eps)
        self.self_attn = Attention(s)
        self.post_attention_layernorm = RMSNorm(s.hidden_size, s.rms_norm_eps)
        self.mlp = Mlp(s)

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaBody(nn.Module):
    def __init__(self, s: LlamaShape):
        super().__init__()
        self.embed_tokens = nn.Embedding(s.vocab_size, s.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(s) for _ in range(s.num_hidden_layers))
        self.norm = RMSNorm(s.hidden_size, s.rms_norm_eps)


class LlamaForCausalLM(nn.Module):
    def __init__(self, s: LlamaShape):
        super().__init__()
        self.shape = s
        self.model = LlamaBody(s)
        self.lm_head = nn.Linear(s.hidden_size, s.vocab_size, bias=False)
        if s.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight
        cos, sin = rope_tables(s.head_dim, s.max_position_embeddings, s.rope_theta)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)

    def init_weights(self, generator):
        """GPT-2 style init: N(0, 0.02), residual output projections scaled by 1/sqrt(2 * layers)."""
        std = 0.02
        resid_std = std / math.sqrt(2 * self.shape.num_hidden_layers)
        with torch.no_grad():
            for name, p in self.named_parameters():
                if name.endswith("layernorm.weight") or name == "model.norm.weight":
                    p.fill_(1.0)
                elif name.endswith("o_proj.weight") or name.endswith("down_proj.weight"):
                    p.normal_(0.0, resid_std, generator=generator)
                else:
                    p.normal_(0.0, std, generator=generator)

    def forward(self, ids):
        t = ids.shape[1]
        if t > self.shape.max_position_embeddings:
            raise ValueError(f"sequence of {t} tokens exceeds max_position_embeddings")
        cos = self.rope_cos[:t]
        sin = self.rope_sin[:t]
        x = self.model.embed_tokens(ids)
        for layer in self.model.layers:
            x = layer(x, cos, sin)
        return self.lm_head(self.model.norm(x))

    def hf_state_dict(self):
        """Tensors under HF names; lm_head is left out when tied, as transformers saves it."""
        sd = {k: v.detach().contiguous() for k, v in self.state_dict().items()}
        if self.shape.tie_word_embeddings:
            sd.pop("lm_head.weight", None)
        return sd

    def load_hf_state_dict(self, sd):
        sd = dict(sd)
        if self.shape.tie_word_embeddings:
            sd["lm_head.weight"] = sd["model.embed_tokens.weight"]
        self.load_state_dict(sd, strict=True)
