// Internal: the records of the interleaved layout (interleaved_rows.h describes them):
// their sizes, and their levels and scales unpacked, one row per 32-bit lane. Shared by
// the repacking and decode kernels (interleaved_rows.cpp, interleaved_kquants.cpp) and the
// sixteen-row prompt tiles (vec_dot_tile_avx512_rows16*.cpp), which must read the same
// bytes the same way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/dtype.h"

#if defined(__AVX512F__) && defined(__AVX512BW__)
#include <immintrin.h>

#include "quant/avx512_bits.h"
#endif

namespace inlay::quant::detail::interleaved {

inline constexpr int kRows = 16;
inline constexpr int kPassTokens = 8;  // tokens whose accumulators stay in registers during one pass
inline constexpr size_t kScaleBytes = kRows * sizeof(uint16_t);  // d[16]
inline constexpr size_t kHighBytes = 8 * sizeof(uint64_t);       // high[8], Q5_0

constexpr bool is_kquant(DType weight) { return weight == DType::Q4_K || weight == DType::Q5_K || weight == DType::Q6_K; }
// Elements of a row a record holds: one block of 32, one Q1_0 block of 128, or one
// super-block of 256.
constexpr int64_t record_elems(DType weight) { return is_kquant(weight) ? 256 : weight == DType::Q1_0 ? 128 : 32; }

// quads: 8 x 16 lanes of 4 bytes for Q8_0 (levels), 4 x 16 for the nibbles of Q4_0 / Q5_0.
constexpr size_t quad_bytes(DType weight) { return (weight == DType::Q8_0 ? 8 : 4) * kRows * 4; }

// The K-quant records' parts (byte offsets in a record).
// Q4_K / Q5_K: d[16], dmin[16] (f16); scales[12][16] (byte j of row r's 12 packed scale
// bytes at 16j + r); quads[4][8][16] (bytes 32c + 4k..32c + 4k + 3 of row r's qs);
// Q5_K: high[8][16] (bytes 4k..4k + 3 of row r's qh).
inline constexpr size_t kAffineDmin = 32, kAffineScales = 64, kAffineQuads = 256, kAffineHigh = 2304;
// Q6_K: d[16] (f16); scales[16][16] (sub-block s of row r at 16s + r); ql[2][16][16]
// (bytes 64h + 4k..64h + 4k + 3 of row r's ql); qh[2][8][16] (bytes 32h + 4k.. of its qh).
inline constexpr size_t kQ6Scales = 32, kQ6Low = 288, kQ6High = 2336;

// Q1_0: d[16] (f16), then masks[32] (64-bit): bit 4r + j of masks[k] is row r's sign bit
// of element 4k + j, so masks[k] as a byte mask selects lane r's bytes of elements 4k..4k+3.
inline constexpr int kQ1Masks = 32;

// Every record holds its sixteen rows' stored blocks' bytes, only rearranged.
constexpr size_t record_bytes(DType weight) {
    switch (weight) {
        case DType::Q1_0: return kScaleBytes + kQ1Masks * sizeof(uint64_t);
        case DType::Q4_K: return kAffineHigh;
        case DType::Q5_K: return kAffineHigh + 8 * kRows * 4;
        case DType::Q6_K: return kQ6High + 16 * kRows * 4;
        default: return kScaleBytes + quad_bytes(weight) + (weight == DType::Q5_0 ? kHighBytes : 0);
    }
}
static_assert(record_bytes(DType::Q4_K) == 16 * 144 && record_bytes(DType::Q5_K) == 16 * 176 &&
              record_bytes(DType::Q6_K) == 16 * 210 && record_bytes(DType::Q8_0) == 16 * 34 &&
              record_bytes(DType::Q1_0) == 16 * 18);

// The decode kernels' walk over a call's records: each group of sixteen rows (one run of
// records, group_bytes long) against the tokens kPassTokens at a time, as
// fn(group, end of the call's records, first token, tokens, out), out[t] the sixteen
// results of token first + t.
template <class Fn>
inline void walk_groups(const uint8_t* w16, int64_t n_rows, size_t group_bytes, int64_t n_tokens, float* result,
                        size_t result_stride, Fn&& fn) {
    const uint8_t* end = w16 + static_cast<size_t>(n_rows / kRows) * group_bytes;
    for (int64_t g = 0; g < n_rows / kRows; ++g) {
        const uint8_t* group = w16 + static_cast<size_t>(g) * group_bytes;
        for (int64_t t0 = 0; t0 < n_tokens; t0 += kPassTokens) {
            const int tokens = static_cast<int>(n_tokens - t0 < kPassTokens ? n_tokens - t0 : kPassTokens);
            float* out[kPassTokens];
            for (int t = 0; t < tokens; ++t)
                out[t] = result + static_cast<size_t>(t0 + t) * result_stride + static_cast<size_t>(g * kRows);
            fn(group, end, t0, tokens, out);
        }
    }
}

// value = level - offset: Q8_0's levels are its values + 128; Q1_0's are 0 and 2 for -1 and +1.
constexpr int level_offset(DType weight) {
    return weight == DType::Q8_0 ? 128 : weight == DType::Q5_0 ? 16 : weight == DType::Q1_0 ? 1 : 8;
}
// The element of a Q5_0 block whose fifth bit is bit j of lane r's nibble group k.
constexpr int high_first(int k) { return k < 4 ? 4 * k : 16 + 4 * (k - 4); }

#if defined(__AVX512F__) && defined(__AVX512BW__)
// The high nibble of every byte (GFNI: one affine transform; else a shift and a mask).
inline __m512i high_nibbles(__m512i v) {
#if defined(__GFNI__)
    return _mm512_gf2p8affine_epi64_epi8(v, _mm512_set1_epi64(avx512::bit_matrix(avx512::kHighNibble)), 0);
#else
    return _mm512_and_si512(_mm512_srli_epi16(v, 4), _mm512_set1_epi8(15));
#endif
}

// levels[k]: the unsigned levels of elements 4k..4k+3 of every row of record `rec`, one
// row per 32-bit lane (value = level - level_offset(W)).
template <DType W>
inline void record_levels(const uint8_t* rec, __m512i (&levels)[8]) {
    if constexpr (W == DType::Q8_0) {
        for (int k = 0; k < 8; ++k) levels[k] = _mm512_loadu_si512(rec + kScaleBytes + 64 * k);
    } else {
        const __m512i low_mask = _mm512_set1_epi8(15);
        for (int k = 0; k < 4; ++k) {
            const __m512i raw = _mm512_loadu_si512(rec + kScaleBytes + 64 * k);
            levels[k] = _mm512_and_si512(raw, low_mask);
            levels[k + 4] = high_nibbles(raw);
        }
    }
    if constexpr (W == DType::Q5_0) {
        const __m512i sixteen = _mm512_set1_epi8(16);
        for (int k = 0; k < 8; ++k) {
            uint64_t bits;
            std::memcpy(&bits, rec + kScaleBytes + quad_bytes(W) + 8 * k, sizeof bits);
            levels[k] = _mm512_mask_add_epi8(levels[k], _cvtu64_mask64(bits), levels[k], sixteen);
        }
    }
}

// Q1_0: levels[k] the levels (0 or 2) of elements 32s + 4k..32s + 4k + 3 of every row of
// record `rec` (sub-block s), one row per 32-bit lane.
inline void q1_levels(const uint8_t* rec, int s, __m512i (&levels)[8]) {
    const __m512i twos = _mm512_set1_epi8(2);
    for (int k = 0; k < 8; ++k) {
        uint64_t bits;
        std::memcpy(&bits, rec + kScaleBytes + sizeof(uint64_t) * static_cast<size_t>(8 * s + k), sizeof bits);
        levels[k] = _mm512_maskz_mov_epi8(_cvtu64_mask64(bits), twos);
    }
}

// The record's sixteen row scales as f32 (K-quants: d; at rec + kAffineDmin, dmin).
inline __m512 record_scales(const uint8_t* rec) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec)));
}

