// Internal: the levels of the K-quant super-blocks as bytes, 32 to a 256-bit vector,
// shared by the AVX2 K-quant kernels (vec_dot_avx2_kquants.cpp), the AMX tiles
// (vec_dot_tile_amx_kquants.cpp) and the 512-bit tiles (vec_dot_tile_avx512.cpp).
// Include only inside `#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)`.
#pragma once

#include <immintrin.h>

#include "quant/blocks.h"
#include "quant/simd_avx2.h"

namespace inlay::quant::detail::avx2 {

using namespace simd;

// The eight 6-bit scales and mins of a Q4_K / Q5_K super-block as bytes
// [sc0..sc7, m0..m7]. With the 12 packed bytes read as 32-bit words a, b, c:
// sc0-3 = a & 0x3f.., m0-3 = b & 0x3f.., and sc4-7 / m4-7 take their low nibbles from c
// (low / high halves of its bytes) and their top two bits from bits 6-7 of a / b.
inline __m128i unpack_k_scales(const uint8_t* packed) {
    const __m128i v = _mm_setr_epi32(static_cast<int32_t>(load_u32(packed)), static_cast<int32_t>(load_u32(packed + 4)),
                                      static_cast<int32_t>(load_u32(packed + 8)), 0);
    const __m128i low6 = _mm_and_si128(v, _mm_set1_epi32(0x3f3f3f3f));                            // [sc0-3, m0-3, ...]
    const __m128i top2 = _mm_and_si128(_mm_srli_epi32(v, 2), _mm_set1_epi32(0x30303030));         // [a's, b's, ...]
    const __m128i c = _mm_shuffle_epi32(v, _MM_SHUFFLE(2, 2, 2, 2));
    const __m128i nib = _mm_and_si128(_mm_srlv_epi32(c, _mm_setr_epi32(0, 0, 4, 4)), _mm_set1_epi32(0x0f0f0f0f));
    const __m128i lo = _mm_shuffle_epi32(low6, _MM_SHUFFLE(1, 1, 0, 0));
    const __m128i hi = _mm_or_si128(_mm_shuffle_epi32(top2, _MM_SHUFFLE(1, 1, 0, 0)), nib);
    return _mm_blend_epi32(lo, hi, 0b1010);
}

// Bit `shift` of each byte of qh, moved to bit 4 (the fifth bit of a Q5_K level).
template <int Shift>
inline __m256i fifth_bit(__m256i qh) {
    return _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, Shift), _mm256_set1_epi8(1)), 4);
}

// The 128 levels (0..63, stored +32) of half h of a Q6_K super-block as four vectors of
// 32: q[k] holds values 32k..32k+31 of the half (low 4 bits from ql, top 2 from qh).
inline void q6_levels(const BlockQ6_K& b, int h, __m256i (&q)[4]) {
    const __m256i low4 = _mm256_set1_epi8(15);
    const __m256i low2 = _mm256_set1_epi8(3);
    const __m256i ql0 = load32(b.ql + 64 * h);
    const __m256i ql1 = load32(b.ql + 64 * h + 32);
    const __m256i qh = load32(b.qh + 32 * h);
    q[0] = _mm256_or_si256(_mm256_and_si256(ql0, low4), _mm256_slli_epi16(_mm256_and_si256(qh, low2), 4));
    q[1] = _mm256_or_si256(_mm256_and_si256(ql1, low4),
                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), low2), 4));
    q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4),
                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), low2), 4));
    q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4),
                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), low2), 4));
}

// Levels of chunk C (64 values) of a Q4_K / Q5_K super-block: values 64C..64C+31 in lo,
// 64C+32..64C+63 in hi (plus the fifth bit from qh for Q5_K).
template <bool Q5, int C, class Block>
inline void affine_levels(const Block& b, __m256i qh, __m256i& lo, __m256i& hi) {
    const __m256i low4 = _mm256_set1_epi8(15);
    const __m256i q = load32(b.qs + 32 * C);
    lo = _mm256_and_si256(q, low4);
    hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
    if constexpr (Q5) {
        lo = _mm256_or_si256(lo, fifth_bit<2 * C>(qh));
        hi = _mm256_or_si256(hi, fifth_bit<2 * C + 1>(qh));
    }
}

