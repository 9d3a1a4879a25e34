// Internal: the per-type pieces shared by the AVX2 row kernels (vec_dot_avx2.cpp) and
// the token-tile kernels (vec_dot_tile_avx2.cpp): float elements widened to f32, the
// levels of the 32-element block types and their integer dots with Q8 activations.
// Include only inside `#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "core/dtype.h"
#include "core/half.h"
#include "quant/blocks.h"
#include "quant/simd_avx2.h"

namespace inlay::quant::detail::avx2 {

using namespace simd;

// With AVX-512VL the compiler has 32 vector registers (16 without), which sets how many
// rows and tokens a tile kernel can keep in flight.
#if defined(__AVX512VL__)
inline constexpr bool kWideRegisters = true;
#else
inline constexpr bool kWideRegisters = false;
#endif

// Row r of a weight matrix whose rows are `stride` bytes apart.
template <class T>
const T* row_as(const uint8_t* w, size_t stride, int r) {
    return static_cast<const T*>(static_cast<const void*>(w + static_cast<size_t>(r) * stride));
}

// ---------------------------------------------------------------- float types

// Eight elements of a float type widened to f32, and one element for the tail.
template <DType T>
struct FloatElem;
template <>
struct FloatElem<DType::F32> {
    using type = float;
    static __m256 load(const float* p) { return _mm256_loadu_ps(p); }
    static float scalar(float v) { return v; }
};
template <>
struct FloatElem<DType::F16> {
    using type = uint16_t;
    static __m256 load(const uint16_t* p) { return _mm256_cvtph_ps(load16(p)); }
    static float scalar(uint16_t v) { return f16_to_f32(v); }
};
template <>
struct FloatElem<DType::BF16> {
    using type = uint16_t;
    static __m256 load(const uint16_t* p) {
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(load16(p)), 16));
    }
    static float scalar(uint16_t v) { return bf16_to_f32(v); }
};

// ---------------------------------------------------------------- 32-element blocks

// 0xFF in byte i where bit i of the 32 bits at p is set (bit i % 8 of byte i / 8), else 0:
// lane byte i picks byte i / 8, then tests bit i % 8.
inline __m256i bit_bytes(const uint8_t* p) {
    const __m256i shuffle = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,  //
                                             2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i select = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
    const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int32_t>(load_u32(p))), shuffle);
    return _mm256_cmpeq_epi8(_mm256_and_si256(bytes, select), select);
}

#if defined(__AVX512BW__) && defined(__AVX512VL__)
// The 32 low nibbles of a Q4_0 / Q4_1 / Q5_x block in element order (0..15): the 16
// bytes in both halves, the upper half shifted by 4 in one variable word shift.
inline __m256i nibbles(const uint8_t* qs) {
    const __m256i raw = _mm256_broadcastsi128_si256(load16(qs));
    const __m256i shift = _mm256_setr_epi16(0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 4, 4, 4);
    return _mm256_and_si256(_mm256_srlv_epi16(raw, shift), _mm256_set1_epi8(15));
}

// Q5_x levels (0..31) in element order: the nibbles plus 16 where bit i of qh is set,
// qh being the byte mask of a masked add.
inline __m256i levels5(const uint8_t* qs, const uint8_t* qh) {
    const __m256i low = nibbles(qs);
    return _mm256_mask_add_epi8(low, _cvtu32_mask32(load_u32(qh)), low, _mm256_set1_epi8(16));
}
#else
// The 32 low nibbles of a Q4_0 / Q4_1 / Q5_x block in element order (0..15).
inline __m256i nibbles(const uint8_t* qs) {
    const __m128i raw = load16(qs);
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(15));
}

// Q5_x levels (0..31) in element order: the nibbles plus 16 where bit i of qh is set.
inline __m256i levels5(const uint8_t* qs, const uint8_t* qh) {
    return _mm256_or_si256(nibbles(qs), _mm256_and_si256(bit_bytes(qh), _mm256_set1_epi8(16)));
}
#endif

