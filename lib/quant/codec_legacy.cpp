// Row codecs of ggml's other 32-element types: Q4_1, Q5_0, Q5_1 (which llama-quantize
// picks when a row length is not a multiple of 256, e.g. SmolLM2's 576) and Q8_1, the
// activation partner of Q4_1 / Q5_1.
//
// The quantizers reproduce llama.cpp's reference algorithms operation for operation, so
// their output is byte-identical to llama-quantize's (without an importance matrix):
// the scale is computed in float and rounded to f16 only when stored, while the levels
// use the unrounded scale; levels are found by truncating x/d plus one half (round half
// up), clamped at the top level.
#include "core/no_fp_contract.h"

#include <cfloat>
#include <cmath>
#include <cstring>

#include "core/half.h"
#include "quant/row_codecs.h"

namespace inlay::quant::detail {
namespace {

// The block's minimum and maximum; NaNs are skipped (as llama.cpp's comparisons do).
void min_max(const float* x, int n, float& lo, float& hi) {
    lo = FLT_MAX;
    hi = -FLT_MAX;
    for (int i = 0; i < n; ++i) {
        if (x[i] < lo) lo = x[i];
        if (x[i] > hi) hi = x[i];
    }
}

// The first element of largest magnitude, with its sign (0 for a zero block).
float signed_max(const float* x, int n) {
    float amax = 0.0f;
    float max = 0.0f;
    for (int i = 0; i < n; ++i) {
        if (amax < std::fabs(x[i])) {
            amax = std::fabs(x[i]);
            max = x[i];
        }
    }
    return max;
}

// Truncation of a non-negative v: the level of v - 0.5 rounded half up, at most `top`.
inline int truncated_level(float v, int top) {
    return static_cast<int>(clamp_nan_low(v, 0.0f, static_cast<float>(top)));
}

uint32_t load_qh(const uint8_t* qh) {
    uint32_t v;
    std::memcpy(&v, qh, sizeof(v));
    return v;
}

void store_qh(uint8_t* qh, uint32_t v) { std::memcpy(qh, &v, sizeof(v)); }

}  // namespace

void quantize_q4_1(const float* x, BlockQ4_1* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK4_1; ++b, x += kQK4_1) {
        float lo, hi;
        min_max(x, kQK4_1, lo, hi);
        const float d = (hi - lo) / 15.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = f32_to_f16(d);
        y[b].m = f32_to_f16(lo);
        for (int i = 0; i < kQK4_1 / 2; ++i) {
            const int l0 = truncated_level((x[i] - lo) * id + 0.5f, 15);
            const int l1 = truncated_level((x[i + kQK4_1 / 2] - lo) * id + 0.5f, 15);
            y[b].qs[i] = static_cast<uint8_t>(l0 | (l1 << 4));
        }
    }
}

void quantize_q5_0(const float* x, BlockQ5_0* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK5_0; ++b, x += kQK5_0) {
        // The extreme value maps to level 0 (value -16), as Q4_0's maps to -8.
        const float d = signed_max(x, kQK5_0) / -16.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = f32_to_f16(d);
        uint32_t qh = 0;
        for (int i = 0; i < kQK5_0 / 2; ++i) {
            const int l0 = truncated_level(x[i] * id + 16.5f, 31);
            const int l1 = truncated_level(x[i + kQK5_0 / 2] * id + 16.5f, 31);
            y[b].qs[i] = static_cast<uint8_t>((l0 & 15) | ((l1 & 15) << 4));
            qh |= static_cast<uint32_t>(l0 >> 4) << i;
            qh |= static_cast<uint32_t>(l1 >> 4) << (i + kQK5_0 / 2);
        }
        store_qh(y[b].qh, qh);
    }
}

void quantize_q5_1(const float* x, BlockQ5_1* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK5_1; ++b, x += kQK5_1) {
        float lo, hi;
        min_max(x, kQK5_1, lo, hi);
        const float d = (hi - lo) / 31.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = f32_to_f16(d);
        y[b].m = f32_to_f16(lo);
        uint32_t qh = 0;
        for (int i = 0; i < kQK5_1 / 2; ++i) {
            const int l0 = truncated_level((x[i] - lo) * id + 0.5f, 31);
            const int l1 = truncated_level((x[i + kQK5_1 / 2] - lo) * id + 0.5f, 31);
            y[b].qs[i] = static_cast<uint8_t>((l0 & 15) | ((l1 & 15) << 4));
            qh |= static_cast<uint32_t>(l0 >> 4) << i;
            qh |= static_cast<uint32_t>(l1 >> 4) << (i + kQK5_1 / 2);
        }
        store_qh(y[b].qh, qh);
    }
}

void quantize_q8_1(const float* x, BlockQ8_1* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK8_1; ++b, x += kQK8_1) {
        float amax = 0.0f;
        for (int i = 0; i < kQK8_1; ++i) amax = std::fmax(amax, std::fabs(x[i]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = f32_to_f16(d);
        int sum = 0;
        for (int i = 0; i < kQK8_1; ++i) {
            // roundf: ties away from zero, as llama.cpp's reference.
            y[b].qs[i] = static_cast<int8_t>(std::round(clamp_nan_low(x[i] * id, -127.0f, 127.0f)));
            sum += y[b].qs[i];
        }
        y[b].s = f32_to_f16(static_cast<float>(sum) * d);
    }
}

void dequantize_q4_1(const BlockQ4_1* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK4_1; ++b, y += kQK4_1) {
        const float d = f16_to_f32(x[b].d);
        const float m = f16_to_f32(x[b].m);
        for (int i = 0; i < kQK4_1 / 2; ++i) {
            y[i] = d * static_cast<float>(x[b].qs[i] & 15) + m;
            y[i + kQK4_1 / 2] = d * static_cast<float>(x[b].qs[i] >> 4) + m;
        }
    }
}

void dequantize_q5_0(const BlockQ5_0* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK5_0; ++b, y += kQK5_0) {
        const float d = f16_to_f32(x[b].d);
        const uint32_t qh = load_qh(x[b].qh);
        for (int i = 0; i < kQK5_0 / 2; ++i) {
            const int l0 = (x[b].qs[i] & 15) | static_cast<int>(((qh >> i) & 1) << 4);
            const int l1 = (x[b].qs[i] >> 4) | static_cast<int>(((qh >> (i + kQK5_0 / 2)) & 1) << 4);
            y[i] = d * static_cast<float>(l0 - 16);
            y[i + kQK5_0 / 2] = d * static_cast<float>(l1 - 16);
        }
    }
}

void dequantize_q5_1(const BlockQ5_1* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK5_1; ++b, y += kQK5_1) {
        const float d = f16_to_f32(x[b].d);
        const float m = f16_to_f32(x[b].m);
        const uint32_t qh = load_qh(x[b].qh);
        for (int i = 0; i < kQK5_1 / 2; ++i) {
            const int l0 = (x[b].qs[i] & 15) | static_cast<int>(((qh >> i) & 1) << 4);
            const int l1 = (x[b].qs[i] >> 4) | static_cast<int>(((qh >> (i + kQK5_1 / 2)) & 1) << 4);
            y[i] = d * static_cast<float>(l0) + m;
            y[i + kQK5_1 / 2] = d * static_cast<float>(l1) + m;
        }
    }
}

void dequantize_q8_1(const BlockQ8_1* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK8_1; ++b, y += kQK8_1) {
        const float d = f16_to_f32(x[b].d);
        for (int i = 0; i < kQK8_1; ++i) y[i] = d * static_cast<float>(x[b].qs[i]);
    }
}

}  // namespace inlay::quant::detail
