#include "model/synthetic_weights.h"

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "model/families/family.h"
#include "quant/quantize.h"

namespace inlay {
namespace {

struct NamedShape {
    const char* name;
    DecoderSpec spec;
};

DecoderSpec make_spec(const char* arch, int64_t vocab, int64_t embd, int64_t layers, int64_t heads, int64_t kv_heads,
                      int64_t head_dim, int64_t ff, float theta, bool qk_norm, RopeStyle style) {
    DecoderSpec s;
    s.architecture = arch;
    s.n_vocab = vocab;
    s.n_embd = embd;
    s.n_layers = layers;
    s.n_heads = heads;
    s.n_kv_heads = kv_heads;
    s.head_dim = head_dim;
    s.n_ff = ff;
    s.context_length = 8192;
    s.rms_eps = 1e-5f;
    s.rope_style = style;
    s.n_rot = head_dim;
    s.rope_freq_base = theta;
    s.qk_norm = qk_norm;
    return s;
}

const std::vector<NamedShape>& shapes() {
    static const std::vector<NamedShape> all = {
        {"llama3-8b", make_spec("llama", 128256, 4096, 32, 32, 8, 128, 14336, 500000.0f, false, RopeStyle::normal)},
        {"llama3-1b", make_spec("llama", 128256, 2048, 16, 32, 8, 64, 8192, 500000.0f, false, RopeStyle::normal)},
        {"qwen3-8b", make_spec("qwen3", 151936, 4096, 36, 32, 8, 128, 12288, 1000000.0f, true, RopeStyle::neox)},
        {"qwen3-0.6b", make_spec("qwen3", 151936, 1024, 28, 16, 8, 128, 3072, 1000000.0f, true, RopeStyle::neox)},
        // For tests: runs in milliseconds anywhere.
        {"tiny", make_spec("llama", 1024, 256, 2, 8, 2, 32, 512, 10000.0f, false, RopeStyle::normal)},
    };
    return all;
}

// xorshift64*: fast, deterministic, good enough for weights nobody reads for meaning.
uint64_t next(uint64_t& state) {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 0x2545F4914F6CDD1DULL;
}

}  // namespace

std::optional<DecoderSpec> synthetic_spec(std::string_view shape) {
    for (const NamedShape& s : shapes())
        if (shape == s.name) return s.spec;
    return std::nullopt;
}

std::vector<std::string> synthetic_shape_names() {
    std::vector<std::string> names;
    for (const NamedShape& s : shapes()) names.emplace_back(s.name);
    return names;
}

void SyntheticWeights::add(const std::string& name, DType type, int64_t n_cols, int64_t n_rows, uint64_t seed,
                           float center, float a) {
    const auto stride = row_bytes(type, n_cols);
    if (!stride)
        fail(INLAY_ERR_SHAPE_MISMATCH, "synthetic tensor '{}': rows of {} do not fit {} blocks", name, n_cols,
             dtype_name(type));
    // A set of template rows, quantized once; row r of the matrix copies template
    // (r * 7) mod n_templates.
    const int64_t n_templates = std::min<int64_t>(n_rows, 64);
    std::vector<std::byte> templates(*stride * static_cast<size_t>(n_templates));
    std::vector<float> row(static_cast<size_t>(n_cols));
    uint64_t state = seed * 0x9E3779B97F4A7C15ULL + 1;
    if (a == 0.0f) a = std::sqrt(3.0f / static_cast<float>(n_cols));
    for (int64_t t = 0; t < n_templates; ++t) {
        for (float& v : row)
            v = center + a * (static_cast<float>(next(state) >> 40) / static_cast<float>(1 << 23) - 1.0f);
        quant::quantize_row(type, row.data(), templates.data() + static_cast<size_t>(t) * *stride, n_cols);
    }
    const size_t bytes = *stride * static_cast<size_t>(n_rows);
    std::unique_ptr<std::byte[]> data(new std::byte[bytes]);  // every byte is written below
    for (int64_t r = 0; r < n_rows; ++r)
        std::memcpy(data.get() + static_cast<size_t>(r) * *stride,
                    templates.data() + static_cast<size_t>((r * 7) % n_templates) * *stride, *stride);
    TensorView v;
    v.name = name;
    v.type = type;
    v.n_dims = n_rows == 1 ? 1 : 2;
    v.ne = {n_cols, n_rows, 1, 1};
    v.data = data.get();
    v.nbytes = bytes;
    tensors_.push_back(std::move(v));
    storage_.push_back(std::move(data));
    bytes_ += bytes;
}

SyntheticWeights::SyntheticWeights(const DecoderSpec& s, DType matrix_type, uint64_t seed)
    : origin_("synthetic " + s.architecture) {
    if (s.n_vocab <= 0 || s.n_layers <= 0) fail(INLAY_ERR_INVALID_ARGUMENT, "synthetic weights need a complete spec");
    tensors_.reserve(static_cast<size_t>(3 + 11 * s.n_layers));
    storage_.reserve(tensors_.capacity());
    uint64_t k = seed * 1000;
    add("token_embd.weight", matrix_type, s.n_embd, s.n_vocab, ++k);
    add_norm("output_norm.weight", s.n_embd, ++k);
    add("output.weight", matrix_type, s.n_embd, s.n_vocab, ++k);
    for (int64_t l = 0; l < s.n_layers; ++l) {
        auto name = [&](const char* suffix) { return gguf_layer_tensor(l, suffix); };
        add_norm(name("attn_norm"), s.n_embd, ++k);
        add(name("attn_q"), matrix_type, s.n_embd, s.q_dim(), ++k);
        add(name("attn_k"), matrix_type, s.n_embd, s.kv_dim(), ++k);
        add(name("attn_v"), matrix_type, s.n_embd, s.kv_dim(), ++k);
        add(name("attn_output"), matrix_type, s.q_dim(), s.n_embd, ++k);
        add_norm(name("ffn_norm"), s.n_embd, ++k);
        add(name("ffn_gate"), matrix_type, s.n_embd, s.n_ff, ++k);
        add(name("ffn_up"), matrix_type, s.n_embd, s.n_ff, ++k);
        add(name("ffn_down"), matrix_type, s.n_ff, s.n_embd, ++k);
        if (s.qk_norm) {
            add_norm(name("attn_q_norm"), s.head_dim, ++k);
            add_norm(name("attn_k_norm"), s.head_dim, ++k);
        }
    }
    metadata_.set("general.name", MetadataValue::from_string("synthetic " + s.architecture));
    build_index();
}

}  // namespace inlay
