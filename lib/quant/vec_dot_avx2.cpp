// AVX2/FMA/F16C dot kernels. Quantized types multiply 8-bit integers (maddubs/madd, or
// VNNI's dpbusd when the build has AVX512-VNNI) and apply the float scales once per
// block or sub-block, exactly like the scalar reference kernels; only the order of the
// float additions differs.
#include "quant/kernels.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include "core/half.h"
#include "quant/blocks.h"
#include "quant/simd_avx2.h"

namespace inlay::quant::detail {
namespace {

using namespace simd;

void dot_f32(int64_t n, float* result, const void* w_row, const void* x_row) {
    const auto* w = static_cast<const float*>(w_row);
    const auto* x = static_cast<const float*>(x_row);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps(), acc2 = _mm256_setzero_ps(),
           acc3 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 8), _mm256_loadu_ps(x + i + 8), acc1);
        acc2 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 16), _mm256_loadu_ps(x + i + 16), acc2);
        acc3 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 24), _mm256_loadu_ps(x + i + 24), acc3);
    }
    for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i), acc0);
    float sum = hsum(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
    for (; i < n; ++i) sum += w[i] * x[i];
    *result = sum;
}

inline __m256 load_f16x8(const uint16_t* p) { return _mm256_cvtph_ps(load16(p)); }
inline __m256 load_bf16x8(const uint16_t* p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(load16(p)), 16));
}

template <__m256 (*Load)(const uint16_t*), float (*Scalar)(uint16_t)>
void dot_half(int64_t n, float* result, const void* w_row, const void* x_row) {
    const auto* w = static_cast<const uint16_t*>(w_row);
    const auto* x = static_cast<const uint16_t*>(x_row);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps(), acc2 = _mm256_setzero_ps(),
           acc3 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        acc0 = _mm256_fmadd_ps(Load(w + i), Load(x + i), acc0);
        acc1 = _mm256_fmadd_ps(Load(w + i + 8), Load(x + i + 8), acc1);
        acc2 = _mm256_fmadd_ps(Load(w + i + 16), Load(x + i + 16), acc2);
        acc3 = _mm256_fmadd_ps(Load(w + i + 24), Load(x + i + 24), acc3);
    }
    for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(Load(w + i), Load(x + i), acc0);
    float sum = hsum(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
    for (; i < n; ++i) sum += Scalar(w[i]) * Scalar(x[i]);
    *result = sum;
}

void dot_q8_0(int64_t n, float* result, const void* w_row, const void* x_row) {
    const auto* w = static_cast<const BlockQ8_0*>(w_row);
    const auto* x = static_cast<const BlockQ8_0*>(x_row);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / kQK8_0; ++b) {
        const __m256i p = dot_i8_i8(load32(w[b].qs), load32(x[b].qs));
        const __m256 d = _mm256_set1_ps(f16_to_f32(w[b].d) * f16_to_f32(x[b].d));
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(p), acc);
    }
    *result = hsum(acc);
}

// The 32 levels (-8..7) of a Q4_0 block in element order.
inline __m256i q4_0_levels(const uint8_t* qs) {
    const __m128i raw = load16(qs);
    const __m256i nibbles = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(15));
    return _mm256_sub_epi8(nibbles, _mm256_set1_epi8(8));
}

void dot_q4_0(int64_t n, float* result, const void* w_row, const void* x_row) {
    const auto* w = static_cast<const BlockQ4_0*>(w_row);
    const auto* x = static_cast<const BlockQ8_0*>(x_row);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / kQK4_0; ++b) {
        const __m256i p = dot_i8_i8(q4_0_levels(w[b].qs), load32(x[b].qs));
        const __m256 d = _mm256_set1_ps(f16_to_f32(w[b].d) * f16_to_f32(x[b].d));
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(p), acc);
    }
    *result = hsum(acc);
}

