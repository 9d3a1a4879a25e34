#include "model/families/hf_family.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <numbers>

#include "core/error.h"
#include "model/families/family.h"

namespace inlay {
namespace {

// HF suffix (after "model.layers.N.") -> GGUF suffix (after "blk.N.").
struct LayerName {
    std::string_view hf;
    std::string_view gguf;
};
constexpr LayerName kLayerNames[] = {
    {"input_layernorm.weight", "attn_norm.weight"},    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.k_proj.weight", "attn_k.weight"},      {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.o_proj.weight", "attn_output.weight"}, {"self_attn.q_norm.weight", "attn_q_norm.weight"},
    {"self_attn.k_norm.weight", "attn_k_norm.weight"}, {"post_attention_layernorm.weight", "ffn_norm.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},       {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
};

}  // namespace

Metadata gguf_metadata_from_hf_config(const HfConfig& c, const std::string& name) {
    const std::string& arch = c.model_type;
    Metadata md;
    const auto u32 = [](int64_t v) { return MetadataValue::from_int(ValueType::U32, v); };
    const auto f32 = [](double v) { return MetadataValue::from_float(ValueType::F32, v); };
    const auto key = [&](const char* k) { return fmt::format("{}.{}", arch, k); };
    md.add("general.architecture", MetadataValue::from_string(arch));
    md.add("general.name", MetadataValue::from_string(name));
    md.add(key("vocab_size"), u32(c.vocab_size));
    md.add(key("context_length"), u32(c.max_position_embeddings));
    md.add(key("embedding_length"), u32(c.hidden_size));
    md.add(key("block_count"), u32(c.num_hidden_layers));
    md.add(key("feed_forward_length"), u32(c.intermediate_size));
    md.add(key("attention.head_count"), u32(c.num_attention_heads));
    md.add(key("attention.head_count_kv"), u32(c.num_key_value_heads));
    md.add(key("attention.key_length"), u32(c.head_dim));
    md.add(key("attention.value_length"), u32(c.head_dim));
    md.add(key("rope.dimension_count"), u32(c.head_dim));
    md.add(key("rope.freq_base"), f32(c.rope_theta));
    md.add(key("attention.layer_norm_rms_epsilon"), f32(c.rms_norm_eps));
    if (c.rope_scaling && c.rope_scaling->type == "linear") {
        md.add(key("rope.scaling.type"), MetadataValue::from_string("linear"));
        md.add(key("rope.scaling.factor"), f32(c.rope_scaling->factor));
    }
    return md;
}

DecoderSpec spec_from_hf_config(const HfConfig& c, bool rows_permuted) {
    DecoderSpec s = spec_from_gguf_metadata(gguf_metadata_from_hf_config(c, ""));
    s.n_vocab = c.vocab_size;
    if (s.architecture == "llama" && !rows_permuted) s.rope_style = RopeStyle::neox;
    s.tied_output = c.tie_word_embeddings;
    s.has_rope_freq_factors = c.rope_scaling && c.rope_scaling->type == "llama3";
    return s;
}

std::string gguf_name_of_hf_tensor(std::string_view n) {
    if (n == "model.embed_tokens.weight") return "token_embd.weight";
    if (n == "model.norm.weight") return "output_norm.weight";
    if (n == "lm_head.weight") return "output.weight";
    constexpr std::string_view prefix = "model.layers.";
    if (!n.starts_with(prefix)) return "";
    n.remove_prefix(prefix.size());
    const size_t dot = n.find('.');
    if (dot == std::string_view::npos || dot == 0 || dot > 6 || (n[0] == '0' && dot > 1)) return "";
    for (size_t i = 0; i < dot; ++i)
        if (n[i] < '0' || n[i] > '9') return "";
    int64_t layer = 0;
    const auto [end, ec] = std::from_chars(n.data(), n.data() + dot, layer);
    if (ec != std::errc() || end != n.data() + dot) return "";
    const std::string_view rest = n.substr(dot + 1);
    for (const auto& m : kLayerNames)
        if (rest == m.hf) return fmt::format("blk.{}.{}", layer, m.gguf);
    return "";
}

std::vector<float> llama3_rope_freq_factors(const HfRopeScaling& s, double rope_theta, int64_t n_rot) {
    if (n_rot <= 0 || n_rot % 2 != 0)
        fail(INLAY_ERR_INVALID_ARGUMENT, "llama3 RoPE factors: n_rot {} is not a positive even number", n_rot);
    const auto old_context = static_cast<double>(s.original_max_position_embeddings);
    const double low_freq_wavelen = old_context / s.low_freq_factor;
    const double high_freq_wavelen = old_context / s.high_freq_factor;
    std::vector<float> factors(static_cast<size_t>(n_rot / 2));
    for (size_t i = 0; i < factors.size(); ++i) {
        const double freq = std::pow(rope_theta, -2.0 * static_cast<double>(i) / static_cast<double>(n_rot));
        const double wavelen = 2.0 * std::numbers::pi / freq;
        double factor = 1.0;
        if (wavelen > low_freq_wavelen) {
            factor = s.factor;
        } else if (wavelen >= high_freq_wavelen) {
            const double smooth =
                (old_context / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
            factor = 1.0 / ((1.0 - smooth) / s.factor + smooth);
        }
        factors[i] = static_cast<float>(factor);
    }
    return factors;
}

void permute_rows_for_normal_rope(const std::byte* src, std::byte* dst, int64_t n_heads, int64_t head_dim,
                                  size_t row_bytes) {
    if (head_dim % 2 != 0) fail(INLAY_ERR_INVALID_ARGUMENT, "cannot permute heads of odd size {}", head_dim);
    const int64_t half = head_dim / 2;
    for (int64_t h = 0; h < n_heads; ++h) {
        for (int64_t j = 0; j < half; ++j) {
            for (int64_t s = 0; s < 2; ++s) {
                const auto to = static_cast<size_t>(h * head_dim + 2 * j + s);
                const auto from = static_cast<size_t>(h * head_dim + s * half + j);
                std::memcpy(dst + to * row_bytes, src + from * row_bytes, row_bytes);
            }
        }
    }
}

}  // namespace inlay
