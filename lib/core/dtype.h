// Element types of weights and activations. The numeric values are ggml's type ids,
// so a GGUF tensor's type field converts directly (after validation).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace inlay {

enum class DType : uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,  // activations only: the partner of Q4_1 and Q5_1 in dot products
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,  // activations only: the partner of the K-quants in dot products
    BF16 = 30,
    Q1_0 = 41,  // 1-bit, 128 weights per block (PrismML Bonsai "Q1_0_g128")
};

struct DTypeTraits {
    std::string_view name;     // ggml's lower-case name, e.g. "q4_K"
    int64_t block_elems;       // elements per block (1 for plain floats)
    size_t block_bytes;        // bytes per block
};

// Traits of a known type.
const DTypeTraits& dtype_traits(DType type);
// Converts a ggml type id read from a file; nullopt for ids inlay does not know.
std::optional<DType> dtype_from_id(uint32_t id);
inline std::string_view dtype_name(DType type) { return dtype_traits(type).name; }
// Lower-case name of any ggml id, known or not (for error messages).
std::string_view ggml_type_name(uint32_t id);

// Bytes of a row of n elements; nullopt if n is not a multiple of the block size or
// the result would overflow.
std::optional<size_t> row_bytes(DType type, int64_t n);

}  // namespace inlay
