// Scalar dot kernels: the specification the SIMD kernels are tested against. Quantized
// types sum integer products per block and apply the float scales once per block (or
// sub-block), which is the arithmetic the SIMD kernels reproduce. The 32-element types
// and Q1_0 also fix the order of the float operations (llama.cpp's x86 kernels' order for
// Q4_1 and Q5_1, block sums for the others: see dot_block_sums and dot_q1_0), and so do
// the K-quants (see affine_k_accumulate),
// so the SIMD kernels and the matrix-unit tiles equal these bitwise.
#include <cmath>
#include <cstdint>

#include "core/half.h"
#include "quant/blocks.h"
#include "quant/kernels.h"

namespace inlay::quant::detail {
namespace {

void dot_f32(int64_t n, float* result, const void* w_row, const void* x_row) {
    const auto* w = static_cast<const float*>(w_row);
    const auto* x = static_cast<const float*>(x_row);
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) sum += w[i] * x[i];
    *result = sum;
}

void dot_f16(int64_t n, float* result, const void* w_row, const void* x_row) {
    const auto* w = static_cast<const uint16_t*>(w_row);
    const auto* x = static_cast<const uint16_t*>(x_row);
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) sum += f16_to_f32(w[i]) * f16_to_f32(x[i]);
    *result = sum;
}

void dot_bf16(int64_t n, float* result, const void* w_row, const void* x_row) {
    const auto* w = static_cast<const uint16_t*>(w_row);
    const auto* x = static_cast<const uint16_t*>(x_row);
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) sum += bf16_to_f32(w[i]) * bf16_to_f32(x[i]);
    *result = sum;
}

// ggml's x86 kernels of the 32-element types (the ones llama.cpp runs on AVX2 CPUs)
// keep eight float lanes: lane k of a block gets the integer sum of the products
// 4k..4k+3, converted to float and fused-multiply-added with the block's scale; the
// lanes are summed at the end as ((l0+l4) + (l2+l6)) + ((l1+l5) + (l3+l7)). Repeating
// that order here (and in the SIMD kernels) makes the results bitwise equal to
// llama.cpp's, not just close.
struct Lanes {
    float v[8] = {};
    // v[k] += sums[k] * scale, fused
    void fma(const int (&sums)[8], float scale) {
        for (int k = 0; k < 8; ++k) v[k] = std::fma(static_cast<float>(sums[k]), scale, v[k]);
    }
    [[nodiscard]] float sum() const { return ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7])); }
};

// Lane sums of one 32-element block: sums[k] = sum of w(i) * x[i] for i in 4k..4k+3.
template <class Weight>
void lane_sums(Weight w, const int8_t* x, int (&sums)[8]) {
    for (int k = 0; k < 8; ++k) {
        sums[k] = 0;
        for (int i = 4 * k; i < 4 * k + 4; ++i) sums[k] += w(i) * x[i];
    }
}

// The level (0..15) of element i of a 16-byte nibble array (low nibbles first).
inline int nibble(const uint8_t* qs, int i) {
    // Always index in bounds: GCC 12 -O2 summed wrongly with qs[i] behind `i < 16` in a loop to 32.
    const int byte = qs[i % 16];
    return i < 16 ? byte & 15 : byte >> 4;
}

// The 5-bit level (0..31) of element i of a Q5_0 / Q5_1 block.
template <class Block>
int level5(const Block& b, int i) {
    const uint32_t qh = static_cast<uint32_t>(b.qh[0]) | static_cast<uint32_t>(b.qh[1]) << 8 |
                        static_cast<uint32_t>(b.qh[2]) << 16 | static_cast<uint32_t>(b.qh[3]) << 24;
    return nibble(b.qs, i) | static_cast<int>(((qh >> i) & 1) << 4);
}

// Q4_1, Q5_1 against Q8_1 (ggml_vec_dot_*: one lane accumulator). `value(block, i)` is the integer weight; Q4_1 / Q5_1 add m * s per block
// in a float sum, fused, added after the lanes.
template <class Block, class Act, bool kMin, class Value>
void dot_lanes(int64_t n, float* result, const void* w_row, const void* x_row, Value value) {
    const auto* w = static_cast<const Block*>(w_row);
    const auto* x = static_cast<const Act*>(x_row);
    Lanes acc;
    float mins = 0.0f;
    for (int64_t b = 0; b < n / 32; ++b) {
        int sums[8];
        lane_sums([&](int i) { return value(w[b], i); }, x[b].qs, sums);
        acc.fma(sums, f16_to_f32(w[b].d) * f16_to_f32(x[b].d));
        if constexpr (kMin) mins = std::fma(f16_to_f32(w[b].m), f16_to_f32(x[b].s), mins);
    }
    *result = acc.sum() + mins;
}