// ---- the Q4_K / Q5_K super-block totals (the 256- and 512-bit tiles share them)

// The mins as int16 pairs [m0, m0, m1, m1, .., m7, m7], from the unpacked scales: madd
// with the 16 bsums gives m_j * (bsums[2j] + bsums[2j+1]) in int32 lane j.
inline __m256i k_min_pairs(__m128i scales_mins) {
    const __m128i m16 = _mm_cvtepu8_epi16(_mm_srli_si128(scales_mins, 8));
    return _mm256_set_m128i(_mm_unpackhi_epi16(m16, m16), _mm_unpacklo_epi16(m16, m16));
}

// A token's sums over the eight 32-element sub-blocks of a super-block as int16 pairs:
// word p = (sum 2p, sum 2p + 1), for dpwssd against the mins of sub-blocks 2p and 2p + 1.
inline void sub_block_sum_pairs(const int16_t* bsums, int32_t (&words)[4]) {
    const __m256i sums = _mm256_madd_epi16(load32(bsums), _mm256_set1_epi16(1));
    alignas(32) int32_t pairs[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(pairs), _mm256_packs_epi32(sums, sums));
    words[0] = pairs[0], words[1] = pairs[1], words[2] = pairs[4], words[3] = pairs[5];
}

// m_j * (bsums[2j] + bsums[2j+1]) in int32 lane j, from the unpacked scales.
inline __m256i k_min_products(__m128i scales_mins, __m256i bsums) {
    return _mm256_madd_epi16(bsums, k_min_pairs(scales_mins));
}

// Shuffle broadcasting int16 lane j of a 128-bit lane to all its lanes.
inline __m256i broadcast16_pick(int j) {
    const int16_t both = static_cast<int16_t>((2 * j) | ((2 * j + 1) << 8));
    return _mm256_set1_epi16(both);
}

// Shuffle giving int16 lane j in the low 128-bit lane and lane j+1 in the high one.
inline __m256i pair_pick16(int j) {
    const auto lo = static_cast<int16_t>((2 * j) | ((2 * j + 1) << 8));
    const auto hi = static_cast<int16_t>((2 * j + 2) | ((2 * j + 3) << 8));
    return _mm256_setr_m128i(_mm_set1_epi16(lo), _mm_set1_epi16(hi));
}

// [sum of a's lanes, sum of b's lanes, the same again]: a super-block's exact integer
// totals, from the lane sums the maddubs/madd products leave.
inline __m128i lane_totals(__m256i a, __m256i b) {
    const __m256i h = _mm256_hadd_epi32(a, b);
    const __m256i hh = _mm256_hadd_epi32(h, h);
    return _mm_add_epi32(_mm256_castsi256_si128(hh), _mm256_extracti128_si256(hh, 1));
}

// The K-quants' float order (vec_dot_reference.cpp): lane 0 of acc gets
// fma(float(sumi), d_x * d_w, acc), lane 1 fma(float(summ), d_x * dmin, acc_min).
inline __m128 fuse_totals(__m128i totals, float scale, float scale_min, __m128 acc) {
    return _mm_fmadd_ps(_mm_cvtepi32_ps(totals), _mm_setr_ps(scale, scale_min, 0.0f, 0.0f), acc);
}

// acc - acc_min of a fuse_totals accumulator.
inline float affine_result(__m128 acc) { return _mm_cvtss_f32(acc) - _mm_cvtss_f32(_mm_movehdup_ps(acc)); }

}  // namespace inlay::quant::detail::avx2
