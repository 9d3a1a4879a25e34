// Row codecs of the K-quants (Q4_K, Q5_K, Q6_K).
//
// Quantizing is a two-level fit. Level 1 fits each sub-block on its own: a grid of
// candidate step sizes gives integer levels, a weighted least-squares solve gives the
// best scale (and offset) for those levels, and a few alternating rounds (re-round with
// the fitted scale, re-solve) polish the best candidate. Level 2 stores the sub-block
// scales with 6 or 8 bits relative to an f16 super-block scale; because that rounding
// moves each sub-block's scale, the neighbouring stored values are tried as well and
// the one with the least weighted error is kept, with the levels re-rounded for it.
//
// The weights favour large-magnitude values a little (w = rms + |x| for the affine
// types, as llama.cpp does; w = rms^2 + x^2 for Q6_K), since those dominate dot products.
#include "core/no_fp_contract.h"  // the dequantizers round like llama.cpp's (d * q, then - m)

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/half.h"
#include "quant/row_codecs.h"

namespace inlay::quant::detail {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// ---------------------------------------------------------------- affine (Q4_K, Q5_K)

// x ~= scale * L - min with L in 0..nmax, scale >= 0, min >= 0.
struct AffineFit {
    float scale = 0.0f;
    float min = 0.0f;
    float error = kInf;  // weighted squared error
};

int quantize_level(float v, int lo, int hi) {
    return round_even(clamp_nan_low(v, static_cast<float>(lo), static_cast<float>(hi)));
}

// Levels for a given scale and min, and the weighted error they leave.
float affine_levels(const float* x, const float* w, int n, int nmax, float scale, float min, uint8_t* L) {
    const float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
    float err = 0.0f;
    for (int i = 0; i < n; ++i) {
        const int l = quantize_level((x[i] + min) * inv, 0, nmax);
        L[i] = static_cast<uint8_t>(l);
        const float diff = scale * static_cast<float>(l) - min - x[i];
        err += w[i] * diff * diff;
    }
    return err;
}

// Weighted least-squares scale and min for fixed levels (min clamped to >= 0).
AffineFit affine_solve(const float* x, const float* w, int n, const uint8_t* L) {
    double sw = 0, sl = 0, sll = 0, sx = 0, slx = 0;
    for (int i = 0; i < n; ++i) {
        const double l = L[i];
        sw += w[i];
        sl += w[i] * l;
        sll += w[i] * l * l;
        sx += w[i] * x[i];
        slx += w[i] * l * x[i];
    }
    AffineFit fit;
    const double det = sw * sll - sl * sl;
    if (det <= 0 || sll <= 0) return fit;
    double scale = (sw * slx - sl * sx) / det;
    double offset = (sll * sx - sl * slx) / det;  // x ~= scale*L + offset
    if (offset > 0) {  // the stored min cannot be negative: refit through the origin
        offset = 0;
        scale = slx / sll;
    }
    if (scale <= 0) return fit;
    fit.scale = static_cast<float>(scale);
    fit.min = static_cast<float>(-offset);
    fit.error = 0.0f;
    for (int i = 0; i < n; ++i) {
        const float diff = fit.scale * static_cast<float>(L[i]) - fit.min - x[i];
        fit.error += w[i] * diff * diff;
    }
    return fit;
}

AffineFit fit_affine(const float* x, const float* w, int n, int nmax) {
    float lo = x[0];
    float hi = x[0];
    for (int i = 1; i < n; ++i) {
        lo = std::min(lo, x[i]);
        hi = std::max(hi, x[i]);
    }
    lo = std::min(lo, 0.0f);
    AffineFit best;
    if (!(hi > lo)) {  // constant non-positive block (or NaN): all levels 0
        best.min = std::isfinite(lo) ? -lo : 0.0f;
        return best;
    }
    uint8_t L[32];
    // Candidate 0: the plain min/max mapping.
    best.scale = (hi - lo) / static_cast<float>(nmax);
    best.min = -lo;
    best.error = affine_levels(x, w, n, nmax, best.scale, best.min, L);
    // Grid of step sizes slightly narrower or wider than min/max, each refit by least squares.
    for (int k = -10; k <= 10; ++k) {
        const float iscale = (static_cast<float>(nmax) + 0.1f * static_cast<float>(k)) / (hi - lo);
        for (int i = 0; i < n; ++i) L[i] = static_cast<uint8_t>(quantize_level((x[i] - lo) * iscale, 0, nmax));
        const AffineFit fit = affine_solve(x, w, n, L);
        if (fit.error < best.error) best = fit;
    }
    // Alternate: re-round with the best scale/min, then re-solve.
    for (int round = 0; round < 3; ++round) {
        affine_levels(x, w, n, nmax, best.scale, best.min, L);
        const AffineFit fit = affine_solve(x, w, n, L);
        if (!(fit.error < best.error)) break;
        best = fit;
    }
    return best;
}

void importance_affine(const float* x, float* w, int n) {
    float sum2 = 0.0f;
    for (int i = 0; i < n; ++i) sum2 += x[i] * x[i];
    const float rms = std::sqrt(sum2 / static_cast<float>(n));
    for (int i = 0; i < n; ++i) w[i] = rms + std::fabs(x[i]);
}

// Level 2 for Q4_K / Q5_K: 8 sub-blocks of 32 -> d, dmin, 6-bit scales/mins, levels L[256].
void quantize_affine_superblock(const float* x, int nmax, uint16_t& d_out, uint16_t& dmin_out, uint8_t* scales_out,
                                uint8_t* L) {
    constexpr int kSub = 8;
    constexpr int kLen = 32;
    float weights[kQK_K];
    AffineFit fits[kSub];
    float max_scale = 0.0f;
    float max_min = 0.0f;
    for (int j = 0; j < kSub; ++j) {
        importance_affine(x + kLen * j, weights + kLen * j, kLen);
        fits[j] = fit_affine(x + kLen * j, weights + kLen * j, kLen, nmax);
        max_scale = std::max(max_scale, fits[j].scale);
        max_min = std::max(max_min, fits[j].min);
    }
    d_out = f32_to_f16(max_scale / 63.0f);
    dmin_out = f32_to_f16(max_min / 63.0f);
    const float d = f16_to_f32(d_out);
    const float dmin = f16_to_f32(dmin_out);
    uint8_t sc[kSub];
    uint8_t mn[kSub];
    for (int j = 0; j < kSub; ++j) {
        const float* xj = x + kLen * j;
        const float* wj = weights + kLen * j;
        const int sc0 = d > 0.0f ? quantize_level(fits[j].scale / d, 0, 63) : 0;
        const int mn0 = dmin > 0.0f ? quantize_level(fits[j].min / dmin, 0, 63) : 0;
        float best_err = kInf;
        sc[j] = 0;
        mn[j] = 0;
        uint8_t trial[kLen];
        for (int ds = -1; ds <= 1; ++ds) {
            for (int dm = -1; dm <= 1; ++dm) {
                const int s = sc0 + ds;
                const int m = mn0 + dm;
                if (s < 0 || s > 63 || m < 0 || m > 63) continue;
                const float err = affine_levels(xj, wj, kLen, nmax, d * static_cast<float>(s),
                                                dmin * static_cast<float>(m), trial);
                if (err < best_err) {
                    best_err = err;
                    sc[j] = static_cast<uint8_t>(s);
                    mn[j] = static_cast<uint8_t>(m);
                    std::memcpy(L + kLen * j, trial, kLen);
                }
            }
        }
        if (!(best_err < kInf)) std::memset(L + kLen * j, 0, kLen);  // non-finite input
    }
    pack_k_scales_mins(sc, mn, scales_out);
}

// ---------------------------------------------------------------- symmetric (Q6_K)

// Weighted squared error of x ~= scale * l with l = round(x / scale) in -32..31.
float symmetric_levels(const float* x, const float* w, int n, float scale, int8_t* L) {
    const float inv = scale != 0.0f ? 1.0f / scale : 0.0f;
    float err = 0.0f;
    for (int i = 0; i < n; ++i) {
        const int l = quantize_level(x[i] * inv, -32, 31);
        L[i] = static_cast<int8_t>(l);
        const float diff = scale * static_cast<float>(l) - x[i];
        err += w[i] * diff * diff;
    }
    return err;
}

// Best scale (any sign) of one 16-value sub-block, by maximising (sum wxl)^2 / sum wll.
float fit_symmetric(const float* x, const float* w, int n) {
    float amax = 0.0f;
    float max = 0.0f;
    for (int i = 0; i < n; ++i) {
        if (std::fabs(x[i]) > amax) {
            amax = std::fabs(x[i]);
            max = x[i];
        }
    }
    if (!(amax > 0.0f) || !std::isfinite(amax)) return 0.0f;
    int8_t L[16];
    float best_scale = 0.0f;
    double best_q = -1.0;
    auto consider = [&](float iscale) {
        double sxl = 0, sll = 0;
        for (int i = 0; i < n; ++i) {
            const int l = quantize_level(iscale * x[i], -32, 31);
            sxl += static_cast<double>(w[i]) * x[i] * l;
            sll += static_cast<double>(w[i]) * l * l;
        }
        if (sll > 0 && sxl * sxl / sll > best_q) {
            best_q = sxl * sxl / sll;
            best_scale = static_cast<float>(sxl / sll);
        }
    };
    // The extreme value maps to -32 (the wider end of -32..31).
    for (int k = -12; k <= 12; ++k) consider(-(32.0f + 0.1f * static_cast<float>(k)) / max);
    for (int round = 0; round < 2 && best_scale != 0.0f; ++round) {
        symmetric_levels(x, w, n, best_scale, L);
        consider(1.0f / best_scale);
    }
    return best_scale;
}

}  // namespace