// Bits [From, From + Count) of every byte moved to bits 4.., the others cleared (GFNI: one
// affine transform; else a word shift, whose bits from the neighbouring byte the mask drops).
template <int From, int Count>
inline __m512i bits_to_4(__m512i v) {
#if defined(__GFNI__)
    constexpr avx512::ByteBits map{{-1, -1, -1, -1, From, Count > 1 ? From + 1 : -1, -1, -1}};
    return _mm512_gf2p8affine_epi64_epi8(v, _mm512_set1_epi64(avx512::bit_matrix(map)), 0);
#else
    const __m512i mask = _mm512_set1_epi8(static_cast<char>(((1 << Count) - 1) << 4));
    if constexpr (From < 4) return _mm512_and_si512(_mm512_slli_epi16(v, 4 - From), mask);
    else if constexpr (From > 4) return _mm512_and_si512(_mm512_srli_epi16(v, From - 4), mask);
    else return _mm512_and_si512(v, mask);
#endif
}

// Bytes 16q..16q + 15 of v (one per row) as sixteen 32-bit lanes.
template <int Q>
inline __m512i byte_lanes(__m512i v) {
    return _mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(v, Q));
}

// Q4_K / Q5_K: the sixteen rows' 6-bit scales and mins, one byte per (sub-block, row):
// sc[0] sub-blocks 0..3 (16 bytes each), sc[1] 4..7; the same for m. The stored packing:
// sub-block j < 4 in bytes j (scale) and 4 + j (min); j >= 4 in the nibbles of byte 4 + j
// with its top two bits in bits 6-7 of bytes j - 4 and j.
inline void affine_scales(const uint8_t* rec, __m512i (&sc)[2], __m512i (&m)[2]) {
    const __m512i b03 = _mm512_loadu_si512(rec + kAffineScales), b47 = _mm512_loadu_si512(rec + kAffineScales + 64),
                  b8b = _mm512_loadu_si512(rec + kAffineScales + 128);
    const __m512i low6 = _mm512_set1_epi8(0x3f), low4 = _mm512_set1_epi8(15), top = _mm512_set1_epi8(0x30);
    sc[0] = _mm512_and_si512(b03, low6);
    m[0] = _mm512_and_si512(b47, low6);
    // (a & c) | b: the nibble, and bits 6-7 of the other byte moved to 4-5 (masked).
    sc[1] = _mm512_ternarylogic_epi32(b8b, _mm512_and_si512(_mm512_srli_epi16(b03, 2), top), low4, 0xEC);
    m[1] = _mm512_ternarylogic_epi32(_mm512_srli_epi16(b8b, 4), _mm512_and_si512(_mm512_srli_epi16(b47, 2), top), low4,
                                     0xEC);
}

