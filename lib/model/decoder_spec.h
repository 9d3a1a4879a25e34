// DecoderSpec: one struct describing every supported decoder-only transformer. Family
// differences (Llama, Qwen3, ...) are fields here, never a second forward pass.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "backend/concepts.h"

namespace inlay {

struct DecoderSpec {
    std::string architecture;     // "llama", "qwen3"
    int64_t n_vocab = 0;
    int64_t n_embd = 0;           // residual stream width
    int64_t n_layers = 0;
    int64_t n_heads = 0;          // query heads
    int64_t n_kv_heads = 0;       // key/value heads (GQA: divides n_heads)
    int64_t head_dim = 0;         // per head; Qwen3 sets it apart from n_embd / n_heads
    int64_t n_ff = 0;             // SwiGLU hidden width
    int64_t context_length = 0;   // trained context
    float rms_eps = 1e-5f;
    RopeStyle rope_style = RopeStyle::normal;
    int64_t n_rot = 0;            // rotated dims per head
    float rope_freq_base = 10000.0f;
    float rope_freq_scale = 1.0f; // linear scaling (1 / factor)
    bool has_rope_freq_factors = false;  // llama3 scaling via a rope_freqs tensor
    bool qk_norm = false;         // per-head RMSNorm of q and k before RoPE (Qwen3)
    bool tied_output = false;     // output projection = token embedding

    [[nodiscard]] int64_t q_dim() const { return n_heads * head_dim; }
    [[nodiscard]] int64_t kv_dim() const { return n_kv_heads * head_dim; }
    // Scores are q.k * attention_scale() (every supported family: 1 / sqrt(head_dim)).
    [[nodiscard]] float attention_scale() const { return 1.0f / std::sqrt(static_cast<float>(head_dim)); }
};

}  // namespace inlay