void dot_q1_0(int64_t n, float* result, const void* w_row, const void* x_row) {
    const auto* w = static_cast<const BlockQ1_0*>(w_row);
    const auto* x = static_cast<const BlockQ8_0*>(x_row);
    const __m256i ones = _mm256_set1_epi8(1);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / kQK1_0; ++b) {
        const float dw = f16_to_f32(w[b].d);
        for (int k = 0; k < kQK1_0 / kQK8_0; ++k) {
            const BlockQ8_0& xb = x[b * (kQK1_0 / kQK8_0) + k];
            // Negate the activations whose weight bit is clear: (x ^ m) - m with m = -1.
            const __m256i neg = clear_bits_to_mask(load_u32(w[b].qs + 4 * k));
            const __m256i signed_x = _mm256_sub_epi8(_mm256_xor_si256(load32(xb.qs), neg), neg);
            const __m256i p = dot_u8_i8(ones, signed_x);
            acc = _mm256_fmadd_ps(_mm256_set1_ps(dw * f16_to_f32(xb.d)), _mm256_cvtepi32_ps(p), acc);
        }
    }
    *result = hsum(acc);
}

// Eight 6-bit scales and mins of a Q4_K / Q5_K super-block, unpacked with 32-bit ops:
// bytes 0-3 hold sc0-3 (+ top bits of sc4-7), 4-7 m0-3 (+ top bits of m4-7), 8-11 the
// low nibbles of sc4-7 and m4-7.
struct KScales {
    uint8_t sc[8];
    uint8_t m[8];
};

inline KScales unpack_k_scales(const uint8_t* packed) {
    const uint32_t a = load_u32(packed), b = load_u32(packed + 4), c = load_u32(packed + 8);
    const uint32_t words[4] = {a & 0x3f3f3f3fu, ((c & 0x0f0f0f0fu) | ((a >> 2) & 0x30303030u)), b & 0x3f3f3f3fu,
                               (((c >> 4) & 0x0f0f0f0fu) | ((b >> 2) & 0x30303030u))};
    KScales s;
    std::memcpy(s.sc, &words[0], 8);
    std::memcpy(s.m, &words[2], 8);
    return s;
}

// m_j * (bsums[2j] + bsums[2j+1]) in int32 lane j.
inline __m256i k_min_products(const uint8_t* m, const int16_t* bsums) {
    const __m128i m16 = _mm_cvtepu8_epi16(_mm_loadl_epi64(static_cast<const __m128i*>(static_cast<const void*>(m))));
    const __m256i pairs = _mm256_set_m128i(_mm_unpackhi_epi16(m16, m16), _mm_unpacklo_epi16(m16, m16));
    return _mm256_madd_epi16(load32(bsums), pairs);
}

// Shared by Q4_K and Q5_K: `high(c)` gives the 5th-bit contributions of chunk c (zero for Q4_K).
template <class HighBits>
void dot_affine_superblock(uint16_t d16, uint16_t dmin16, const uint8_t* scales, const uint8_t* qs,
                            const BlockQ8_K& x, HighBits high, __m256& acc, __m256& acc_min) {
    const KScales s = unpack_k_scales(scales);
    const __m256i mins = k_min_products(s.m, x.bsums);
    acc_min = _mm256_fmadd_ps(_mm256_set1_ps(x.d * f16_to_f32(dmin16)), _mm256_cvtepi32_ps(mins), acc_min);
    const __m256i low4 = _mm256_set1_epi8(15);
    __m256i sumi = _mm256_setzero_si256();
    for (int c = 0; c < 4; ++c) {
        const __m256i q = load32(qs + 32 * c);
        __m256i lo = _mm256_and_si256(q, low4);
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
        high(c, lo, hi);
        const __m256i pl = scaled_pairs(lo, load32(x.qs + 64 * c), _mm256_set1_epi16(s.sc[2 * c]));
        const __m256i ph = scaled_pairs(hi, load32(x.qs + 64 * c + 32), _mm256_set1_epi16(s.sc[2 * c + 1]));
        sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(pl, ph));
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(x.d * f16_to_f32(d16)), _mm256_cvtepi32_ps(sumi), acc);
}

void dot_q4_k(int64_t n, float* result, const void* w_row, const void* x_row) {
    const auto* w = static_cast<const BlockQ4_K*>(w_row);
    const auto* x = static_cast<const BlockQ8_K*>(x_row);
    __m256 acc = _mm256_setzero_ps(), acc_min = _mm256_setzero_ps();
    auto no_high = [](int, __m256i&, __m256i&) {};
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        dot_affine_superblock(w[b].d, w[b].dmin, w[b].scales, w[b].qs, x[b], no_high, acc, acc_min);
    }
    *result = hsum(acc) - hsum(acc_min);
}

