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
    if (s.n_layers < 1) fail(INLAY_ERR_SHAPE_MISMATCH, "a decoder needs at least one layer, not {}", s.n_layers);
    token_embd_ = backend_.upload_matrix(require_shape(src, "token_embd.weight", {s.n_embd, s.n_vocab}));
    output_norm_ = backend_.upload_vector(require_shape(src, "output_norm.weight", {s.n_embd}));
    if (src.find("output.weight")) {
        spec_.tied_output = false;
        output_ = backend_.upload_matrix(require_shape(src, "output.weight", {s.n_embd, s.n_vocab}));
    } else {
        spec_.tied_output = true;
        output_ = token_embd_;
    }
    if (src.find("rope_freqs.weight")) {
        const TensorView& t = require_shape(src, "rope_freqs.weight", {s.n_rot / 2});
        if (t.type != DType::F32) fail(INLAY_ERR_UNSUPPORTED, "tensor 'rope_freqs.weight' must be f32");
        rope_freq_factors_ = backend_.upload_vector(t);
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
    // The activations below (the backend's scratch aside): an absurd batch size is refused
    // before it is allocated, not found out by the allocator or the OOM killer.
    const double floats =
        static_cast<double>(max_tokens) *
            static_cast<double>(2 * s.n_embd + wide + 2 * s.q_dim() + 2 * s.kv_dim() + 2 * s.n_ff) +
        static_cast<double>(max_logit_rows) * static_cast<double>(2 * s.n_embd + s.n_vocab);
    const size_t total = backend_.memory_info().total_bytes;
    if (total > 0 && floats * sizeof(float) > static_cast<double>(total))
        fail(INLAY_ERR_OUT_OF_MEMORY,
             "a forward pass of {} tokens ({} logit rows) needs {:.0f} bytes of activations, more than the {} bytes "
             "of memory of the device: lower the batch size",
             max_tokens, max_logit_rows, floats * sizeof(float), total);
    ws.x = backend_.alloc(max_tokens * s.n_embd);
    ws.y = backend_.alloc(max_tokens * s.n_embd);
    ws.xn = backend_.alloc(max_tokens * wide);
    ws.q = backend_.alloc(max_tokens * s.q_dim());
    ws.k = backend_.alloc(max_tokens * s.kv_dim());
    ws.v = backend_.alloc(max_tokens * s.kv_dim());
    ws.attn = backend_.alloc(max_tokens * s.q_dim());
    ws.ffn = backend_.alloc(max_tokens * s.n_ff);
    ws.rows = backend_.alloc(max_logit_rows * s.n_embd * 2);
    ws.logits = backend_.alloc(max_logit_rows * s.n_vocab);
    ws.scratch = backend_.alloc_scratch(ScratchShape{max_tokens, wide, s.n_ff, s.n_heads, s.head_dim});
    return ws;
}

template <Backend B>
void Decoder<B>::forward(const BatchDesc& batch, typename B::KvStorage& kv, Workspace& ws, float* logits_out,
                         int32_t* ids_out, const SampleRows* sampling) const {
    if (ws.unread_ids != 0)
        fail(INLAY_ERR_INTERNAL, "forward: {} launched pass(es) of this workspace not finished", ws.unread_ids);
    if (batch.n_tokens() == 0) return;
    run(batch, kv, ws, ids_out != nullptr, sampling);
    const int64_t n_rows = batch.n_logit_rows();
    if (n_rows == 0) return;
    if (ids_out) read_ids(ws, n_rows, ids_out);
    if (logits_out) backend_.read(ws.logits, 0, n_rows * spec_.n_vocab, logits_out);
}

template <Backend B>
void Decoder<B>::launch(const BatchDesc& batch, typename B::KvStorage& kv, Workspace& ws,
                        const SampleRows* sampling) const {
    if (batch.n_tokens() == 0) fail(INLAY_ERR_INTERNAL, "launch: an empty batch");
    if (batch.n_logit_rows() == 0) fail(INLAY_ERR_INTERNAL, "launch: a pass that chooses no ids");
    run(batch, kv, ws, true, sampling);
}

template <Backend B>
void Decoder<B>::read_ids(Workspace& ws, int64_t n_rows, int32_t* ids) const {
    if (ws.unread_ids == 0) fail(INLAY_ERR_INTERNAL, "read_ids: no pass of this workspace waits");
    --ws.unread_ids;  // the backend frees the slot whether the read succeeds or not
    backend_.read_ids(ws.scratch, n_rows, ids);
}