// Q4_1 and Q5_1 against Q8_1: sum_i (d_w*q_i + m)(d_x*x_i) = d_w*d_x*sum(q_i*x_i) + m*s,
// s being the activation block's stored f16 d_x*sum(x_i).
void dot_q4_1(int64_t n, float* result, const void* w_row, const void* x_row) {
    dot_lanes<BlockQ4_1, BlockQ8_1, true>(n, result, w_row, x_row,
                                          [](const BlockQ4_1& b, int i) { return nibble(b.qs, i); });
}

void dot_q5_1(int64_t n, float* result, const void* w_row, const void* x_row) {
    dot_lanes<BlockQ5_1, BlockQ8_1, true>(n, result, w_row, x_row,
                                          [](const BlockQ5_1& b, int i) { return level5(b, i); });
}

// Q4_0, Q5_0 and Q8_0 against Q8_0 in block-sum order: one float per row,
// fused-multiply-added with each block's whole integer dot and scale. This is how
// llama.cpp's repacked Q4_0 kernels (used on AVX2 for every matrix with a multiple of 8
// rows) sum, and what a matrix unit computes natively (AMX: one int32 per row, token and
// block), so Q8_0 and Q5_0 use it too. (llama.cpp's Q8_0 and Q5_0 vec_dots keep eight
// lanes per block instead: those results agree with llama.cpp's to rounding, not bitwise.)
template <class Block, class Value>
void dot_block_sums(int64_t n, float* result, const void* w_row, const void* x_row, Value value) {
    const auto* w = static_cast<const Block*>(w_row);
    const auto* x = static_cast<const BlockQ8_0*>(x_row);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kQK8_0; ++b) {
        int sumi = 0;
        for (int i = 0; i < kQK8_0; ++i) sumi += value(w[b], i) * x[b].qs[i];
        sum = std::fma(static_cast<float>(sumi), f16_to_f32(w[b].d) * f16_to_f32(x[b].d), sum);
    }
    *result = sum;
}

void dot_q4_0(int64_t n, float* result, const void* w_row, const void* x_row) {
    dot_block_sums<BlockQ4_0>(n, result, w_row, x_row, [](const BlockQ4_0& b, int i) { return nibble(b.qs, i) - 8; });
}

void dot_q5_0(int64_t n, float* result, const void* w_row, const void* x_row) {
    dot_block_sums<BlockQ5_0>(n, result, w_row, x_row, [](const BlockQ5_0& b, int i) { return level5(b, i) - 16; });
}

void dot_q8_0(int64_t n, float* result, const void* w_row, const void* x_row) {
    dot_block_sums<BlockQ8_0>(n, result, w_row, x_row, [](const BlockQ8_0& b, int i) { return static_cast<int>(b.qs[i]); });
}

// Q1_0 against Q8_0: per 128-weight block, each of its four 32-element sub-blocks' exact
// integer dot (sum of +-x) scaled by its activation block's d (the first multiplied, the
// others fused), then the block fused into the accumulator with the weight scale. Like
// the block-sum order, these are the integers a matrix unit yields (one per row, token
// and sub-block), so the AMX tiles equal this bitwise. (ggml_vec_dot_q1_0_q8_0 keeps
// eight lanes per sub-block instead: results agree with llama.cpp's to rounding.)
void dot_q1_0(int64_t n, float* result, const void* w_row, const void* x_row) {
    const auto* w = static_cast<const BlockQ1_0*>(w_row);
    const auto* x = static_cast<const BlockQ8_0*>(x_row);
    float acc = 0.0f;
    for (int64_t b = 0; b < n / kQK1_0; ++b) {
        float block = 0.0f;
        for (int k = 0; k < kQK1_0 / kQK8_0; ++k) {
            const BlockQ8_0& xb = x[b * (kQK1_0 / kQK8_0) + k];
            int sumi = 0;
            for (int i = 0; i < kQK8_0; ++i) {
                const int j = kQK8_0 * k + i;
                sumi += ((w[b].qs[j / 8] >> (j % 8)) & 1) ? xb.qs[i] : -xb.qs[i];
            }
            const float s = static_cast<float>(sumi), dx = f16_to_f32(xb.d);
            block = k == 0 ? s * dx : std::fma(s, dx, block);
        }
        acc = std::fma(block, f16_to_f32(w[b].d), acc);
    }
    *result = acc;
}

// sum_j sc_j * dot(q_j, x_j) and sum_j m_j * (sum of x_j) of one Q4_K / Q5_K super-block,
// with q values given by `level(i)` (0..31).
template <class Level>
void affine_superblock_sums(const uint8_t* scales, const BlockQ8_K& x, Level level, int& sumi, int& summ) {
    sumi = 0;
    summ = 0;
    for (int j = 0; j < 8; ++j) {
        uint8_t sc, m;
        unpack_k_scale_min(j, scales, sc, m);
        int dot = 0;
        for (int i = 0; i < 32; ++i) dot += level(32 * j + i) * x.qs[32 * j + i];
        sumi += sc * dot;
        summ += m * (x.bsums[2 * j] + x.bsums[2 * j + 1]);
    }
}

