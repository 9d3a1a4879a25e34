#include "support/gguf_fixtures.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "core/half.h"
#include "io/gguf_writer.h"

namespace inlay::test {

GgufBytes& GgufBytes::str_declared(uint64_t declared_length, std::string_view s) {
    u64(declared_length);
    return raw(s);
}

GgufBytes& GgufBytes::raw(std::string_view s) {
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    bytes_.insert(bytes_.end(), p, p + s.size());
    return *this;
}

GgufBytes& GgufBytes::raw(std::span<const std::byte> b) {
    bytes_.insert(bytes_.end(), b.begin(), b.end());
    return *this;
}

GgufBytes& GgufBytes::zeros(size_t n) {
    bytes_.insert(bytes_.end(), n, std::byte{0});
    return *this;
}

GgufBytes& GgufBytes::pad_to(uint64_t alignment) {
    while (bytes_.size() % alignment != 0) bytes_.push_back(std::byte{0});
    return *this;
}

GgufBytes& GgufBytes::header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    return raw("GGUF").u32(version).u64(n_tensors).u64(n_kv);
}

GgufBytes& GgufBytes::kv_i32_array(std::string_view key, const std::vector<int32_t>& v) {
    str(key).u32(9).u32(5).u64(v.size());
    for (int32_t x : v) i32(x);
    return *this;
}

GgufBytes& GgufBytes::kv_string_array(std::string_view key, const std::vector<std::string>& v) {
    str(key).u32(9).u32(8).u64(v.size());
    for (const auto& s : v) str(s);
    return *this;
}

namespace {

void put_int(GgufBytes& b, ValueType type, int64_t v) {
    switch (type) {
        case ValueType::U8: case ValueType::BOOL: b.u8(static_cast<uint8_t>(v)); break;
        case ValueType::I8: b.u8(static_cast<uint8_t>(static_cast<int8_t>(v))); break;
        case ValueType::U16: b.u16(static_cast<uint16_t>(v)); break;
        case ValueType::I16: b.u16(static_cast<uint16_t>(static_cast<int16_t>(v))); break;
        case ValueType::U32: b.u32(static_cast<uint32_t>(v)); break;
        case ValueType::I32: b.i32(static_cast<int32_t>(v)); break;
        case ValueType::U64: b.u64(static_cast<uint64_t>(v)); break;
        default: b.i64(v); break;
    }
}

void put_float(GgufBytes& b, ValueType type, double v) {
    if (type == ValueType::F32) b.f32(static_cast<float>(v));
    else b.f64(v);
}

}  // namespace

GgufBytes& GgufBytes::kv(std::string_view key, const MetadataValue& v) {
    str(key).u32(static_cast<uint32_t>(v.type));
    if (const auto* u = std::get_if<uint64_t>(&v.value)) {
        u64(*u);
    } else if (const auto* d = std::get_if<double>(&v.value)) {
        put_float(*this, v.type, *d);
    } else if (const auto* s = std::get_if<std::string>(&v.value)) {
        str(*s);
    } else if (const auto* a = std::get_if<MetadataArray>(&v.value)) {
        u32(static_cast<uint32_t>(a->elem_type)).u64(a->size());
        if (a->elem_type == ValueType::STRING) {
            for (const auto& e : a->strings) str(e);
        } else if (a->elem_type == ValueType::F32 || a->elem_type == ValueType::F64) {
            for (double e : a->floats) put_float(*this, a->elem_type, e);
        } else {
            for (int64_t e : a->ints) put_int(*this, a->elem_type, e);
        }
    } else {
        put_int(*this, v.type, std::get<int64_t>(v.value));
    }
    return *this;
}

GgufBytes& GgufBytes::tensor_info(std::string_view name, const std::vector<uint64_t>& dims, uint32_t type,
                                  uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) u64(d);
    return u32(type).u64(offset);
}

GgufBytes& GgufBytes::mark(const std::string& name) {
    marks_[name] = bytes_.size();
    return *this;
}

std::vector<std::byte> GgufBytes::prefix(size_t n) const {
    return {bytes_.begin(), bytes_.begin() + static_cast<std::ptrdiff_t>(std::min(n, bytes_.size()))};
}

