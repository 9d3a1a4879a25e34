#include "quant/quantize.h"

#include <cstring>

#include "core/error.h"
#include "core/half.h"
#include "quant/row_codecs.h"

namespace inlay::quant {
namespace {

void check_row(DType type, const void* a, const void* b, int64_t n, const char* what) {
    if (!dtype_from_id(static_cast<uint32_t>(type))) {
        fail(INLAY_ERR_INVALID_ARGUMENT, "{}: unknown type {}", what, static_cast<uint32_t>(type));
    }
    const int64_t block = dtype_traits(type).block_elems;
    if (n < 0 || n % block != 0) {
        fail(INLAY_ERR_INVALID_ARGUMENT, "{}: row of {} elements is not a multiple of {}'s block of {}", what, n,
             dtype_name(type), block);
    }
    if (n > 0 && (a == nullptr || b == nullptr)) fail(INLAY_ERR_INVALID_ARGUMENT, "{}: null pointer", what);
}

template <class Block>
Block* blocks(void* p) {
    return static_cast<Block*>(p);
}
template <class Block>
const Block* blocks(const void* p) {
    return static_cast<const Block*>(p);
}

}  // namespace

void quantize_row(DType type, const float* src, void* dst, int64_t n) {
    check_row(type, src, dst, n, "quantize_row");
    if (n == 0) return;
    using namespace detail;
    switch (type) {
        case DType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); return;
        case DType::F16: {
            auto* y = static_cast<uint16_t*>(dst);
            for (int64_t i = 0; i < n; ++i) y[i] = f32_to_f16(src[i]);
            return;
        }
        case DType::BF16: {
            auto* y = static_cast<uint16_t*>(dst);
            for (int64_t i = 0; i < n; ++i) y[i] = f32_to_bf16(src[i]);
            return;
        }
        case DType::Q8_0: quantize_q8_0(src, blocks<BlockQ8_0>(dst), n); return;
        case DType::Q8_1: quantize_q8_1(src, blocks<BlockQ8_1>(dst), n); return;
        case DType::Q4_0: quantize_q4_0(src, blocks<BlockQ4_0>(dst), n); return;
        case DType::Q4_1: quantize_q4_1(src, blocks<BlockQ4_1>(dst), n); return;
        case DType::Q5_0: quantize_q5_0(src, blocks<BlockQ5_0>(dst), n); return;
        case DType::Q5_1: quantize_q5_1(src, blocks<BlockQ5_1>(dst), n); return;
        case DType::Q1_0: quantize_q1_0(src, blocks<BlockQ1_0>(dst), n); return;
        case DType::Q8_K: quantize_q8_k(src, blocks<BlockQ8_K>(dst), n); return;
        case DType::Q4_K: quantize_q4_k(src, blocks<BlockQ4_K>(dst), n); return;
        case DType::Q5_K: quantize_q5_k(src, blocks<BlockQ5_K>(dst), n); return;
        case DType::Q6_K: quantize_q6_k(src, blocks<BlockQ6_K>(dst), n); return;
    }
    fail(INLAY_ERR_INVALID_ARGUMENT, "quantize_row: unknown type {}", static_cast<uint32_t>(type));
}

void dequantize_row(DType type, const void* src, float* dst, int64_t n) {
    check_row(type, src, dst, n, "dequantize_row");
    if (n == 0) return;
    using namespace detail;
    switch (type) {
        case DType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); return;
        case DType::F16: {
            const auto* x = static_cast<const uint16_t*>(src);
            for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(x[i]);
            return;
        }
        case DType::BF16: {
            const auto* x = static_cast<const uint16_t*>(src);
            for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(x[i]);
            return;
        }
        case DType::Q8_0: dequantize_q8_0(blocks<BlockQ8_0>(src), dst, n); return;
        case DType::Q8_1: dequantize_q8_1(blocks<BlockQ8_1>(src), dst, n); return;
        case DType::Q4_0: dequantize_q4_0(blocks<BlockQ4_0>(src), dst, n); return;
        case DType::Q4_1: dequantize_q4_1(blocks<BlockQ4_1>(src), dst, n); return;
        case DType::Q5_0: dequantize_q5_0(blocks<BlockQ5_0>(src), dst, n); return;
        case DType::Q5_1: dequantize_q5_1(blocks<BlockQ5_1>(src), dst, n); return;
        case DType::Q1_0: dequantize_q1_0(blocks<BlockQ1_0>(src), dst, n); return;
        case DType::Q8_K: dequantize_q8_k(blocks<BlockQ8_K>(src), dst, n); return;
        case DType::Q4_K: dequantize_q4_k(blocks<BlockQ4_K>(src), dst, n); return;
        case DType::Q5_K: dequantize_q5_k(blocks<BlockQ5_K>(src), dst, n); return;
        case DType::Q6_K: dequantize_q6_k(blocks<BlockQ6_K>(src), dst, n); return;
    }
    fail(INLAY_ERR_INVALID_ARGUMENT, "dequantize_row: unknown type {}", static_cast<uint32_t>(type));
}

}  // namespace inlay::quant