template <Backend B>
void Decoder<B>::run(const BatchDesc& batch, typename B::KvStorage& kv, Workspace& ws, bool want_ids,
                     const SampleRows* sampling) const {
    const DecoderSpec& s = spec_;
    const int64_t n = batch.n_tokens();
    const int64_t n_rows = batch.n_logit_rows();
    B& b = backend_;
    const KvGeometry& g = kv.geometry();
    if (g != kv_geometry(g.block_size, g.dtype)) fail(INLAY_ERR_INTERNAL, "forward: KV storage of another model");
    b.prepare_batch(batch,
                    BatchLimits{s.n_vocab, g.block_size, kv.n_blocks(), ws.capacity, ws.logit_capacity,
                                ws.latest_id_rows},
                    ws.batch);
    const bool fed = batch.has_fed_tokens();
    const RopeParams rope{s.rope_style, s.n_rot, s.rope_freq_base, s.rope_freq_scale};
    const Weight* freq_factors = rope_freq_factors_ ? &*rope_freq_factors_ : nullptr;
    const float attn_scale = s.attention_scale();

    // The step's ops, up to the logits; the outputs are read after them.
    auto ops = [&] {
        if (fed) b.feed_tokens(ws.batch, ws.scratch);
        b.embed(token_embd_, ws.batch, ws.x);
        b.rms_norm(ws.x, layers_[0].attn_norm, s.rms_eps, n, s.n_embd, ws.xn);
        for (int64_t l = 0; l < s.n_layers; ++l) {
            const Layer& L = layers_[static_cast<size_t>(l)];
            // attention block (its input norm was fused with the previous residual add)
            b.matmul_qkv(L.wq, L.wk, L.wv, ws.xn, n, ws.q, ws.k, ws.v, ws.scratch);
            b.rope_kv_append(ws.q, ws.k, ws.v, L.q_norm ? &*L.q_norm : nullptr, L.k_norm ? &*L.k_norm : nullptr,
                             s.rms_eps, rope, freq_factors, kv, l, s.n_heads, ws.batch);
            b.attention(ws.q, kv, l, ws.batch, s.n_heads, attn_scale, ws.attn, ws.scratch);
            b.matmul(L.wo, ws.attn, n, ws.y, ws.scratch);
            b.add_rms_norm(ws.x, ws.y, L.ffn_norm, s.rms_eps, n, s.n_embd, ws.xn);
            // feed-forward block (SwiGLU)
            b.matmul_swiglu(L.w_gate, L.w_up, ws.xn, n, ws.ffn, ws.scratch);
            b.matmul(L.w_down, ws.ffn, n, ws.y, ws.scratch);
            if (l + 1 < s.n_layers)
                b.add_rms_norm(ws.x, ws.y, layers_[static_cast<size_t>(l) + 1].attn_norm, s.rms_eps, n, s.n_embd,
                               ws.xn);
            else
                b.add(ws.x, ws.y, n * s.n_embd);
        }
        if (n_rows == 0) return;
        // Only the rows whose logits are wanted go through the (vocabulary-wide) output.
        b.gather_logit_rows(ws.x, ws.batch, s.n_embd, ws.xn);
        b.rms_norm(ws.xn, output_norm_, s.rms_eps, n_rows, s.n_embd, ws.rows);
        b.matmul(output_, ws.rows, n_rows, ws.logits, ws.scratch);
    };
    try {
        if constexpr (StepGraphBackend<B>) {
            // Recorded and launched as one graph where the backend can (CUDA graphs).
            const bool replay = b.graph_begin(ws.batch, kv, ws.scratch);  // true: launched as last recorded
            try {
                if (!replay) ops();
                b.graph_end(ws.batch);
            } catch (...) {
                // A recording still open is discarded; one the device invalidated makes the step
                // one to retry (graph_end's own StepRetry passes through as it is).
                if (b.graph_abort(ws.batch)) throw StepRetry("a step's ops could not be recorded");
                throw;
            }
        } else {
            ops();
        }
    } catch (const StepRetry&) {
        throw;  // nothing ran: the same pass is made again, fed from the same ids
    } catch (...) {
        ws.latest_id_rows = 0;
        throw;
    }
    // The scratch's ids stop being the ones a next pass may take: this pass's replace
    // them, and after a pass without ids nothing may feed from older ones.
    ws.latest_id_rows = 0;
    if (n_rows == 0 || !want_ids) return;
    if (sampling) b.sample_rows(ws.logits, n_rows, s.n_vocab, *sampling, ws.scratch);
    else b.argmax_rows(ws.logits, n_rows, s.n_vocab, ws.scratch);
    ++ws.unread_ids;
    ws.latest_id_rows = n_rows;
}

}  // namespace inlay