// ---------------------------------------------------------------------------------

namespace {

template <class T>
void append(std::vector<std::byte>& out, T v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    out.insert(out.end(), p, p + sizeof(T));
}

void encode_q8_0(std::vector<std::byte>& out, std::span<const float> x) {
    float amax = 0.0f;
    for (float v : x) amax = std::max(amax, std::fabs(v));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    append(out, f32_to_f16_portable(d));
    for (float v : x) append(out, static_cast<int8_t>(std::lround(v * id)));
}

void encode_q4_0(std::vector<std::byte>& out, std::span<const float> x) {
    // llama.cpp's reference: the value of largest magnitude maps to -8.
    float amax = 0.0f;
    float max = 0.0f;
    for (float v : x) {
        if (std::fabs(v) > amax) {
            amax = std::fabs(v);
            max = v;
        }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    append(out, f32_to_f16_portable(d));
    for (size_t j = 0; j < 16; ++j) {
        const int lo = std::min(15, static_cast<int>(static_cast<int8_t>(x[j] * id + 8.5f)));
        const int hi = std::min(15, static_cast<int>(static_cast<int8_t>(x[j + 16] * id + 8.5f)));
        append(out, static_cast<uint8_t>(lo | (hi << 4)));
    }
}

void encode_q1_0(std::vector<std::byte>& out, std::span<const float> x) {
    // Summed in float, in order, as llama.cpp's reference does (d must round the same way).
    float sum = 0.0f;
    for (float v : x) sum += std::fabs(v);
    append(out, f32_to_f16_portable(sum / static_cast<float>(x.size())));
    for (size_t byte = 0; byte < 16; ++byte) {
        uint8_t bits = 0;
        for (size_t b = 0; b < 8; ++b) {
            if (x[byte * 8 + b] >= 0.0f) bits = static_cast<uint8_t>(bits | (1u << b));
        }
        append(out, bits);
    }
}

uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

uint64_t fnv1a(std::string_view s) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ULL;
    return h;
}

// n uniform values in [center - scale, center + scale), from a stream seeded by the
// model seed and the tensor name (so a tensor does not change when others do).
std::vector<float> random_values(uint64_t seed, std::string_view name, size_t n, float center, float scale) {
    uint64_t state = seed ^ fnv1a(name);
    std::vector<float> v(n);
    for (auto& x : v) {
        const float u = static_cast<float>(splitmix64(state) >> 40) * (1.0f / 16777216.0f);  // [0, 1), exact
        x = center + scale * (2.0f * u - 1.0f);
    }
    return v;
}

uint32_t file_type_of(DType t) {
    switch (t) {
        case DType::F32: return 0;
        case DType::F16: return 1;
        case DType::Q4_0: return 2;
        case DType::Q8_0: return 7;
        case DType::BF16: return 32;
        case DType::Q1_0: return 40;
        default: return 0;
    }
}

MetadataValue u32v(int64_t v) { return MetadataValue::from_int(ValueType::U32, v); }

}  // namespace

std::vector<std::byte> encode_fixture_weights(DType type, std::span<const float> values) {
    std::vector<std::byte> out;
    const int64_t block = dtype_traits(type).block_elems;
    if (static_cast<int64_t>(values.size()) % block != 0) {
        throw std::invalid_argument(fmt::format("{} values are not whole {} blocks", values.size(), dtype_name(type)));
    }
    out.reserve(values.size() / static_cast<size_t>(block) * dtype_traits(type).block_bytes);
    for (size_t i = 0; i < values.size(); i += static_cast<size_t>(block)) {
        const auto blk = values.subspan(i, static_cast<size_t>(block));
        switch (type) {
            case DType::F32: append(out, blk[0]); break;
            case DType::F16: append(out, f32_to_f16_portable(blk[0])); break;
            case DType::BF16: append(out, f32_to_bf16(blk[0])); break;
            case DType::Q8_0: encode_q8_0(out, blk); break;
            case DType::Q4_0: encode_q4_0(out, blk); break;
            case DType::Q1_0: encode_q1_0(out, blk); break;
            default: throw std::invalid_argument(fmt::format("fixtures cannot encode {}", dtype_name(type)));
        }
    }
    return out;
}

