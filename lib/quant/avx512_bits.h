// Internal: building 512-bit vectors from two 256-bit halves (the 512-bit tiles and row
// kernels), and moving bits inside the bytes of a vector (vec_dot_avx512_kquants.cpp,
// vec_dot_avx2.cpp's AVX-512 rows): the nibbles of packed 4-bit levels and the high bits
// of 5- and 6-bit ones. With GFNI one affine transform over GF(2) moves any bits of every
// byte (an 8 x 8 bit matrix per qword); without it (Cascade Lake has AVX-512 VNNI but no
// GFNI) word shifts and masks do.
// Include only inside `#if defined(__AVX512F__) && defined(__AVX512BW__)`.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace inlay::quant::detail::avx512 {

// Low 256 bits from `lo`, high 256 bits from `hi`.
inline __m512i halves(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }
#if defined(__AVX512DQ__)
inline __m512 halves(__m256 lo, __m256 hi) { return _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1); }
#endif

// Where each bit of a byte comes from: from[k] is the source bit of bit k, -1 for 0.
struct ByteBits {
    int from[8];
};
inline constexpr ByteBits kLowNibble{{0, 1, 2, 3, -1, -1, -1, -1}};
inline constexpr ByteBits kHighNibble{{4, 5, 6, 7, -1, -1, -1, -1}};

#if defined(__GFNI__)
// The affine transform's matrix: byte 7 - k of the qword selects the inputs of bit k.
constexpr int64_t bit_matrix(ByteBits map) {
    uint64_t m = 0;
    for (int k = 0; k < 8; ++k)
        if (map.from[k] >= 0) m |= uint64_t{1} << map.from[k] << (8 * (7 - k));
    return static_cast<int64_t>(m);
}

// The bytes of 128-bit lane i moved by map Li.
template <ByteBits L0, ByteBits L1, ByteBits L2, ByteBits L3>
inline __m512i move_bits_lanes(__m512i v) {
    constexpr int64_t m0 = bit_matrix(L0), m1 = bit_matrix(L1), m2 = bit_matrix(L2), m3 = bit_matrix(L3);
    return _mm512_gf2p8affine_epi64_epi8(v, _mm512_setr_epi64(m0, m0, m1, m1, m2, m2, m3, m3), 0);
}

// The bytes of the low 256-bit half moved by Lo, of the high half by Hi.
template <ByteBits Lo, ByteBits Hi>
inline __m512i move_bits(__m512i v) {
    return move_bits_lanes<Lo, Lo, Hi, Hi>(v);
}
#endif

// Low 256-bit half: the low nibbles of v's bytes; high half: their high nibbles (0..15).
inline __m512i nibbles_by_half(__m512i v) {
#if defined(__GFNI__)
    return move_bits<kLowNibble, kHighNibble>(v);
#else
    const __m512i shift = halves(_mm256_setzero_si256(), _mm256_set1_epi16(4));
    return _mm512_and_si512(_mm512_srlv_epi16(v, shift), _mm512_set1_epi8(15));
#endif
}

// 128-bit lanes 0 and 2: the low nibbles of v's bytes; lanes 1 and 3: the high ones.
inline __m512i nibbles_by_lane(__m512i v) {
#if defined(__GFNI__)
    return move_bits_lanes<kLowNibble, kHighNibble, kLowNibble, kHighNibble>(v);
#else
    const __m256i shift = _mm256_setr_epi16(0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 4, 4, 4);
    return _mm512_and_si512(_mm512_srlv_epi16(v, halves(shift, shift)), _mm512_set1_epi8(15));
#endif
}

}  // namespace inlay::quant::detail::avx512
