// The vector primitives of CPU attention, one implementation per ISA (AVX-512, AVX2 with
// FMA and F16C, portable scalar), all with the same lane-wise meaning: every lane of
// every op is computed alone, so a value never depends on which other values share its
// vector. That is what lets attention group rows freely and stay batch invariant.
//
// vexp: e^x by range reduction (x = n ln2 + r, |r| <= ln2/2) and a degree-6 polynomial;
// under 1 ulp from the exact value for x in [-87.33, 88] (0.974 at worst over 240k
// points on each of the three paths; tests/backend/test_attention_tiles.cpp requires
// 2), exactly 1 at 0 and exactly 0 below -87.33 (the smallest normal float), so
// exp(-inf) = 0; NaN stays NaN.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/expf_poly.h"
#include "core/half.h"

#if defined(__AVX512F__)
#include "quant/gcc_avx512_warnings.h"  // GCC 12's false positives in its own intrinsics
#include <immintrin.h>
#define INLAY_ATTN_AVX512 1
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#define INLAY_ATTN_AVX2 1
#include "quant/simd_avx2.h"
#endif

namespace inlay::attn_simd {

// Cephes-style expf constants (core/expf_poly.h): ln 2 split in two for an exact n * ln2_hi.
using expf_poly::kExpMax;
using expf_poly::kExpMin;
using expf_poly::kLn2Hi;
using expf_poly::kLn2Lo;
using expf_poly::kLog2e;
using expf_poly::kP0;
using expf_poly::kP1;
using expf_poly::kP2;
using expf_poly::kP3;
using expf_poly::kP4;
using expf_poly::kP5;

#if INLAY_ATTN_AVX512
inline constexpr int kWidth = 16;
using vf = __m512;
inline vf vload(const float* p) { return _mm512_loadu_ps(p); }
inline void vstore(float* p, vf v) { _mm512_storeu_ps(p, v); }
inline vf vset1(float x) { return _mm512_set1_ps(x); }
inline vf vzero() { return _mm512_setzero_ps(); }
inline vf vmul(vf a, vf b) { return _mm512_mul_ps(a, b); }
inline vf vfma(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }
inline vf vload_f16(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
// Rounds every lane to the nearest f16 value (ties to even), kept as f32.
inline vf vround_f16(vf v) { return _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)); }
using vmask = __mmask16;
inline vf vadd(vf a, vf b) { return _mm512_add_ps(a, b); }
inline vf vfnma(vf a, vf b, vf c) { return _mm512_fnmadd_ps(a, b, c); }
inline vf vmin_nan_second(vf a, vf b) { return _mm512_min_ps(a, b); }  // b where either is NaN
inline vmask vless(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
inline vf vround_nearest(vf v) { return _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
// 2^n for integral n in the normal range, from the exponent bits.
inline vf vpow2(vf n) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23));
}
inline vf vzero_where(vmask m, vf v) { return _mm512_mask_blend_ps(m, v, _mm512_setzero_ps()); }
inline vf vsub(vf a, vf b) { return _mm512_sub_ps(a, b); }
inline vmask vgreater(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
inline vmask vand(vmask a, vmask b) { return a & b; }
inline vf vblend(vmask m, vf a, vf b) { return _mm512_mask_blend_ps(m, a, b); }  // b where m
inline vf vload_where(vmask m, const float* p) { return _mm512_maskz_loadu_ps(m, p); }  // 0 elsewhere, unread
#elif INLAY_ATTN_AVX2
inline constexpr int kWidth = 8;
using vf = __m256;
inline vf vload(const float* p) { return _mm256_loadu_ps(p); }
inline void vstore(float* p, vf v) { _mm256_storeu_ps(p, v); }
inline vf vset1(float x) { return _mm256_set1_ps(x); }
inline vf vzero() { return _mm256_setzero_ps(); }
inline vf vmul(vf a, vf b) { return _mm256_mul_ps(a, b); }
inline vf vfma(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }
inline vf vload_f16(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
inline vf vround_f16(vf v) { return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)); }
using vmask = __m256;
inline vf vadd(vf a, vf b) { return _mm256_add_ps(a, b); }
inline vf vfnma(vf a, vf b, vf c) { return _mm256_fnmadd_ps(a, b, c); }
inline vf vmin_nan_second(vf a, vf b) { return _mm256_min_ps(a, b); }  // b where either is NaN
inline vmask vless(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
inline vf vround_nearest(vf v) { return _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
// 2^n for integral n in the normal range, from the exponent bits.
inline vf vpow2(vf n) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
}
inline vf vzero_where(vmask m, vf v) { return _mm256_andnot_ps(m, v); }
inline vf vsub(vf a, vf b) { return _mm256_sub_ps(a, b); }
inline vmask vgreater(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
inline vmask vand(vmask a, vmask b) { return _mm256_and_ps(a, b); }
inline vf vblend(vmask m, vf a, vf b) { return _mm256_blendv_ps(a, b, m); }  // b where m
inline vf vload_where(vmask m, const float* p) { return _mm256_maskload_ps(p, _mm256_castps_si256(m)); }  // 0 elsewhere, unread
#else
inline constexpr int kWidth = 1;
using vf = float;
inline vf vload(const float* p) { return *p; }
inline void vstore(float* p, vf v) { *p = v; }
inline vf vset1(float x) { return x; }
inline vf vzero() { return 0.0f; }
inline vf vmul(vf a, vf b) { return a * b; }
inline vf vfma(vf a, vf b, vf c) { return std::fma(a, b, c); }
inline vf vload_f16(const uint16_t* p) { return f16_to_f32(*p); }
inline vf vround_f16(vf v) { return f16_to_f32(f32_to_f16(v)); }
using vmask = bool;
inline vf vadd(vf a, vf b) { return a + b; }
inline vf vsub(vf a, vf b) { return a - b; }
inline vmask vless(vf a, vf b) { return a < b; }
inline vmask vgreater(vf a, vf b) { return a > b; }
inline vmask vand(vmask a, vmask b) { return a && b; }
inline vf vblend(vmask m, vf a, vf b) { return m ? b : a; }  // b where m
inline vf vload_where(vmask m, const float* p) { return m ? *p : 0.0f; }
inline vf vexp(vf x) {
    if (std::isnan(x)) return x;
    if (x > kExpMax) x = kExpMax;
    if (x < kExpMin) return 0.0f;
    return expf_poly::exp_in_range(x);
}
#endif

// A K/V element as f32, from an f32 row (converted in scratch) or an f16 one (the cache).
inline vf vload_kv(const float* p) { return vload(p); }
inline vf vload_kv(const uint16_t* p) { return vload_f16(p); }

#if INLAY_ATTN_AVX512 || INLAY_ATTN_AVX2
// exp of every lane, the same operations on both widths: x = n ln2 + r with n rounded,
// ln 2 in two parts so n * ln2_hi is exact, the polynomial in r, times 2^n.
inline vf vexp(vf x) {
    x = vmin_nan_second(vset1(kExpMax), x);  // NaN passes through
    const vmask tiny = vless(x, vset1(kExpMin));
    const vf n = vround_nearest(vmul(x, vset1(kLog2e)));
    vf r = vfnma(n, vset1(kLn2Hi), x);
    r = vfnma(n, vset1(kLn2Lo), r);
    vf p = vset1(kP0);
    p = vfma(p, r, vset1(kP1));
    p = vfma(p, r, vset1(kP2));
    p = vfma(p, r, vset1(kP3));
    p = vfma(p, r, vset1(kP4));
    p = vfma(p, r, vset1(kP5));
    const vf y = vadd(vfma(p, vmul(r, r), r), vset1(1.0f));
    return vzero_where(tiny, vmul(y, vpow2(n)));
}
#endif

// sum q[i] k[i] for n (a multiple of kWidth) elements in 8 lanes, one accumulator, the
// lanes then summed halves, quarters, pairs.
#if INLAY_ATTN_AVX512 || INLAY_ATTN_AVX2
inline float dot8(const float* q, const float* k, int64_t n) {
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), _mm256_loadu_ps(k + i), acc);
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}
inline float dot8(const float* q, const uint16_t* k, int64_t n) {  // the same on f16 k
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n; i += 8)
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(k + i))), acc);
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}
#else
inline float dot8(const float* q, const float* k, int64_t n) {
    float s = 0.0f;
    for (int64_t i = 0; i < n; ++i) s = std::fma(q[i], k[i], s);
    return s;
}
inline float dot8(const float* q, const uint16_t* k, int64_t n) {
    float s = 0.0f;
    for (int64_t i = 0; i < n; ++i) s = std::fma(q[i], f16_to_f32(k[i]), s);
    return s;
}
#endif