std::vector<std::string> tiny_llama_vocab(int64_t n_vocab) {
    if (n_vocab < 259) throw std::invalid_argument("tiny llama vocabularies need at least 259 tokens");
    std::vector<std::string> v = {"<unk>", "<s>", "</s>"};
    for (int b = 0; b < 256; ++b) v.push_back(fmt::format("<0x{:02X}>", b));
    const std::string space = "\xe2\x96\x81";  // U+2581, SentencePiece's space
    const std::string letters = "etaoinshrdlcumwfgypbvkjxqz";
    const auto n = static_cast<size_t>(n_vocab);
    if (v.size() < n) v.push_back(space);
    // Strings of length 1, 2, 3... over `letters`, each followed by its "▁" form.
    std::vector<std::string> level = {""};
    while (v.size() < n) {
        std::vector<std::string> next;
        for (const auto& prefix : level) {
            for (char c : letters) next.push_back(prefix + c);
        }
        for (const auto& s : next) {
            if (v.size() < n) v.push_back(s);
            if (v.size() < n) v.push_back(space + s);
        }
        level = std::move(next);
    }
    return v;
}

TinyModel make_tiny_llama(const TinyLlamaOptions& o) {
    if (o.n_embd <= 0 || o.n_heads <= 0 || o.n_kv_heads <= 0 || o.n_layers <= 0 || o.n_ff <= 0 || o.context <= 0) {
        throw std::invalid_argument("tiny llama sizes must be positive");
    }
    if (o.n_embd % o.n_heads != 0 || o.n_heads % o.n_kv_heads != 0 || (o.n_embd / o.n_heads) % 2 != 0) {
        throw std::invalid_argument("tiny llama: n_embd % n_heads, n_heads % n_kv_heads and head_dim % 2 must be 0");
    }
    const int64_t block = dtype_traits(o.weight_type).block_elems;
    if (o.n_embd % block != 0 || o.n_ff % block != 0) {
        throw std::invalid_argument(fmt::format("tiny llama: n_embd and n_ff must be multiples of the {} block ({})",
                                                dtype_name(o.weight_type), block));
    }
    const int64_t head_dim = o.n_embd / o.n_heads;
    const std::vector<std::string> vocab = tiny_llama_vocab(o.n_vocab);

    TinyModel m;
    auto key = [&](std::string k, MetadataValue v) { m.metadata.emplace_back(std::move(k), std::move(v)); };
    key("general.architecture", MetadataValue::from_string("llama"));
    key("general.name", MetadataValue::from_string("tiny-llama"));
    key("general.file_type", u32v(file_type_of(o.weight_type)));
    key("llama.context_length", u32v(o.context));
    key("llama.embedding_length", u32v(o.n_embd));
    key("llama.block_count", u32v(o.n_layers));
    key("llama.feed_forward_length", u32v(o.n_ff));
    key("llama.attention.head_count", u32v(o.n_heads));
    key("llama.attention.head_count_kv", u32v(o.n_kv_heads));
    key("llama.rope.dimension_count", u32v(head_dim));
    key("llama.rope.freq_base", MetadataValue::from_float(ValueType::F32, o.rope_freq_base));
    key("llama.attention.layer_norm_rms_epsilon", MetadataValue::from_float(ValueType::F32, o.rms_eps));
    key("llama.vocab_size", u32v(o.n_vocab));
    key("tokenizer.ggml.model", MetadataValue::from_string("llama"));
    MetadataArray tokens{ValueType::STRING, {}, {}, vocab};
    MetadataArray scores{ValueType::F32, {}, {}, {}};
    MetadataArray types{ValueType::I32, {}, {}, {}};
    for (size_t i = 0; i < vocab.size(); ++i) {
        const bool piece = i >= 259;
        scores.floats.push_back(piece ? -static_cast<double>(i - 259) : 0.0);
        types.ints.push_back(i == 0 ? 2 : i < 3 ? 3 : i < 259 ? 6 : 1);  // unknown, control, byte, normal
    }
    key("tokenizer.ggml.tokens", MetadataValue::from_array(std::move(tokens)));
    key("tokenizer.ggml.scores", MetadataValue::from_array(std::move(scores)));
    key("tokenizer.ggml.token_type", MetadataValue::from_array(std::move(types)));
    key("tokenizer.ggml.bos_token_id", u32v(1));
    key("tokenizer.ggml.eos_token_id", u32v(2));
    key("tokenizer.ggml.unknown_token_id", u32v(0));
    key("tokenizer.ggml.add_bos_token", MetadataValue::from_bool(true));
    key("tokenizer.ggml.add_eos_token", MetadataValue::from_bool(false));

    auto tensor = [&](std::string name, std::vector<int64_t> ne, bool is_norm) {
        const auto n = static_cast<size_t>(ne[0] * (ne.size() > 1 ? ne[1] : 1));
        TinyTensor t;
        t.type = is_norm ? DType::F32 : o.weight_type;
        // Norm gains near 1; matrices with variance about 1/n_in (embeddings: wider).
        const float scale = is_norm ? 0.1f
                            : name == "token_embd.weight" ? 0.5f
                                                          : std::sqrt(3.0f / static_cast<float>(ne[0]));
        t.values = random_values(o.seed, name, n, is_norm ? 1.0f : 0.0f, scale);
        t.data = encode_fixture_weights(t.type, t.values);
        t.name = std::move(name);
        t.ne = std::move(ne);
        m.tensors.push_back(std::move(t));
    };
    const int64_t kv_dim = o.n_kv_heads * head_dim;
    tensor("token_embd.weight", {o.n_embd, o.n_vocab}, false);
    for (int64_t l = 0; l < o.n_layers; ++l) {
        const std::string p = fmt::format("blk.{}.", l);
        tensor(p + "attn_norm.weight", {o.n_embd}, true);
        tensor(p + "attn_q.weight", {o.n_embd, o.n_embd}, false);
        tensor(p + "attn_k.weight", {o.n_embd, kv_dim}, false);
        tensor(p + "attn_v.weight", {o.n_embd, kv_dim}, false);
        tensor(p + "attn_output.weight", {o.n_embd, o.n_embd}, false);
        tensor(p + "ffn_norm.weight", {o.n_embd}, true);
        tensor(p + "ffn_gate.weight", {o.n_embd, o.n_ff}, false);
        tensor(p + "ffn_down.weight", {o.n_ff, o.n_embd}, false);
        tensor(p + "ffn_up.weight", {o.n_embd, o.n_ff}, false);
    }
    tensor("output_norm.weight", {o.n_embd}, true);
    if (!o.tied_output) tensor("output.weight", {o.n_embd, o.n_vocab}, false);
    return m;
}