void quantize_q4_k(const float* x, BlockQ4_K* y, int64_t n) {
    uint8_t L[kQK_K];
    for (int64_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
        quantize_affine_superblock(x, 15, y[b].d, y[b].dmin, y[b].scales, L);
        for (int c = 0; c < 4; ++c) {
            for (int l = 0; l < 32; ++l) y[b].qs[32 * c + l] = static_cast<uint8_t>(L[64 * c + l] | (L[64 * c + 32 + l] << 4));
        }
    }
}

void quantize_q5_k(const float* x, BlockQ5_K* y, int64_t n) {
    uint8_t L[kQK_K];
    for (int64_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
        quantize_affine_superblock(x, 31, y[b].d, y[b].dmin, y[b].scales, L);
        std::memset(y[b].qh, 0, sizeof(y[b].qh));
        for (int c = 0; c < 4; ++c) {
            for (int l = 0; l < 32; ++l) {
                const int lo = L[64 * c + l];
                const int hi = L[64 * c + 32 + l];
                y[b].qs[32 * c + l] = static_cast<uint8_t>((lo & 15) | ((hi & 15) << 4));
                y[b].qh[l] = static_cast<uint8_t>(y[b].qh[l] | ((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
            }
        }
    }
}

void quantize_q6_k(const float* x, BlockQ6_K* y, int64_t n) {
    constexpr int kSub = 16;
    constexpr int kLen = 16;
    for (int64_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
        float weights[kQK_K];
        float sum2 = 0.0f;
        for (int i = 0; i < kQK_K; ++i) sum2 += x[i] * x[i];
        const float ms = sum2 / static_cast<float>(kQK_K);
        for (int i = 0; i < kQK_K; ++i) weights[i] = ms + x[i] * x[i];

        float scales[kSub];
        float max_scale = 0.0f;
        for (int j = 0; j < kSub; ++j) {
            scales[j] = fit_symmetric(x + kLen * j, weights + kLen * j, kLen);
            if (std::fabs(scales[j]) > std::fabs(max_scale)) max_scale = scales[j];
        }
        BlockQ6_K& out = y[b];
        std::memset(&out, 0, sizeof(out));
        int8_t L[kQK_K] = {};
        if (max_scale != 0.0f) {
            // The largest scale maps to -128, the wider end of int8.
            out.d = f32_to_f16(max_scale / -128.0f);
            const float d = f16_to_f32(out.d);
            for (int j = 0; j < kSub; ++j) {
                const float* xj = x + kLen * j;
                const float* wj = weights + kLen * j;
                const int s0 = d != 0.0f ? quantize_level(scales[j] / d, -128, 127) : 0;
                float best_err = kInf;
                int8_t trial[kLen];
                for (int ds = -1; ds <= 1; ++ds) {
                    const int s = s0 + ds;
                    if (s < -128 || s > 127) continue;
                    const float err = symmetric_levels(xj, wj, kLen, d * static_cast<float>(s), trial);
                    if (err < best_err) {
                        best_err = err;
                        out.scales[j] = static_cast<int8_t>(s);
                        std::memcpy(L + kLen * j, trial, kLen);
                    }
                }
            }
        }
        for (int h = 0; h < 2; ++h) {
            const int8_t* Lh = L + 128 * h;
            uint8_t* ql = out.ql + 64 * h;
            uint8_t* qh = out.qh + 32 * h;
            for (int l = 0; l < 32; ++l) {
                const int q0 = Lh[l] + 32;
                const int q1 = Lh[l + 32] + 32;
                const int q2 = Lh[l + 64] + 32;
                const int q3 = Lh[l + 96] + 32;
                ql[l] = static_cast<uint8_t>((q0 & 15) | ((q2 & 15) << 4));
                ql[l + 32] = static_cast<uint8_t>((q1 & 15) | ((q3 & 15) << 4));
                qh[l] = static_cast<uint8_t>((q0 >> 4) | ((q1 >> 4) << 2) | ((q2 >> 4) << 4) | ((q3 >> 4) << 6));
            }
        }
    }
}

void dequantize_q4_k(const BlockQ4_K* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK_K; ++b, y += kQK_K) {
        const float d = f16_to_f32(x[b].d);
        const float dmin = f16_to_f32(x[b].dmin);
        for (int c = 0; c < 4; ++c) {
            uint8_t sc0, m0, sc1, m1;
            unpack_k_scale_min(2 * c, x[b].scales, sc0, m0);
            unpack_k_scale_min(2 * c + 1, x[b].scales, sc1, m1);
            const float d0 = d * sc0, min0 = dmin * m0, d1 = d * sc1, min1 = dmin * m1;
            const uint8_t* q = x[b].qs + 32 * c;
            for (int l = 0; l < 32; ++l) {
                y[64 * c + l] = d0 * static_cast<float>(q[l] & 15) - min0;
                y[64 * c + 32 + l] = d1 * static_cast<float>(q[l] >> 4) - min1;
            }
        }
    }
}

void dequantize_q5_k(const BlockQ5_K* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK_K; ++b, y += kQK_K) {
        const float d = f16_to_f32(x[b].d);
        const float dmin = f16_to_f32(x[b].dmin);
        for (int c = 0; c < 4; ++c) {
            uint8_t sc0, m0, sc1, m1;
            unpack_k_scale_min(2 * c, x[b].scales, sc0, m0);
            unpack_k_scale_min(2 * c + 1, x[b].scales, sc1, m1);
            const float d0 = d * sc0, min0 = dmin * m0, d1 = d * sc1, min1 = dmin * m1;
            const uint8_t* q = x[b].qs + 32 * c;
            for (int l = 0; l < 32; ++l) {
                const int lo = (q[l] & 15) | (((x[b].qh[l] >> (2 * c)) & 1) << 4);
                const int hi = (q[l] >> 4) | (((x[b].qh[l] >> (2 * c + 1)) & 1) << 4);
                y[64 * c + l] = d0 * static_cast<float>(lo) - min0;
                y[64 * c + 32 + l] = d1 * static_cast<float>(hi) - min1;
            }
        }
    }
}

void dequantize_q6_k(const BlockQ6_K* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK_K; ++b, y += kQK_K) {
        const float d = f16_to_f32(x[b].d);
        for (int h = 0; h < 2; ++h) {
            const uint8_t* ql = x[b].ql + 64 * h;
            const uint8_t* qh = x[b].qh + 32 * h;
            const int8_t* sc = x[b].scales + 8 * h;
            float* yh = y + 128 * h;
            for (int l = 0; l < 32; ++l) {
                const int q0 = ((ql[l] & 15) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q1 = ((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q2 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q3 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                const int s = l / 16;
                yh[l] = d * static_cast<float>(sc[s]) * static_cast<float>(q0);
                yh[l + 32] = d * static_cast<float>(sc[s + 2]) * static_cast<float>(q1);
                yh[l + 64] = d * static_cast<float>(sc[s + 4]) * static_cast<float>(q2);
                yh[l + 96] = d * static_cast<float>(sc[s + 6]) * static_cast<float>(q3);
            }
        }
    }
}

}  // namespace inlay::quant::detail
