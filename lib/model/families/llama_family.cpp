// The Llama and Qwen3 families as GGUF metadata: general.architecture selects the
// key prefix; the two differ only in the spec fields set at the end.
#include <fmt/format.h>

#include "core/error.h"
#include "core/utf8.h"
#include "model/families/family.h"

namespace inlay {

std::string gguf_layer_tensor(int64_t layer, const char* suffix) { return fmt::format("blk.{}.{}.weight", layer, suffix); }

DecoderSpec spec_from_gguf_metadata(const Metadata& md) {
    const std::string& arch = md.get_string("general.architecture");
    const bool is_qwen3 = arch == "qwen3";
    if (arch != "llama" && !is_qwen3)
        fail(INLAY_ERR_UNSUPPORTED, "architecture {} is not supported (llama, qwen3)", utf8::quoted(arch, '\''));
    auto key = [&](const char* k) { return fmt::format("{}.{}", arch, k); };
    constexpr int64_t kMaxDim = int64_t{1} << 20;  // generous bounds that keep products far from overflow

    DecoderSpec s;
    s.architecture = arch;
    s.n_embd = md.get_int_in(key("embedding_length"), 1, kMaxDim);
    s.n_layers = md.get_int_in(key("block_count"), 1, 4096);
    s.n_ff = md.get_int_in(key("feed_forward_length"), 1, kMaxDim);
    s.n_heads = md.get_int_in(key("attention.head_count"), 1, 16384);
    s.n_kv_heads = md.get_int_in_opt(key("attention.head_count_kv"), 1, 16384).value_or(s.n_heads);
    s.context_length = md.get_int_in(key("context_length"), 1, int64_t{1} << 24);
    s.rms_eps = static_cast<float>(md.get_float(key("attention.layer_norm_rms_epsilon")));
    s.rope_freq_base = static_cast<float>(md.get_float_opt(key("rope.freq_base")).value_or(10000.0));

    if (s.n_heads % s.n_kv_heads != 0)
        fail(INLAY_ERR_BAD_FORMAT, "{} = {} is not a multiple of {} = {}", key("attention.head_count"), s.n_heads,
             key("attention.head_count_kv"), s.n_kv_heads);
    const auto key_length = md.get_int_in_opt(key("attention.key_length"), 1, 65536);
    const auto value_length = md.get_int_in_opt(key("attention.value_length"), 1, 65536);
    if (key_length) {
        s.head_dim = *key_length;
    } else {
        if (s.n_embd % s.n_heads != 0)
            fail(INLAY_ERR_BAD_FORMAT, "{} = {} is not a multiple of {} = {}", key("embedding_length"), s.n_embd,
                 key("attention.head_count"), s.n_heads);
        s.head_dim = s.n_embd / s.n_heads;
    }
    if (value_length && *value_length != s.head_dim)
        fail(INLAY_ERR_UNSUPPORTED, "{} = {} differs from the key length {}", key("attention.value_length"),
             *value_length, s.head_dim);
    s.n_rot = md.get_int_in_opt(key("rope.dimension_count"), 2, s.head_dim).value_or(s.head_dim);
    if (s.n_rot % 2 != 0) fail(INLAY_ERR_BAD_FORMAT, "{} = {} is odd", key("rope.dimension_count"), s.n_rot);
    if (!(s.rms_eps > 0.0f && s.rms_eps < 1.0f))
        fail(INLAY_ERR_BAD_FORMAT, "{} = {} is outside (0, 1)", key("attention.layer_norm_rms_epsilon"), s.rms_eps);
    if (!(s.rope_freq_base > 0.0f)) fail(INLAY_ERR_BAD_FORMAT, "{} must be positive", key("rope.freq_base"));

    if (auto type = md.get_string_opt(key("rope.scaling.type"))) {
        if (*type == "linear") {
            const double factor = md.get_float(key("rope.scaling.factor"));
            if (!(factor >= 1.0)) fail(INLAY_ERR_BAD_FORMAT, "{} = {} must be >= 1", key("rope.scaling.factor"), factor);
            s.rope_freq_scale = static_cast<float>(1.0 / factor);
        } else if (*type != "none") {
            fail(INLAY_ERR_UNSUPPORTED, "{} = {} is not supported", key("rope.scaling.type"), utf8::quoted(*type, '\''));
        }
    }
    if (is_qwen3) {
        s.rope_style = RopeStyle::neox;
        s.qk_norm = true;
    }
    return s;
}

}  // namespace inlay
