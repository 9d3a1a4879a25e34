// Internal: the record of the interleaved Q8_0 / Q4_0 / Q5_0 layout (interleaved_rows.h
// describes it): its sizes, and its levels unpacked, one row per 32-bit lane. Shared by
// the repacking and decode kernel (interleaved_rows.cpp) and the sixteen-row prompt tiles
// (vec_dot_tile_avx512_rows16.cpp), which must read the same bytes the same way.
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
inline constexpr size_t kScaleBytes = kRows * sizeof(uint16_t);  // d[16]
inline constexpr size_t kHighBytes = 8 * sizeof(uint64_t);       // high[8], Q5_0

// quads: 8 x 16 lanes of 4 bytes for Q8_0 (levels), 4 x 16 for the nibbles of Q4_0 / Q5_0.
constexpr size_t quad_bytes(DType weight) { return (weight == DType::Q8_0 ? 8 : 4) * kRows * 4; }
constexpr size_t record_bytes(DType weight) {
    return kScaleBytes + quad_bytes(weight) + (weight == DType::Q5_0 ? kHighBytes : 0);
}
// value = level - offset: Q8_0's levels are its values + 128.
constexpr int level_offset(DType weight) { return weight == DType::Q8_0 ? 128 : weight == DType::Q5_0 ? 16 : 8; }
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

// The record's sixteen row scales as f32.
inline __m512 record_scales(const uint8_t* rec) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec)));
}
#endif

}  // namespace inlay::quant::detail::interleaved
