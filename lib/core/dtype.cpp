#include "core/dtype.h"

#include <limits>

#include "core/error.h"

namespace inlay {
namespace {

constexpr DTypeTraits kF32{"f32", 1, 4};
constexpr DTypeTraits kF16{"f16", 1, 2};
constexpr DTypeTraits kBF16{"bf16", 1, 2};
constexpr DTypeTraits kQ4_0{"q4_0", 32, 18};
constexpr DTypeTraits kQ4_1{"q4_1", 32, 20};  // f16 d; f16 m; u8 qs[16]
constexpr DTypeTraits kQ5_0{"q5_0", 32, 22};  // f16 d; u8 qh[4]; u8 qs[16]
constexpr DTypeTraits kQ5_1{"q5_1", 32, 24};  // f16 d; f16 m; u8 qh[4]; u8 qs[16]
constexpr DTypeTraits kQ8_0{"q8_0", 32, 34};
constexpr DTypeTraits kQ8_1{"q8_1", 32, 36};  // f16 d; f16 s; i8 qs[32]
constexpr DTypeTraits kQ4_K{"q4_K", 256, 144};
constexpr DTypeTraits kQ5_K{"q5_K", 256, 176};
constexpr DTypeTraits kQ6_K{"q6_K", 256, 210};
constexpr DTypeTraits kQ8_K{"q8_K", 256, 292};  // f32 d; i8 qs[256]; i16 bsums[16]
constexpr DTypeTraits kQ1_0{"q1_0", 128, 18};

}  // namespace

const DTypeTraits& dtype_traits(DType type) {
    switch (type) {
        case DType::F32: return kF32;
        case DType::F16: return kF16;
        case DType::BF16: return kBF16;
        case DType::Q4_0: return kQ4_0;
        case DType::Q4_1: return kQ4_1;
        case DType::Q5_0: return kQ5_0;
        case DType::Q5_1: return kQ5_1;
        case DType::Q8_0: return kQ8_0;
        case DType::Q8_1: return kQ8_1;
        case DType::Q4_K: return kQ4_K;
        case DType::Q5_K: return kQ5_K;
        case DType::Q6_K: return kQ6_K;
        case DType::Q8_K: return kQ8_K;
        case DType::Q1_0: return kQ1_0;
    }
    fail(INLAY_ERR_INTERNAL, "unknown dtype {}", static_cast<uint32_t>(type));
}

std::optional<DType> dtype_from_id(uint32_t id) {
    switch (id) {
        case 0: return DType::F32;
        case 1: return DType::F16;
        case 2: return DType::Q4_0;
        case 3: return DType::Q4_1;
        case 6: return DType::Q5_0;
        case 7: return DType::Q5_1;
        case 8: return DType::Q8_0;
        case 9: return DType::Q8_1;
        case 12: return DType::Q4_K;
        case 13: return DType::Q5_K;
        case 14: return DType::Q6_K;
        case 15: return DType::Q8_K;
        case 30: return DType::BF16;
        case 41: return DType::Q1_0;
        default: return std::nullopt;
    }
}

std::string_view ggml_type_name(uint32_t id) {
    if (auto t = dtype_from_id(id)) return dtype_name(*t);
    switch (id) {
        case 10: return "q2_K";
        case 11: return "q3_K";
        case 16: return "iq2_xxs";
        case 17: return "iq2_xs";
        case 18: return "iq3_xxs";
        case 19: return "iq1_s";
        case 20: return "iq4_nl";
        case 21: return "iq3_s";
        case 22: return "iq2_s";
        case 23: return "iq4_xs";
        case 24: return "i8";
        case 25: return "i16";
        case 26: return "i32";
        case 27: return "i64";
        case 28: return "f64";
        case 29: return "iq1_m";
        case 34: return "tq1_0";
        case 35: return "tq2_0";
        case 39: return "mxfp4";
        default: return "unknown";
    }
}

std::optional<size_t> row_bytes(DType type, int64_t n) {
    const DTypeTraits& t = dtype_traits(type);
    if (n < 0 || n % t.block_elems != 0) return std::nullopt;
    const auto blocks = static_cast<uint64_t>(n / t.block_elems);
    if (blocks > std::numeric_limits<size_t>::max() / t.block_bytes) return std::nullopt;
    return static_cast<size_t>(blocks) * t.block_bytes;
}

}  // namespace inlay