void dot_q5_k(int64_t n, float* result, const void* w_row, const void* x_row) {
    const auto* w = static_cast<const BlockQ5_K*>(w_row);
    const auto* x = static_cast<const BlockQ8_K*>(x_row);
    __m256 acc = _mm256_setzero_ps(), acc_min = _mm256_setzero_ps();
    const __m256i one = _mm256_set1_epi8(1);
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        const __m256i qh = load32(w[b].qh);
        auto add_high = [&](int c, __m256i& lo, __m256i& hi) {
            // Bit 2c (low half) / 2c+1 (high half) of each qh byte becomes bit 4 of the level.
            const __m128i shift_lo = _mm_cvtsi32_si128(2 * c);
            const __m128i shift_hi = _mm_cvtsi32_si128(2 * c + 1);
            lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srl_epi16(qh, shift_lo), one), 4));
            hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srl_epi16(qh, shift_hi), one), 4));
        };
        dot_affine_superblock(w[b].d, w[b].dmin, w[b].scales, w[b].qs, x[b], add_high, acc, acc_min);
    }
    *result = hsum(acc) - hsum(acc_min);
}

void dot_q6_k(int64_t n, float* result, const void* w_row, const void* x_row) {
    const auto* w = static_cast<const BlockQ6_K*>(w_row);
    const auto* x = static_cast<const BlockQ8_K*>(x_row);
    const __m256i low4 = _mm256_set1_epi8(15);
    const __m256i low2 = _mm256_set1_epi8(3);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        const BlockQ6_K& wb = w[b];
        const __m128i scales8 = load16(wb.scales);
        // Levels are stored with +32: subtract 32 * sum_s scale_s * bsum_s once per block.
        const __m256i bias = _mm256_madd_epi16(load32(x[b].bsums), _mm256_cvtepi8_epi16(scales8));
        __m256i sumi = _mm256_setzero_si256();
        for (int h = 0; h < 2; ++h) {
            const __m256i ql0 = load32(wb.ql + 64 * h);
            const __m256i ql1 = load32(wb.ql + 64 * h + 32);
            const __m256i qh = load32(wb.qh + 32 * h);
            const __m256i q[4] = {
                _mm256_or_si256(_mm256_and_si256(ql0, low4), _mm256_slli_epi16(_mm256_and_si256(qh, low2), 4)),
                _mm256_or_si256(_mm256_and_si256(ql1, low4),
                                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), low2), 4)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4),
                                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), low2), 4)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4),
                                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), low2), 4)),
            };
            for (int k = 0; k < 4; ++k) {
                // Values 0-15 of this 32 use scale 8h+2k, values 16-31 scale 8h+2k+1.
                const int s = 8 * h + 2 * k;
                const __m128i pick = _mm_setr_epi8(static_cast<char>(s), static_cast<char>(s), static_cast<char>(s),
                                                   static_cast<char>(s), static_cast<char>(s), static_cast<char>(s),
                                                   static_cast<char>(s), static_cast<char>(s), static_cast<char>(s + 1),
                                                   static_cast<char>(s + 1), static_cast<char>(s + 1),
                                                   static_cast<char>(s + 1), static_cast<char>(s + 1),
                                                   static_cast<char>(s + 1), static_cast<char>(s + 1),
                                                   static_cast<char>(s + 1));
                const __m256i scale16 = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(scales8, pick));
                sumi = _mm256_add_epi32(sumi, scaled_pairs(q[k], load32(x[b].qs + 128 * h + 32 * k), scale16));
            }
        }
        sumi = _mm256_sub_epi32(sumi, _mm256_slli_epi32(bias, 5));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(x[b].d * f16_to_f32(wb.d)), _mm256_cvtepi32_ps(sumi), acc);
    }
    *result = hsum(acc);
}

}  // namespace

VecDotFn avx2_kernel(DType weight) {
    switch (weight) {
        case DType::F32: return dot_f32;
        case DType::F16: return dot_half<load_f16x8, f16_to_f32>;
        case DType::BF16: return dot_half<load_bf16x8, bf16_to_f32>;
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

VecDotRowsFn avx2_rows_kernel(DType) { return nullptr; }

}  // namespace inlay::quant::detail

#else  // no AVX2: the dispatcher falls back to the reference kernels

namespace inlay::quant::detail {
VecDotFn avx2_kernel(DType) { return nullptr; }
VecDotRowsFn avx2_rows_kernel(DType) { return nullptr; }
}  // namespace inlay::quant::detail

#endif