// The K-quants' float order (every SIMD kernel's and the AMX tiles'): per super-block the
// exact integer totals, sumi (the scaled level products) and summ (the mins against the
// block sums), each fused into its own float accumulator with d_x * d_w (d_x * dmin);
// the row's result is acc - acc_min. A matrix unit yields exactly these totals, one
// int32 per (row, token) and super-block, so its tiles equal the row kernels bitwise.
template <class Block>
void affine_k_accumulate(int sumi, int summ, float dx, const Block& wb, float& acc, float& acc_min) {
    acc = std::fma(static_cast<float>(sumi), dx * f16_to_f32(wb.d), acc);
    acc_min = std::fma(static_cast<float>(summ), dx * f16_to_f32(wb.dmin), acc_min);
}

void dot_q4_k(int64_t n, float* result, const void* w_row, const void* x_row) {
    const auto* w = static_cast<const BlockQ4_K*>(w_row);
    const auto* x = static_cast<const BlockQ8_K*>(x_row);
    float acc = 0.0f, acc_min = 0.0f;
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        const BlockQ4_K& wb = w[b];
        auto level = [&wb](int i) {
            const int c = i / 64, l = i % 64;
            return l < 32 ? wb.qs[32 * c + l] & 15 : wb.qs[32 * c + l - 32] >> 4;
        };
        int sumi, summ;
        affine_superblock_sums(wb.scales, x[b], level, sumi, summ);
        affine_k_accumulate(sumi, summ, x[b].d, wb, acc, acc_min);
    }
    *result = acc - acc_min;
}

void dot_q5_k(int64_t n, float* result, const void* w_row, const void* x_row) {
    const auto* w = static_cast<const BlockQ5_K*>(w_row);
    const auto* x = static_cast<const BlockQ8_K*>(x_row);
    float acc = 0.0f, acc_min = 0.0f;
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        const BlockQ5_K& wb = w[b];
        auto level = [&wb](int i) {
            const int c = i / 64, l = i % 64;
            const int low = l < 32 ? wb.qs[32 * c + l] & 15 : wb.qs[32 * c + l - 32] >> 4;
            const int bit = (wb.qh[l % 32] >> (2 * c + (l < 32 ? 0 : 1))) & 1;
            return low | (bit << 4);
        };
        int sumi, summ;
        affine_superblock_sums(wb.scales, x[b], level, sumi, summ);
        affine_k_accumulate(sumi, summ, x[b].d, wb, acc, acc_min);
    }
    *result = acc - acc_min;
}

void dot_q6_k(int64_t n, float* result, const void* w_row, const void* x_row) {
    const auto* w = static_cast<const BlockQ6_K*>(w_row);
    const auto* x = static_cast<const BlockQ8_K*>(x_row);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        const BlockQ6_K& wb = w[b];
        int sumi = 0;
        for (int h = 0; h < 2; ++h) {
            const uint8_t* ql = wb.ql + 64 * h;
            const uint8_t* qh = wb.qh + 32 * h;
            const int8_t* xq = x[b].qs + 128 * h;
            // Sub-block s (16 values) of this half starts at value 16s.
            int sub[8] = {};
            for (int l = 0; l < 32; ++l) {
                const int q0 = ((ql[l] & 15) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q1 = ((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q2 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q3 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                const int s = l / 16;
                sub[s] += q0 * xq[l];
                sub[s + 2] += q1 * xq[l + 32];
                sub[s + 4] += q2 * xq[l + 64];
                sub[s + 6] += q3 * xq[l + 96];
            }
            for (int s = 0; s < 8; ++s) sumi += wb.scales[8 * h + s] * sub[s];
        }
        sum = std::fma(static_cast<float>(sumi), x[b].d * f16_to_f32(wb.d), sum);
    }
    *result = sum;
}

}  // namespace

VecDotFn reference_kernel(DType weight) {
    switch (weight) {
        case DType::F32: return dot_f32;
        case DType::F16: return dot_f16;
        case DType::BF16: return dot_bf16;
        case DType::Q8_0: return dot_q8_0;
        case DType::Q4_0: return dot_q4_0;
        case DType::Q4_1: return dot_q4_1;
        case DType::Q5_0: return dot_q5_0;
        case DType::Q5_1: return dot_q5_1;
        case DType::Q1_0: return dot_q1_0;
        case DType::Q4_K: return dot_q4_k;
        case DType::Q5_K: return dot_q5_k;
        case DType::Q6_K: return dot_q6_k;
        case DType::Q8_1:
        case DType::Q8_K: return nullptr;
    }
    return nullptr;
}

}  // namespace inlay::quant::detail
