// Row codecs of the single-scale block types (Q8_0, Q4_0, Q1_0) and of Q8_K.
// The quantizers reproduce llama.cpp's reference algorithms operation for operation
// (same float expressions, same rounding), which is what makes them byte-identical.
#include "core/no_fp_contract.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/half.h"
#include "quant/row_codecs.h"

namespace inlay::quant::detail {

void quantize_q8_0(const float* x, BlockQ8_0* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK8_0; ++b, x += kQK8_0) {
        float amax = 0.0f;
        for (int i = 0; i < kQK8_0; ++i) amax = std::max(amax, std::fabs(x[i]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = f32_to_f16(d);
        for (int i = 0; i < kQK8_0; ++i) {
            // roundf: ties away from zero, as llama.cpp's reference.
            y[b].qs[i] = static_cast<int8_t>(std::round(clamp_nan_low(x[i] * id, -127.0f, 127.0f)));
        }
    }
}

void quantize_q4_0(const float* x, BlockQ4_0* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK4_0; ++b, x += kQK4_0) {
        // The value of largest magnitude, with its sign (the first one on ties), maps to -8.
        float amax = 0.0f;
        float max = 0.0f;
        for (int i = 0; i < kQK4_0; ++i) {
            if (amax < std::fabs(x[i])) {
                amax = std::fabs(x[i]);
                max = x[i];
            }
        }
        const float d = max / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = f32_to_f16(d);
        for (int i = 0; i < kQK4_0 / 2; ++i) {
            // Truncation of x/d + 8.5 is rounding half up; the clamp only matters for the
            // extreme value, which lands on 16.5 when it maps to +8.
            const int lo = static_cast<int>(clamp_nan_low(x[i] * id + 8.5f, 0.0f, 15.0f));
            const int hi = static_cast<int>(clamp_nan_low(x[i + kQK4_0 / 2] * id + 8.5f, 0.0f, 15.0f));
            y[b].qs[i] = static_cast<uint8_t>(lo | (hi << 4));
        }
    }
}

void quantize_q1_0(const float* x, BlockQ1_0* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK1_0; ++b, x += kQK1_0) {
        float sum_abs = 0.0f;
        for (int i = 0; i < kQK1_0; ++i) sum_abs += std::fabs(x[i]);
        y[b].d = f32_to_f16(sum_abs / static_cast<float>(kQK1_0));
        std::memset(y[b].qs, 0, sizeof(y[b].qs));
        for (int i = 0; i < kQK1_0; ++i) {
            if (x[i] >= 0.0f) y[b].qs[i / 8] = static_cast<uint8_t>(y[b].qs[i / 8] | (1u << (i % 8)));
        }
    }
}

void quantize_q8_k(const float* x, BlockQ8_K* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
        float amax = 0.0f;
        float max = 0.0f;
        for (int i = 0; i < kQK_K; ++i) {
            if (std::fabs(x[i]) > amax) {
                amax = std::fabs(x[i]);
                max = x[i];
            }
        }
        BlockQ8_K& out = y[b];
        if (amax == 0.0f) {
            std::memset(&out, 0, sizeof(out));
            continue;
        }
        // The extreme value maps to -127, so d carries the opposite sign of `max`.
        const float iscale = -127.0f / max;
        for (int i = 0; i < kQK_K; ++i) {
            out.qs[i] = static_cast<int8_t>(round_even(clamp_nan_low(iscale * x[i], -128.0f, 127.0f)));
        }
        for (int j = 0; j < kQK_K / 16; ++j) {
            int sum = 0;
            for (int i = 0; i < 16; ++i) sum += out.qs[16 * j + i];
            out.bsums[j] = static_cast<int16_t>(sum);
        }
        out.d = 1.0f / iscale;
    }
}

void dequantize_q8_0(const BlockQ8_0* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK8_0; ++b, y += kQK8_0) {
        const float d = f16_to_f32(x[b].d);
        for (int i = 0; i < kQK8_0; ++i) y[i] = d * static_cast<float>(x[b].qs[i]);
    }
}

void dequantize_q4_0(const BlockQ4_0* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK4_0; ++b, y += kQK4_0) {
        const float d = f16_to_f32(x[b].d);
        for (int i = 0; i < kQK4_0 / 2; ++i) {
            y[i] = d * static_cast<float>((x[b].qs[i] & 15) - 8);
            y[i + kQK4_0 / 2] = d * static_cast<float>((x[b].qs[i] >> 4) - 8);
        }
    }
}

void dequantize_q1_0(const BlockQ1_0* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK1_0; ++b, y += kQK1_0) {
        const float d = f16_to_f32(x[b].d);
        for (int i = 0; i < kQK1_0; ++i) y[i] = ((x[b].qs[i / 8] >> (i % 8)) & 1) ? d : -d;
    }
}

void dequantize_q8_k(const BlockQ8_K* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK_K; ++b, y += kQK_K) {
        for (int i = 0; i < kQK_K; ++i) y[i] = x[b].d * static_cast<float>(x[b].qs[i]);
    }
}

}  // namespace inlay::quant::detail
