// Definitions of Decoder<B>; included by the one .cpp per backend that instantiates it.
#pragma once

#include <algorithm>
#include <array>
#include <cstring>

#include <fmt/format.h>

#include "core/error.h"
#include "model/decoder.h"
#include "model/families/family.h"
#include "quant/quantize.h"

namespace inlay {
namespace detail {

inline std::string shape_string(const TensorView& t) {
    std::string s = "[";
    for (int i = 0; i < t.n_dims; ++i) s += fmt::format("{}{}", i ? ", " : "", t.ne[static_cast<size_t>(i)]);
    return s + "]";
}

// The tensor must exist with exactly these dims (ggml order).
inline const TensorView& require_shape(const WeightSource& src, const std::string& name,
                                       std::initializer_list<int64_t> dims) {
    const TensorView& t = src.require(name);
    bool ok = t.n_dims == static_cast<int>(dims.size());
    size_t i = 0;
    for (int64_t d : dims) ok = ok && t.ne[i++] == d;
    for (; ok && i < 4; ++i) ok = t.ne[i] == 1;
    if (!ok) {
        std::string want = "[";
        i = 0;
        for (int64_t d : dims) want += fmt::format("{}{}", i++ ? ", " : "", d);
        fail(INLAY_ERR_SHAPE_MISMATCH, "tensor '{}' has shape {}, expected {}]", name, shape_string(t), want);
    }
    return t;
}

}  // namespace detail

template <Backend B>
Decoder<B>::Decoder(B& backend, const DecoderSpec& spec, const WeightSource& src) : backend_(backend), spec_(spec) {
    const DecoderSpec& s = spec_;
    using detail::require_shape;
    token_embd_ = backend_.upload_matrix(require_shape(src, "token_embd.weight", {s.n_embd, s.n_vocab}));
    output_norm_ = backend_.upload_vector(require_shape(src, "output_norm.weight", {s.n_embd}));
    if (src.find("output.weight")) {
        spec_.tied_output = false;
        output_ = backend_.upload_matrix(require_shape(src, "output.weight", {s.n_embd, s.n_vocab}));
    } else {
        spec_.tied_output = true;
        output_ = token_embd_;
    }
    if (const TensorView* f = src.find("rope_freqs.weight")) {
        const TensorView& t = require_shape(src, "rope_freqs.weight", {s.n_rot / 2});
        if (t.type != DType::F32) fail(INLAY_ERR_UNSUPPORTED, "tensor 'rope_freqs.weight' must be f32");
        rope_freq_factors_.resize(static_cast<size_t>(s.n_rot / 2));
        std::memcpy(rope_freq_factors_.data(), f->data, rope_freq_factors_.size() * sizeof(float));
        spec_.has_rope_freq_factors = true;
    }
    layers_.reserve(static_cast<size_t>(s.n_layers));
    for (int64_t l = 0; l < s.n_layers; ++l) {
        auto name = [&](const char* suffix) { return gguf_layer_tensor(l, suffix); };
        Layer layer;
        layer.attn_norm = backend_.upload_vector(require_shape(src, name("attn_norm"), {s.n_embd}));
        layer.wq = backend_.upload_matrix(require_shape(src, name("attn_q"), {s.n_embd, s.q_dim()}));
        layer.wk = backend_.upload_matrix(require_shape(src, name("attn_k"), {s.n_embd, s.kv_dim()}));
        layer.wv = backend_.upload_matrix(require_shape(src, name("attn_v"), {s.n_embd, s.kv_dim()}));
        layer.wo = backend_.upload_matrix(require_shape(src, name("attn_output"), {s.q_dim(), s.n_embd}));
        layer.ffn_norm = backend_.upload_vector(require_shape(src, name("ffn_norm"), {s.n_embd}));
        layer.w_gate = backend_.upload_matrix(require_shape(src, name("ffn_gate"), {s.n_embd, s.n_ff}));
        layer.w_up = backend_.upload_matrix(require_shape(src, name("ffn_up"), {s.n_embd, s.n_ff}));
        layer.w_down = backend_.upload_matrix(require_shape(src, name("ffn_down"), {s.n_ff, s.n_embd}));
        if (s.qk_norm) {
            layer.q_norm = backend_.upload_vector(require_shape(src, name("attn_q_norm"), {s.head_dim}));
            layer.k_norm = backend_.upload_vector(require_shape(src, name("attn_k_norm"), {s.head_dim}));
        }
        layers_.push_back(std::move(layer));
    }
}

template <Backend B>
KvGeometry Decoder<B>::kv_geometry(int64_t block_size, DType dtype) const {
    return KvGeometry{spec_.n_layers, spec_.n_kv_heads, spec_.head_dim, block_size, dtype};
}

template <Backend B>
typename Decoder<B>::Workspace Decoder<B>::make_workspace(int64_t max_tokens, int64_t max_logit_rows) const {
    const DecoderSpec& s = spec_;
    Workspace ws;
    ws.capacity = max_tokens;
    ws.logit_capacity = max_logit_rows;
    const int64_t wide = std::max({s.n_embd, s.q_dim(), s.n_ff});
    ws.x = backend_.alloc(max_tokens * s.n_embd);
    ws.xn = backend_.alloc(max_tokens * wide);
    ws.q = backend_.alloc(max_tokens * s.q_dim());
    ws.k = backend_.alloc(max_tokens * s.kv_dim());
    ws.v = backend_.alloc(max_tokens * s.kv_dim());
    ws.attn = backend_.alloc(max_tokens * s.q_dim());
    ws.gate = backend_.alloc(max_tokens * s.n_ff);
    ws.up = backend_.alloc(max_tokens * s.n_ff);
    ws.rows = backend_.alloc(max_logit_rows * s.n_embd * 2);
    ws.logits = backend_.alloc(max_logit_rows * s.n_vocab);
    return ws;
}

template <Backend B>
void Decoder<B>::forward(std::span<const int32_t> tokens, const BatchLayout& layout, typename B::KvStorage& kv,
                         Workspace& ws, std::span<const int32_t> logit_rows, float* logits_out) const {
    const DecoderSpec& s = spec_;
    const auto n = static_cast<int64_t>(tokens.size());
    const auto n_rows = static_cast<int64_t>(logit_rows.size());
    if (n == 0) return;
    if (n > ws.capacity || n_rows > ws.logit_capacity || layout.n_tokens() != n)
        fail(INLAY_ERR_INTERNAL, "forward: batch of {} tokens / {} logit rows exceeds the workspace ({} / {})", n,
             n_rows, ws.capacity, ws.logit_capacity);
    B& b = backend_;
    RopeParams rope{s.rope_style, s.n_rot, s.rope_freq_base, s.rope_freq_scale,
                    rope_freq_factors_.empty() ? nullptr : rope_freq_factors_.data()};

    b.embed(token_embd_, tokens, ws.x);
    for (int64_t l = 0; l < s.n_layers; ++l) {
        const Layer& L = layers_[static_cast<size_t>(l)];
        // attention block
        b.rms_norm(ws.x, L.attn_norm, s.rms_eps, n, s.n_embd, ws.xn);
        b.matmul(L.wq, ws.xn, n, ws.q);
        b.matmul(L.wk, ws.xn, n, ws.k);
        b.matmul(L.wv, ws.xn, n, ws.v);
        if (s.qk_norm) {
            b.rms_norm(ws.q, *L.q_norm, s.rms_eps, n * s.n_heads, s.head_dim, ws.q);
            b.rms_norm(ws.k, *L.k_norm, s.rms_eps, n * s.n_kv_heads, s.head_dim, ws.k);
        }
        b.rope(ws.q, s.n_heads, s.head_dim, layout, rope);
        b.rope(ws.k, s.n_kv_heads, s.head_dim, layout, rope);
        b.kv_store(kv, l, ws.k, ws.v, layout);
        b.attention(ws.q, kv, l, layout, s.n_heads, ws.attn);
        b.matmul(L.wo, ws.attn, n, ws.xn);
        b.add(ws.x, ws.xn, n * s.n_embd);
        // feed-forward block (SwiGLU)
        b.rms_norm(ws.x, L.ffn_norm, s.rms_eps, n, s.n_embd, ws.xn);
        b.matmul(L.w_gate, ws.xn, n, ws.gate);
        b.matmul(L.w_up, ws.xn, n, ws.up);
        b.silu_mul(ws.gate, ws.up, n * s.n_ff);
        b.matmul(L.w_down, ws.gate, n, ws.xn);
        b.add(ws.x, ws.xn, n * s.n_embd);
    }
    if (n_rows == 0) return;
    // Only the rows whose logits are wanted go through the (vocabulary-wide) output.
    b.gather_rows(ws.x, logit_rows, s.n_embd, ws.xn);
    b.rms_norm(ws.xn, output_norm_, s.rms_eps, n_rows, s.n_embd, ws.rows);
    b.matmul(output_, ws.rows, n_rows, ws.logits);
    b.read(ws.logits, 0, n_rows * s.n_vocab, logits_out);
}

}  // namespace inlay
