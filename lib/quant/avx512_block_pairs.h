// Internal: two 32-element blocks of a Q8_0 / Q4_0 / Q5_0 row in one 512-bit vector, and
// the reduction of eight such rows' dpbusd lanes to per-block totals. Shared by the
// one-token row kernel (vec_dot_avx2.cpp, dot_block_sums_zmm8) and the few-token tile
// (vec_dot_tile_avx512.cpp, BlockPairTile512), which must give the same bits.
// Include only inside `#if defined(__AVX512F__) && defined(__AVX512BW__) &&
// defined(__AVX512VNNI__)`, after avx2_blocks.h.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <type_traits>

#include "quant/avx2_blocks.h"
#include "quant/avx512_bits.h"

namespace inlay::quant::detail::avx512 {

// The totals of eight rows' lane sums, each p[r] holding two parts (its 128-bit quarters
// 0-1 part A, 2-3 part B): [rows 0-3 | rows 4-7] of part A in the low 256 bits, of part B
// in the high ones, by 32-bit and 64-bit interleaves and one qword permute.
inline __m512i sum_lanes8_parts(const __m512i (&p)[8]) {
    __m512i u[4], v[2];
    for (int i = 0; i < 4; ++i)  // per quarter: [r0 + r0', r1 + r1', ...] pairwise lane sums of rows 2i, 2i+1
        u[i] = _mm512_add_epi32(_mm512_unpacklo_epi32(p[2 * i], p[2 * i + 1]), _mm512_unpackhi_epi32(p[2 * i], p[2 * i + 1]));
    for (int i = 0; i < 2; ++i)  // per quarter: the four rows 4i..4i+3's sums over the quarter
        v[i] = _mm512_add_epi32(_mm512_unpacklo_epi64(u[2 * i], u[2 * i + 1]), _mm512_unpackhi_epi64(u[2 * i], u[2 * i + 1]));
    // Qwords of two sources: quarter 0 of a, of b, quarter 2 of a, of b (and 1, 3).
    const __m512i pick_even = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);
    const __m512i pick_odd = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
    return _mm512_add_epi32(_mm512_permutex2var_epi64(v[0], pick_even, v[1]), _mm512_permutex2var_epi64(v[0], pick_odd, v[1]));
}

// The unsigned levels of blocks b0 and b1 of a row in the low and the high 256-bit half,
// in element order, and their offset (value = level - kOffset, applied as a dpbusd start
// of -kOffset * sum x): Q4_0 / Q5_0 as Block32<Block>::levels, Q8_0's signed values + 128.
template <class Block>
struct PairLevels {
    static constexpr int kOffset = avx2::Block32<Block>::kOffset;
    static __m512i load(const Block& b0, const Block& b1) {
        const __m512i raw = _mm512_mask_broadcast_i32x4(_mm512_broadcast_i32x4(avx2::load16(b0.qs)), 0xff00,
                                                        avx2::load16(b1.qs));
        const __m512i low = nibbles_by_lane(raw);
        if constexpr (std::is_same_v<Block, BlockQ5_0>) {
            const __mmask64 high = _cvtu64_mask64(avx2::load_u32(b0.qh) | uint64_t{avx2::load_u32(b1.qh)} << 32);
            return _mm512_mask_add_epi8(low, high, low, _mm512_set1_epi8(16));
        } else {
            return low;
        }
    }
};
template <>
struct PairLevels<BlockQ8_0> {
    static constexpr int kOffset = 128;
    static __m512i load(const BlockQ8_0& b0, const BlockQ8_0& b1) {
        return _mm512_xor_si512(halves(avx2::load32(b0.qs), avx2::load32(b1.qs)), _mm512_set1_epi8(-128));
    }
};

// -kOffset * sum x per dpbusd lane of a vector of activation quants: the start that
// makes dpbusd's sum of level * x the sum of value * x.
template <class Block>
inline __m512i pair_start(__m512i xq) {
    const __m512i offset = _mm512_set1_epi8(static_cast<char>(PairLevels<Block>::kOffset));
    return _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), offset, xq));
}

}  // namespace inlay::quant::detail::avx512