// Q4_K / Q5_K: the mins of sub-blocks 2p and 2p + 1 of each row as an int16 pair in its
// lane (low, high), from affine_scales' m, for dpwssd against a token's sub-block sums.
inline void affine_min_pairs(const __m512i (&m)[2], __m512i (&pairs)[4]) {
    pairs[0] = _mm512_or_si512(byte_lanes<0>(m[0]), _mm512_slli_epi32(byte_lanes<1>(m[0]), 16));
    pairs[1] = _mm512_or_si512(byte_lanes<2>(m[0]), _mm512_slli_epi32(byte_lanes<3>(m[0]), 16));
    pairs[2] = _mm512_or_si512(byte_lanes<0>(m[1]), _mm512_slli_epi32(byte_lanes<1>(m[1]), 16));
    pairs[3] = _mm512_or_si512(byte_lanes<2>(m[1]), _mm512_slli_epi32(byte_lanes<3>(m[1]), 16));
}

// A token's four activation bytes broadcast to every lane (dpbusd's other operand).
inline __m512i broadcast_quad(const int8_t* p) {
    int32_t v;
    std::memcpy(&v, p, sizeof v);
    return _mm512_set1_epi32(v);
}

// Asks for the record Ahead bytes past `rec` (every line of it), unless that lies at or
// past `end`, the end of the call's records (another thread reads those).
template <size_t Record, size_t Ahead>
inline void prefetch_record(const uint8_t* rec, const uint8_t* end) {
    if (const uint8_t* ahead = rec + Ahead; ahead < end)
        for (size_t line = 0; line < Record; line += 64) _mm_prefetch(reinterpret_cast<const char*>(ahead) + line, _MM_HINT_T0);
}

// Q4_K / Q5_K chunk C (64 elements): lo[k] the levels of elements 64C + 4k.. (sub-block
// 2C), hi[k] of 64C + 32 + 4k.. (sub-block 2C + 1), one row per lane (0..15, Q5_K 0..31).
template <bool Q5, int C>
inline void affine_levels(const uint8_t* rec, __m512i (&lo)[8], __m512i (&hi)[8]) {
    const __m512i low4 = _mm512_set1_epi8(15);
    for (int k = 0; k < 8; ++k) {
        const __m512i raw = _mm512_loadu_si512(rec + kAffineQuads + 64 * (8 * C + k));
        lo[k] = _mm512_and_si512(raw, low4);
        hi[k] = high_nibbles(raw);
        if constexpr (Q5) {
            // Fifth bits: bit 2C of qh byte l for element 64C + l, bit 2C + 1 for 64C + 32 + l.
            const __m512i qh = _mm512_loadu_si512(rec + kAffineHigh + 64 * k);
            lo[k] = _mm512_or_si512(lo[k], bits_to_4<2 * C, 1>(qh));
            hi[k] = _mm512_or_si512(hi[k], bits_to_4<2 * C + 1, 1>(qh));
        }
    }
}

// Q6_K half H, ql quad K: lo the levels (0..63) of elements 128H + 4K.. (sub-block 8H +
// K / 4), hi of 128H + 64 + 4K.. (sub-block 8H + 4 + K / 4), one row per lane. Their top
// two bits are in qh quad K % 8: bits 0-1 and 4-5 for K < 8, 2-3 and 6-7 for K >= 8.
template <int H, int K>
inline void q6_levels(const uint8_t* rec, __m512i& lo, __m512i& hi) {
    constexpr int s = 2 * (K / 8);
    const __m512i ql = _mm512_loadu_si512(rec + kQ6Low + 64 * (16 * H + K));
    const __m512i qh = _mm512_loadu_si512(rec + kQ6High + 64 * (8 * H + K % 8));
    const __m512i top_lo = bits_to_4<s, 2>(qh);  // a named value: clang's ternarylogic is a macro
    lo = _mm512_ternarylogic_epi32(ql, top_lo, _mm512_set1_epi8(15), 0xEC);  // (a & c) | b
    hi = _mm512_or_si512(high_nibbles(ql), bits_to_4<4 + s, 2>(qh));
}

// Q6_K: sub-block s's sixteen signed scales as 32-bit lanes.
inline __m512i q6_scale_lanes(const uint8_t* rec, int s) {
    return _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec + kQ6Scales + 16 * s)));
}
#endif

}  // namespace inlay::quant::detail::interleaved