// Per weight type: the activation block, the level offset (value = level - kOffset, the
// offset applied as -kOffset * sum(x), computed once per activation block and shared by
// all rows), whether there is a min (m * s per block), the unsigned levels of a block
// (types stored as levels; Q8_0 stores signed values), and the block's integer dot with
// the activation quants xq (`start` holds the offset term). Levels are unsigned bytes
// (at most 31), so maddubs' pair sums stay below 2 * 31 * 127. Int32 lane k holds the
// products 4k..4k+3, as in ggml's kernels.
template <class Block>
struct Block32;
template <>
struct Block32<BlockQ8_0> {
    using Act = BlockQ8_0;
    static constexpr int kOffset = 0;
    static constexpr bool kMin = false;
    static __m256i dot(const BlockQ8_0& b, __m256i xq, __m256i) { return dot_i8_i8(load32(b.qs), xq); }
};
template <>
struct Block32<BlockQ4_0> {
    using Act = BlockQ8_0;
    static constexpr int kOffset = 8;
    static constexpr bool kMin = false;
    static __m256i levels(const BlockQ4_0& b) { return nibbles(b.qs); }
    static __m256i dot(const BlockQ4_0& b, __m256i xq, __m256i start) { return dot_u8_i8_add(start, levels(b), xq); }
};
template <>
struct Block32<BlockQ5_0> {
    using Act = BlockQ8_0;
    static constexpr int kOffset = 16;
    static constexpr bool kMin = false;
    static __m256i levels(const BlockQ5_0& b) { return levels5(b.qs, b.qh); }
    static __m256i dot(const BlockQ5_0& b, __m256i xq, __m256i start) { return dot_u8_i8_add(start, levels(b), xq); }
};
template <>
struct Block32<BlockQ4_1> {
    using Act = BlockQ8_1;
    static constexpr int kOffset = 0;
    static constexpr bool kMin = true;
    static __m256i levels(const BlockQ4_1& b) { return nibbles(b.qs); }
    static __m256i dot(const BlockQ4_1& b, __m256i xq, __m256i) { return dot_u8_i8(levels(b), xq); }
};
template <>
struct Block32<BlockQ5_1> {
    using Act = BlockQ8_1;
    static constexpr int kOffset = 0;
    static constexpr bool kMin = true;
    static __m256i levels(const BlockQ5_1& b) { return levels5(b.qs, b.qh); }
    static __m256i dot(const BlockQ5_1& b, __m256i xq, __m256i) { return dot_u8_i8(levels(b), xq); }
};

template <class Block>
__m256i offset_start(__m256i xq) {
    if constexpr (Block32<Block>::kOffset == 0) return _mm256_setzero_si256();
    else return _mm256_sub_epi32(_mm256_setzero_si256(), dot_u8_i8(_mm256_set1_epi8(Block32<Block>::kOffset), xq));
}

// The weights of 32-element block i of a Q8_0 / Q4_0 / Q5_0 row as signed bytes in
// element order (for Q1_0: part i % 4 of block i / 4, +1 where the bit is set, -1
// elsewhere), and the block's f16 scale: the rows the row-per-lane tiles regroup.
template <class Block>
__m256i block_weights(const uint8_t* row, int64_t i, uint16_t& d) {
    if constexpr (std::is_same_v<Block, BlockQ1_0>) {
        const BlockQ1_0& b = reinterpret_cast<const BlockQ1_0*>(row)[i / 4];
        d = b.d;
        return _mm256_blendv_epi8(_mm256_set1_epi8(-1), _mm256_set1_epi8(1), bit_bytes(b.qs + 4 * (i % 4)));
    } else {
        const Block& b = reinterpret_cast<const Block*>(row)[i];
        d = b.d;
        if constexpr (std::is_same_v<Block, BlockQ8_0>) return load32(b.qs);
        else return _mm256_sub_epi8(Block32<Block>::levels(b), _mm256_set1_epi8(Block32<Block>::kOffset));
    }
}

// The f16 scales of block b of eight rows as f32, lane r row r's.
template <class Block>
inline __m256 row_scales8(const Block* const (&wr)[8], int64_t b) {
    return _mm256_cvtph_ps(_mm_setr_epi16(
        static_cast<int16_t>(wr[0][b].d), static_cast<int16_t>(wr[1][b].d), static_cast<int16_t>(wr[2][b].d),
        static_cast<int16_t>(wr[3][b].d), static_cast<int16_t>(wr[4][b].d), static_cast<int16_t>(wr[5][b].d),
        static_cast<int16_t>(wr[6][b].d), static_cast<int16_t>(wr[7][b].d)));
}

// The eight int32 sums of eight vectors' lanes: result lane r = sum of v[r]'s lanes.
inline __m256i sum_lanes8(const __m256i (&v)[8]) {
    const __m256i u0 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
    const __m256i u1 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
    // u0 = [v0..v3 sums of the low 128-bit halves | of the high halves], u1 likewise for v4..v7
    return _mm256_add_epi32(_mm256_permute2x128_si256(u0, u1, 0x20), _mm256_permute2x128_si256(u0, u1, 0x31));
}

}  // namespace inlay::quant::detail::avx2
