// Scalar dot kernels: the specification the SIMD kernels are tested against. Quantized
// types sum integer products per block and apply the float scales once per block (or
// sub-block), which is the arithmetic the SIMD kernels reproduce.
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

void dot_q8_0(int64_t n, float* result, const void* w_row, const void* x_row) {
    const auto* w = static_cast<const BlockQ8_0*>(w_row);
    const auto* x = static_cast<const BlockQ8_0*>(x_row);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kQK8_0; ++b) {
        int sumi = 0;
        for (int i = 0; i < kQK8_0; ++i) sumi += w[b].qs[i] * x[b].qs[i];
        sum += static_cast<float>(sumi) * (f16_to_f32(w[b].d) * f16_to_f32(x[b].d));
    }
    *result = sum;
}

void dot_q4_0(int64_t n, float* result, const void* w_row, const void* x_row) {
    const auto* w = static_cast<const BlockQ4_0*>(w_row);
    const auto* x = static_cast<const BlockQ8_0*>(x_row);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kQK4_0; ++b) {
        int sumi = 0;
        for (int i = 0; i < kQK4_0 / 2; ++i) {
            sumi += ((w[b].qs[i] & 15) - 8) * x[b].qs[i];
            sumi += ((w[b].qs[i] >> 4) - 8) * x[b].qs[i + kQK4_0 / 2];
        }
        sum += static_cast<float>(sumi) * (f16_to_f32(w[b].d) * f16_to_f32(x[b].d));
    }
    *result = sum;
}

void dot_q1_0(int64_t n, float* result, const void* w_row, const void* x_row) {
    const auto* w = static_cast<const BlockQ1_0*>(w_row);
    const auto* x = static_cast<const BlockQ8_0*>(x_row);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kQK1_0; ++b) {
        float block_sum = 0.0f;
        for (int k = 0; k < kQK1_0 / kQK8_0; ++k) {
            const BlockQ8_0& xb = x[b * (kQK1_0 / kQK8_0) + k];
            int sumi = 0;
            for (int i = 0; i < kQK8_0; ++i) {
                const int j = kQK8_0 * k + i;
                const bool bit = (w[b].qs[j / 8] >> (j % 8)) & 1;
                sumi += bit ? xb.qs[i] : -xb.qs[i];
            }
            block_sum += static_cast<float>(sumi) * f16_to_f32(xb.d);
        }
        sum += block_sum * f16_to_f32(w[b].d);
    }
    *result = sum;
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

void dot_q4_k(int64_t n, float* result, const void* w_row, const void* x_row) {
    const auto* w = static_cast<const BlockQ4_K*>(w_row);
    const auto* x = static_cast<const BlockQ8_K*>(x_row);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        const BlockQ4_K& wb = w[b];
        auto level = [&wb](int i) {
            const int c = i / 64, l = i % 64;
            return l < 32 ? wb.qs[32 * c + l] & 15 : wb.qs[32 * c + l - 32] >> 4;
        };
        int sumi, summ;
        affine_superblock_sums(wb.scales, x[b], level, sumi, summ);
        sum += x[b].d * f16_to_f32(wb.d) * static_cast<float>(sumi) -
               x[b].d * f16_to_f32(wb.dmin) * static_cast<float>(summ);
    }
    *result = sum;
}

void dot_q5_k(int64_t n, float* result, const void* w_row, const void* x_row) {
    const auto* w = static_cast<const BlockQ5_K*>(w_row);
    const auto* x = static_cast<const BlockQ8_K*>(x_row);
    float sum = 0.0f;
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
        sum += x[b].d * f16_to_f32(wb.d) * static_cast<float>(sumi) -
               x[b].d * f16_to_f32(wb.dmin) * static_cast<float>(summ);
    }
    *result = sum;
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
        sum += x[b].d * f16_to_f32(wb.d) * static_cast<float>(sumi);
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
        case DType::Q1_0: return dot_q1_0;
        case DType::Q4_K: return dot_q4_k;
        case DType::Q5_K: return dot_q5_k;
        case DType::Q6_K: return dot_q6_k;
        case DType::Q8_K: return nullptr;
    }
    return nullptr;
}

}  // namespace inlay::quant::detail
