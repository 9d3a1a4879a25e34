// GGUF test fixtures shared by all test executables:
//  - GgufBytes: a byte builder that can emit any GGUF field, right or wrong (for the
//    malformed corpus and hand-made files);
//  - make_tiny_llama_gguf(): a small, valid, fully loadable Llama model (weights from
//    a seeded generator, an SPM-style vocabulary), and TinyModel, its editable parts.
// Not thread-safe (plain values); deterministic for a given seed on every platform.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "io/metadata.h"

namespace inlay::test {

// Appends little-endian GGUF fields. Every method returns *this for chaining.
class GgufBytes {
public:
    GgufBytes& u8(uint8_t v) { return put(v); }
    GgufBytes& u16(uint16_t v) { return put(v); }
    GgufBytes& u32(uint32_t v) { return put(v); }
    GgufBytes& u64(uint64_t v) { return put(v); }
    GgufBytes& i32(int32_t v) { return put(v); }
    GgufBytes& i64(int64_t v) { return put(v); }
    GgufBytes& f32(float v) { return put(v); }
    GgufBytes& f64(double v) { return put(v); }
    // gguf_string: u64 length + bytes.
    GgufBytes& str(std::string_view s) { return str_declared(s.size(), s); }
    // A string whose declared length may lie about the bytes that follow.
    GgufBytes& str_declared(uint64_t declared_length, std::string_view s);
    GgufBytes& raw(std::string_view s);
    GgufBytes& raw(std::span<const std::byte> b);
    GgufBytes& zeros(size_t n);
    // Zero padding up to the next multiple of `alignment` (of the whole buffer).
    GgufBytes& pad_to(uint64_t alignment);

    // magic "GGUF", version, tensor count, kv count.
    GgufBytes& header(uint32_t version, uint64_t n_tensors, uint64_t n_kv);
    // key + value type + value.
    GgufBytes& kv_u32(std::string_view key, uint32_t v) { return str(key).u32(4).u32(v); }
    GgufBytes& kv_u64(std::string_view key, uint64_t v) { return str(key).u32(10).u64(v); }
    GgufBytes& kv_f32(std::string_view key, float v) { return str(key).u32(6).f32(v); }
    GgufBytes& kv_bool(std::string_view key, uint8_t raw_byte) { return str(key).u32(7).u8(raw_byte); }
    GgufBytes& kv_string(std::string_view key, std::string_view v) { return str(key).u32(8).str(v); }
    GgufBytes& kv_i32_array(std::string_view key, const std::vector<int32_t>& v);
    GgufBytes& kv_string_array(std::string_view key, const std::vector<std::string>& v);
    // Any value, encoded here independently of GgufWriter.
    GgufBytes& kv(std::string_view key, const MetadataValue& v);
    // name + n_dims + dims + type + offset; n_dims is dims.size().
    GgufBytes& tensor_info(std::string_view name, const std::vector<uint64_t>& dims, uint32_t type, uint64_t offset);

    // Records the current size under `name` (for truncating inside a section).
    GgufBytes& mark(const std::string& name);
    [[nodiscard]] size_t at(const std::string& mark_name) const { return marks_.at(mark_name); }

    [[nodiscard]] size_t size() const { return bytes_.size(); }
    [[nodiscard]] const std::vector<std::byte>& bytes() const { return bytes_; }
    [[nodiscard]] std::vector<std::byte>& bytes() { return bytes_; }
    // The first n bytes (n may exceed size(): then all of them).
    [[nodiscard]] std::vector<std::byte> prefix(size_t n) const;

private:
    template <class T>
    GgufBytes& put(T v) {
        const auto* p = reinterpret_cast<const std::byte*>(&v);
        bytes_.insert(bytes_.end(), p, p + sizeof(T));
        return *this;
    }

    std::vector<std::byte> bytes_;
    std::map<std::string, size_t> marks_;
};

// Encodes floats as `type` for test files: F32, F16, BF16 (round to nearest even),
// Q8_0, Q4_0 and Q1_0 with llama.cpp's reference quantizer definitions (formats.md),
// written here independently of lib/quant. n must be a multiple of the block size.
std::vector<std::byte> encode_fixture_weights(DType type, std::span<const float> values);

struct TinyLlamaOptions {
    int64_t n_vocab = 300;       // >= 259 (<unk>, <s>, </s> and 256 byte tokens)
    int64_t n_embd = 64;
    int64_t n_layers = 2;
    int64_t n_heads = 4;
    int64_t n_kv_heads = 2;
    int64_t n_ff = 128;
    int64_t context = 256;
    DType weight_type = DType::F32;  // 2-D weights; norms stay F32 (as llama.cpp writes them)
    bool tied_output = false;        // no output.weight: the model reuses token_embd
    uint64_t seed = 1234;
    float rope_freq_base = 10000.0f;
    float rms_eps = 1e-5f;
};

struct TinyTensor {
    std::string name;
    DType type = DType::F32;
    std::vector<int64_t> ne;        // ggml order
    std::vector<float> values;      // the generated weights before encoding
    std::vector<std::byte> data;    // encoded as `type`
};

// The parts of a tiny model, editable before serialising (model-level corpus cases).
struct TinyModel {
    std::vector<std::pair<std::string, MetadataValue>> metadata;  // file order
    std::vector<TinyTensor> tensors;                              // file order

    [[nodiscard]] MetadataValue* find_key(std::string_view key);
    void set_key(const std::string& key, MetadataValue value);  // replaces or appends
    void remove_key(std::string_view key);
    [[nodiscard]] TinyTensor* find_tensor(std::string_view name);
    void remove_tensor(std::string_view name);
    // Serialises through GgufWriter (version 3, the given alignment).
    [[nodiscard]] std::vector<std::byte> to_bytes(uint32_t alignment = 32) const;
};

// Throws std::invalid_argument for options that cannot make a valid model (e.g.
// n_embd not divisible by n_heads, or widths not multiples of the weight type's block).
TinyModel make_tiny_llama(const TinyLlamaOptions& options = {});
std::vector<std::byte> make_tiny_llama_gguf(const TinyLlamaOptions& options = {});

// The vocabulary make_tiny_llama uses: <unk>, <s>, </s>, <0x00>..<0xFF>, then "▁",
// letters, "▁"+letter, letter pairs, ... (unique), n_vocab pieces in all.
std::vector<std::string> tiny_llama_vocab(int64_t n_vocab);

}  // namespace inlay::test