std::vector<std::byte> make_tiny_llama_gguf(const TinyLlamaOptions& options) {
    return make_tiny_llama(options).to_bytes();
}

MetadataValue* TinyModel::find_key(std::string_view key) {
    for (auto& [k, v] : metadata) {
        if (k == key) return &v;
    }
    return nullptr;
}

void TinyModel::set_key(const std::string& key, MetadataValue value) {
    if (MetadataValue* v = find_key(key)) *v = std::move(value);
    else metadata.emplace_back(key, std::move(value));
}

void TinyModel::remove_key(std::string_view key) {
    std::erase_if(metadata, [&](const auto& kv) { return kv.first == key; });
}

TinyTensor* TinyModel::find_tensor(std::string_view name) {
    for (auto& t : tensors) {
        if (t.name == name) return &t;
    }
    return nullptr;
}

void TinyModel::remove_tensor(std::string_view name) {
    std::erase_if(tensors, [&](const TinyTensor& t) { return t.name == name; });
}

std::vector<std::byte> TinyModel::to_bytes(uint32_t alignment) const {
    GgufWriter w(3, alignment);
    for (const auto& [k, v] : metadata) w.add_metadata(k, v);
    for (const auto& t : tensors) w.add_tensor(t.name, t.type, t.ne, t.data);
    return w.to_bytes();
}

}  // namespace inlay::test