// dot8(q, k) for n_k rows of k (`stride` elements apart): out[s] = dot8(q, k + s * stride, n).
// With AVX-512 two rows share each vector, row s's eight lanes in the low half and row
// s+1's in the high one, four such pairs at a time (then two): per lane the same fused
// multiply-adds in the same order, and per half the same reduction, so every value equals
// dot8's. Four accumulators keep four chains of dependent multiply-adds in flight.
#if INLAY_ATTN_AVX512
inline __m512 pair_rows(const float* a, const float* b) {
    return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(a)), _mm256_loadu_ps(b), 1);
}
inline __m512 pair_rows(const uint16_t* a, const uint16_t* b) {
    const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a));
    const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b));
    return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1));
}
// dot8's reduction of each 256-bit half: halves, quarters, pairs; the row of the low half
// in lane 0, the high half's in lane 8.
inline void reduce_pair(__m512 acc, float* out) {
    __m512 r = _mm512_add_ps(acc, _mm512_shuffle_f32x4(acc, acc, _MM_SHUFFLE(2, 3, 0, 1)));
    r = _mm512_add_ps(r, _mm512_permute_ps(r, _MM_SHUFFLE(3, 2, 3, 2)));
    r = _mm512_add_ps(r, _mm512_movehdup_ps(r));
    out[0] = _mm512_cvtss_f32(r);
    out[1] = _mm_cvtss_f32(_mm512_extractf32x4_ps(r, 2));
}
// dot8's reduction of the eight rows in four paired vectors (rows 2j and 2j + 1 in a[j]),
// side by side: each 256-bit half's 128-bit halves added, then lanes 0 + 2 and 1 + 3,
// then those two; row s's sum in lane s.
inline __m256 reduce_pairs4(const __m512 (&a)[4]) {
    // [rows 0..3 | 4..7]'s 128-bit sums, one row per 128-bit quarter.
    const __m512 lo = _mm512_add_ps(_mm512_shuffle_f32x4(a[0], a[1], 0x88), _mm512_shuffle_f32x4(a[0], a[1], 0xDD));
    const __m512 hi = _mm512_add_ps(_mm512_shuffle_f32x4(a[2], a[3], 0x88), _mm512_shuffle_f32x4(a[2], a[3], 0xDD));
    // Per quarter q: [row q lanes 0 + 2, 1 + 3, row q + 4 lanes 0 + 2, 1 + 3].
    const __m512 d = _mm512_add_ps(_mm512_shuffle_ps(lo, hi, 0x44), _mm512_shuffle_ps(lo, hi, 0xEE));
    // Per quarter q: [row q, row q + 4, row q, row q + 4].
    const __m512 e = _mm512_add_ps(_mm512_shuffle_ps(d, d, 0x88), _mm512_shuffle_ps(d, d, 0xDD));
    return _mm512_castps512_ps256(_mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0), e));
}
// R query rows at once (a GQA group's rows in decoding) share each K load and conversion;
// each row's multiply-adds and reduction are dots8's.
template <int R, class T>
inline void dots8_rows(const float* const (&q)[R], const T* k, int64_t stride, int64_t n_k, int64_t n,
                       float* const (&out)[R]) {
    int64_t s = 0;
    for (; s + 8 <= n_k; s += 8) {  // four chains of multiply-adds in flight per row
        const T* k0 = k + s * stride;
        __m512 a[R][4];
        for (int r = 0; r < R; ++r)
            for (int j = 0; j < 4; ++j) a[r][j] = _mm512_setzero_ps();
        for (int64_t i = 0; i < n; i += 8) {
            __m512 qv[R];
            for (int r = 0; r < R; ++r) qv[r] = _mm512_broadcast_f32x8(_mm256_loadu_ps(q[r] + i));
            for (int j = 0; j < 4; ++j) {
                const __m512 kv = pair_rows(k0 + 2 * j * stride + i, k0 + (2 * j + 1) * stride + i);
                for (int r = 0; r < R; ++r) a[r][j] = _mm512_fmadd_ps(qv[r], kv, a[r][j]);
            }
        }
        for (int r = 0; r < R; ++r) _mm256_storeu_ps(out[r] + s, reduce_pairs4(a[r]));
    }
    for (; s + 4 <= n_k; s += 4) {
        const T* k0 = k + s * stride;
        __m512 a[R], b[R];
        for (int r = 0; r < R; ++r) a[r] = b[r] = _mm512_setzero_ps();
        for (int64_t i = 0; i < n; i += 8) {
            const __m512 ka = pair_rows(k0 + i, k0 + stride + i), kb = pair_rows(k0 + 2 * stride + i, k0 + 3 * stride + i);
            for (int r = 0; r < R; ++r) {
                const __m512 qv = _mm512_broadcast_f32x8(_mm256_loadu_ps(q[r] + i));
                a[r] = _mm512_fmadd_ps(qv, ka, a[r]);
                b[r] = _mm512_fmadd_ps(qv, kb, b[r]);
            }
        }
        for (int r = 0; r < R; ++r) {
            reduce_pair(a[r], out[r] + s);
            reduce_pair(b[r], out[r] + s + 2);
        }
    }
    for (; s < n_k; ++s)
        for (int r = 0; r < R; ++r) out[r][s] = dot8(q[r], k + s * stride, n);
}
#elif INLAY_ATTN_AVX2
// Four rows of k at a time, one accumulator each (four chains in flight where one row's
// dot is a single chain of dependent multiply-adds), reduced side by side by hsum4, whose
// pairings are dot8's: every value equals dot8's.
template <int R, class T>
inline void dots8_rows(const float* const (&q)[R], const T* k, int64_t stride, int64_t n_k, int64_t n,
                       float* const (&out)[R]) {
    int64_t s = 0;
    for (; s + 4 <= n_k; s += 4) {
        const T* k0 = k + s * stride;
        __m256 a[R][4];
        for (int r = 0; r < R; ++r)
            for (int j = 0; j < 4; ++j) a[r][j] = _mm256_setzero_ps();
        for (int64_t i = 0; i < n; i += 8) {
            __m256 qv[R];
            for (int r = 0; r < R; ++r) qv[r] = _mm256_loadu_ps(q[r] + i);
            for (int j = 0; j < 4; ++j) {
                const __m256 kv = vload_kv(k0 + j * stride + i);
                for (int r = 0; r < R; ++r) a[r][j] = _mm256_fmadd_ps(qv[r], kv, a[r][j]);
            }
        }
        for (int r = 0; r < R; ++r) _mm_storeu_ps(out[r] + s, quant::simd::hsum4(a[r][0], a[r][1], a[r][2], a[r][3]));
    }
    for (; s < n_k; ++s)
        for (int r = 0; r < R; ++r) out[r][s] = dot8(q[r], k + s * stride, n);
}
#else
template <int R, class T>
inline void dots8_rows(const float* const (&q)[R], const T* k, int64_t stride, int64_t n_k, int64_t n,
                       float* const (&out)[R]) {
    for (int64_t s = 0; s < n_k; ++s)
        for (int r = 0; r < R; ++r) out[r][s] = dot8(q[r], k + s * stride, n);
}
#endif

template <class T>
inline void dots8(const float* q, const T* k, int64_t stride, int64_t n_k, int64_t n, float* out) {
    dots8_rows<1>({q}, k, stride, n_k, n, {out});
}

// e^x for n values (n a multiple of kWidth), each lane alone.
inline void exp_n(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; i += kWidth) vstore(y + i, vexp(vload(x + i)));
}

}  // namespace inlay::attn_simd
