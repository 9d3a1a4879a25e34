// Token-tile kernels with 512-bit vectors, for CPUs with AVX-512 (F, BW, VL, DQ, VNNI).
//
// The 256-bit tile kernels (vec_dot_tile_avx2.cpp) keep each (row, token) pair's eight
// float lanes in a vector of its own; here one 512-bit vector holds two sets of eight
// lanes, so each instruction does the work of two. The lanes are the same lanes, with
// the same integer sums and the same float operations in the same order, so the results
// stay bitwise equal to vec_dot_kernel's:
//   32-element blocks: the low half is token 2p's lanes, the high half token 2p+1's, for
//     one weight row (the row's block broadcast to both halves);
//   F16 / BF16: one vector is the row kernel's two accumulators (elements i..i+7 and
//     i+8..i+15 of a chunk of 16).
#include "quant/kernels.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__) && \
    defined(__AVX512VNNI__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "core/half.h"
#include "quant/gcc_avx512_warnings.h"
#include "quant/avx2_blocks.h"
#include "quant/avx2_kquant_levels.h"
#include "quant/avx512_bits.h"
#include "quant/avx512_block_pairs.h"

namespace inlay::quant::detail {
namespace {

using namespace avx2;
using avx512::halves;

// ---------------------------------------------------------------- float types

template <DType Type>
struct Wide16;
template <>
struct Wide16<DType::F16> {
    static __m512 load(const uint16_t* p) { return _mm512_cvtph_ps(load32(p)); }
};
template <>
struct Wide16<DType::BF16> {
    static __m512 load(const uint16_t* p) {
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(load32(p)), 16));
    }
};

// dot_float<F16 / BF16>'s arithmetic per pair: its two 8-lane accumulators are the two
// halves of one vector (elements 16k..16k+15 of each chunk); a last chunk of 8 goes into
// the low half (masked). One vector per pair leaves registers for 4 x 6 pairs, so each
// widened weight chunk serves 6 tokens and each activation chunk 4 rows.
// WideX: the activations are f32 already (TilePack widened them; exact), so only the
// weights are converted here: 4 conversions per 24 FMAs instead of 10.
template <DType Type, bool WideX = false>
struct FloatTile512 {
    using XElem = std::conditional_t<WideX, float, uint16_t>;
    using XE = FloatElem<WideX ? DType::F32 : Type>;
    static __m512 load_x(const XElem* p) {
        if constexpr (WideX) return _mm512_loadu_ps(p);
        else return Wide16<Type>::load(p);
    }
    template <int R, int T>
    static void run(int64_t n, float* result, size_t result_stride, const uint8_t* w, size_t w_stride,
                    const uint8_t* x, size_t x_stride) {
        using E = FloatElem<Type>;
        const uint16_t* wr[R];
        const XElem* xr[T];
        for (int r = 0; r < R; ++r) wr[r] = row_as<uint16_t>(w, w_stride, r);
        for (int t = 0; t < T; ++t) xr[t] = row_as<XElem>(x, x_stride, t);
        __m512 acc[R][T];
        for (int r = 0; r < R; ++r)
            for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
        int64_t i = 0;
        for (; i + 16 <= n; i += 16) {
            prefetch_rows<R, kPrefetchL2>(w, w_stride, static_cast<size_t>(i) * sizeof(uint16_t), 16 * sizeof(uint16_t));
            if constexpr (WideX) {
                // One widened weight vector live at a time, the activations as memory
                // operands of the FMAs: with all R weight vectors live beside the 24
                // accumulators GCC spilled them and reloaded one per FMA (half speed).
                for (int r = 0; r < R; ++r) {
                    const __m512 wv = Wide16<Type>::load(wr[r] + i);
                    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(xr[t] + i), acc[r][t]);
                }
            } else {
                __m512 wv[R];
                for (int r = 0; r < R; ++r) wv[r] = Wide16<Type>::load(wr[r] + i);
                for (int t = 0; t < T; ++t) {
                    const __m512 xv = load_x(xr[t] + i);
                    for (int r = 0; r < R; ++r) acc[r][t] = _mm512_fmadd_ps(wv[r], xv, acc[r][t]);
                }
            }
        }
        for (; i + 8 <= n; i += 8) {
            for (int t = 0; t < T; ++t) {
                const __m512 xv = _mm512_castps256_ps512(XE::load(xr[t] + i));
                for (int r = 0; r < R; ++r)
                    acc[r][t] =
                        _mm512_mask3_fmadd_ps(_mm512_castps256_ps512(E::load(wr[r] + i)), xv, acc[r][t], 0x00ff);
            }
        }
        if constexpr (R == 8) {
            if (i == n) {  // eight rows' sums of a token at once, to one store
                for (int t = 0; t < T; ++t) {
                    const __m512 column[8] = {acc[0][t], acc[1][t], acc[2][t], acc[3][t],
                                              acc[4][t], acc[5][t], acc[6][t], acc[7][t]};
                    _mm256_storeu_ps(result + static_cast<size_t>(t) * result_stride, hsum8(column));
                }
                return;
            }
        }
        for (int r = 0; r < R; ++r) {
            for (int t = 0; t < T; ++t) {
                const __m256 a0 = _mm512_castps512_ps256(acc[r][t]), a1 = _mm512_extractf32x8_ps(acc[r][t], 1);
                float sum = hsum(_mm256_add_ps(a0, a1));
                for (int64_t j = i; j < n; ++j) sum += E::scalar(wr[r][j]) * XE::scalar(xr[t][j]);
                result[static_cast<size_t>(t) * result_stride + static_cast<size_t>(r)] = sum;
            }
        }
    }

    // Lane k: the sum of a[k]'s 16 lanes by the very additions of the scalar epilogue
    // above (halves, then hsum's 128-bit halves, pairs, neighbours), eight sums at once.
    static __m256 hsum8(const __m512 (&a)[8]) {
        __m512 b[4];  // [a[2j] 256-bit halves added | a[2j+1]'s]
        for (int j = 0; j < 4; ++j)
            b[j] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * j], a[2 * j + 1], 0x44),
                                 _mm512_shuffle_f32x4(a[2 * j], a[2 * j + 1], 0xEE));
        // 128-bit quarters: c[0] = [a0, a1, a2, a3] with each a's 128-bit halves added.
        const __m512 c0 = _mm512_add_ps(_mm512_shuffle_f32x4(b[0], b[1], 0x88), _mm512_shuffle_f32x4(b[0], b[1], 0xDD));
        const __m512 c1 = _mm512_add_ps(_mm512_shuffle_f32x4(b[2], b[3], 0x88), _mm512_shuffle_f32x4(b[2], b[3], 0xDD));
        // Per quarter q: [aq lanes 0+2, 1+3, a(q+4) lanes 0+2, 1+3].
        const __m512 d = _mm512_add_ps(_mm512_shuffle_ps(c0, c1, 0x44), _mm512_shuffle_ps(c0, c1, 0xEE));
        // Per quarter q: [aq, a(q+4), aq, a(q+4)].
        const __m512 e = _mm512_add_ps(_mm512_shuffle_ps(d, d, 0x88), _mm512_shuffle_ps(d, d, 0xDD));
        // Lanes 4q and 4q+1 hold a[q] and a[q+4]: gather them as a0..a7.
        const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0);
        return _mm512_castps512_ps256(_mm512_permutexvar_ps(order, e));
    }
};

// ---------------------------------------------------------------- 32-element blocks

// Block32<Block>::dot as one dpbusd per pair of unsigned weight levels (u) with the
// signed activation quants, started from -offset * sum x: sum (u - offset) x, the same
// integer lanes. The levels are broadcast to both halves once per weight block, the
// start computed once per activation block.
template <class Block>
struct Split512 {
    using Act = typename Block32<Block>::Act;
    struct Row {
        __m512i levels;
        void load(const Block& b) { levels = _mm512_broadcast_i64x4(Block32<Block>::levels(b)); }
    };
    struct Tokens {
        __m512i x, start;
        void load(const Act& a, const Act& b) {
            x = halves(load32(a.qs), load32(b.qs));
            if constexpr (Block32<Block>::kOffset == 0) {
                start = _mm512_setzero_si512();
            } else {
                const __m512i offset = _mm512_set1_epi8(static_cast<char>(Block32<Block>::kOffset));
                start = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), offset, x));
            }
        }
    };
    static __m512i pair(const Row& r, const Tokens& t) { return _mm512_dpbusd_epi32(t.start, r.levels, t.x); }
};

// dot_block32's arithmetic per pair: lanes fused with d_w * d_x per block, the mins'
// m * s in a fused scalar sum added after the hsum. Tokens go in pairs; an odd last
// token is paired with itself and its copy's results dropped.
template <class Block>
struct Block32Tile512 {
    template <int R, int T>
    static void run(int64_t n, float* result, size_t result_stride, const uint8_t* w, size_t w_stride,
                    const uint8_t* x, size_t x_stride) {
        using Split = Split512<Block>;
        using Act = typename Block32<Block>::Act;
        constexpr bool kMin = Block32<Block>::kMin;
        constexpr int P = (T + 1) / 2;  // token pairs
        const Block* wr[R];
        const Act* xr[2 * P];
        for (int r = 0; r < R; ++r) wr[r] = row_as<Block>(w, w_stride, r);
        for (int t = 0; t < 2 * P; ++t) xr[t] = row_as<Act>(x, x_stride, t < T ? t : T - 1);
        __m512 acc[R][P];
        float mins[R][2 * P];
        for (int r = 0; r < R; ++r) {
            for (int p = 0; p < P; ++p) acc[r][p] = _mm512_setzero_ps();
            for (int t = 0; t < 2 * P; ++t) mins[r][t] = 0.0f;
        }
        for (int64_t b = 0; b < n / 32; ++b) {
            prefetch_rows<R>(w, w_stride, static_cast<size_t>(b) * sizeof(Block), sizeof(Block));
            typename Split::Row row[R];
            __m512 dw[R];
            for (int r = 0; r < R; ++r) {
                row[r].load(wr[r][b]);
                dw[r] = _mm512_set1_ps(f16_to_f32(wr[r][b].d));
            }
            for (int p = 0; p < P; ++p) {
                const Act& xa = xr[2 * p][b];
                const Act& xb = xr[2 * p + 1][b];
                typename Split::Tokens tokens;
                tokens.load(xa, xb);
                const __m512 dx = halves(_mm256_set1_ps(f16_to_f32(xa.d)), _mm256_set1_ps(f16_to_f32(xb.d)));
                for (int r = 0; r < R; ++r) {
                    const __m512i q = Split::pair(row[r], tokens);
                    acc[r][p] = _mm512_fmadd_ps(_mm512_mul_ps(dw[r], dx), _mm512_cvtepi32_ps(q), acc[r][p]);
                    if constexpr (kMin) {
                        const float m = f16_to_f32(wr[r][b].m);
                        mins[r][2 * p] = std::fma(m, f16_to_f32(xa.s), mins[r][2 * p]);
                        mins[r][2 * p + 1] = std::fma(m, f16_to_f32(xb.s), mins[r][2 * p + 1]);
                    }
                }
            }
        }
        for (int r = 0; r < R; ++r) {
            for (int t = 0; t < T; ++t) {
                const __m256 lanes = t % 2 == 0 ? _mm512_castps512_ps256(acc[r][t / 2]) : _mm512_extractf32x8_ps(acc[r][t / 2], 1);
                result[static_cast<size_t>(t) * result_stride + static_cast<size_t>(r)] = hsum(lanes) + mins[r][t];
            }
        }
    }
};

// Horizontal sums of integer lanes for several vectors at once (the tiles below reduce
// all their (row, token) totals together; integer sums are exact in any order). Each
// input holds two tokens, one to a 256-bit half (128-bit lanes 0-1 and 2-3).
// 128-bit lane i of the result: [a, b, c, d], each the sum of its own 128-bit lane i.
inline __m512i pair_partials(__m512i a, __m512i b, __m512i c, __m512i d) {
    const __m512i ab = _mm512_add_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
    const __m512i cd = _mm512_add_epi32(_mm512_unpacklo_epi32(c, d), _mm512_unpackhi_epi32(c, d));
    return _mm512_add_epi32(_mm512_unpacklo_epi64(ab, cd), _mm512_unpackhi_epi64(ab, cd));
}

// Two pair_partials results to whole 256-bit halves: 128-bit lane k of the result is
// u's first token, u's second, v's first, v's second, each [a, b, c, d] summed over the
// token's half.
inline __m512i token_totals(__m512i u, __m512i v) {
    return _mm512_add_epi32(_mm512_shuffle_i32x4(u, v, _MM_SHUFFLE(2, 0, 2, 0)),
                            _mm512_shuffle_i32x4(u, v, _MM_SHUFFLE(3, 1, 3, 1)));
}

// ---------------------------------------------------------------- block-sum types

// Unsigned levels of a Q8_0 / Q4_0 / Q5_0 block and their offset (value = level -
// offset): Q8_0's signed values become (w + 128).
template <class Block>
struct SumLevels {
    static constexpr int kOffset = Block32<Block>::kOffset;
    static __m256i levels(const Block& b) { return Block32<Block>::levels(b); }
};
template <>
struct SumLevels<BlockQ8_0> {
    static constexpr int kOffset = 128;
    static __m256i levels(const BlockQ8_0& b) { return _mm256_xor_si256(load32(b.qs), _mm256_set1_epi8(-128)); }
};

// BlockSumTile's arithmetic (vec_dot_tile_avx2.cpp; dot_block_sums' order: per (row,
// token) one float fused with each block's whole integer dot) with two tokens to a
// vector: eight rows' levels broadcast to both halves, one dpbusd per row for a token
// pair started from -offset * sum x (exactly sum (level - offset) x), the eight rows'
// block sums reduced together, and fma(float(sum), d_w * d_x, acc) per lane. Same bits.
// A single row (the rest of a matrix whose rows are not a multiple of 8) goes alone.
template <class Block>
struct BlockSumTile512 {
    template <int R, int T>
    static void run(int64_t n, float* result, size_t result_stride, const uint8_t* w, size_t w_stride,
                    const uint8_t* x, size_t x_stride) {
        static_assert(R == 1 || R == 8);
        constexpr int P = (T + 1) / 2;  // token pairs; an odd last token fills both halves
        const Block* wr[R];
        const BlockQ8_0* xr[2 * P];
        for (int r = 0; r < R; ++r) wr[r] = row_as<Block>(w, w_stride, r);
        for (int t = 0; t < 2 * P; ++t) xr[t] = row_as<BlockQ8_0>(x, x_stride, std::min(t, T - 1));
        const __m512i offset = _mm512_set1_epi8(static_cast<char>(SumLevels<Block>::kOffset));
        // Lanes of acc[p] (see below): rows 0-3 of token 2p, rows 0-3 of token 2p+1, rows
        // 4-7 of token 2p, rows 4-7 of token 2p+1.
        const __m512i row_of_lane = _mm512_setr_epi32(0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7);
        const __m512i token_of_lane = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1);
        __m512 acc[P];
        float acc1[2 * P];
        for (int p = 0; p < P; ++p) acc[p] = _mm512_setzero_ps();
        for (int t = 0; t < 2 * P; ++t) acc1[t] = 0.0f;
        for (int64_t b = 0; b < n / kQK8_0; ++b) {
            prefetch_rows<R>(w, w_stride, static_cast<size_t>(b) * sizeof(Block), sizeof(Block));
            __m512i levels[R];
            for (int r = 0; r < R; ++r) levels[r] = _mm512_broadcast_i64x4(SumLevels<Block>::levels(wr[r][b]));
            __m512 dw;
            if constexpr (R == 8) {
                const __m256 dw8 = row_scales8(wr, b);
                dw = _mm512_permutexvar_ps(row_of_lane, _mm512_castps256_ps512(dw8));
            }
            for (int p = 0; p < P; ++p) {
                const __m512i xv = halves(load32(xr[2 * p][b].qs), load32(xr[2 * p + 1][b].qs));
                const __m512i start = _mm512_sub_epi32(_mm512_setzero_si512(),
                                                       _mm512_dpbusd_epi32(_mm512_setzero_si512(), offset, xv));
                if constexpr (R == 8) {
                    __m512i d[8];
                    for (int r = 0; r < 8; ++r) d[r] = _mm512_dpbusd_epi32(start, levels[r], xv);
                    const __m512i lo = pair_partials(d[0], d[1], d[2], d[3]);
                    const __m512i hi = pair_partials(d[4], d[5], d[6], d[7]);
                    const __m512i sums = token_totals(lo, hi);
                    const __m128 dx2 = _mm_cvtph_ps(_mm_setr_epi16(static_cast<int16_t>(xr[2 * p][b].d),
                                                                   static_cast<int16_t>(xr[2 * p + 1][b].d), 0, 0, 0, 0, 0, 0));
                    const __m512 scale = _mm512_mul_ps(dw, _mm512_permutexvar_ps(token_of_lane, _mm512_castps128_ps512(dx2)));
                    acc[p] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), scale, acc[p]);
                } else {
                    const __m512i d = _mm512_dpbusd_epi32(start, levels[0], xv);
                    const float dw1 = f16_to_f32(wr[0][b].d);
                    const int32_t s0 = hsum(_mm512_castsi512_si256(d)), s1 = hsum(_mm512_extracti64x4_epi64(d, 1));
                    acc1[2 * p] = std::fma(static_cast<float>(s0), dw1 * f16_to_f32(xr[2 * p][b].d), acc1[2 * p]);
                    acc1[2 * p + 1] =
                        std::fma(static_cast<float>(s1), dw1 * f16_to_f32(xr[2 * p + 1][b].d), acc1[2 * p + 1]);
                }
            }
        }
        for (int p = 0; p < P; ++p) {
            if constexpr (R == 8) {
                alignas(64) float lanes[16];
                _mm512_store_ps(lanes, acc[p]);
                for (int l = 0; l < 16; ++l) {
                    const int t = 2 * p + (l / 4) % 2, r = 4 * (l / 8) + l % 4;
                    if (t < T) result[static_cast<size_t>(t) * result_stride + static_cast<size_t>(r)] = lanes[l];
                }
            } else {
                for (int h = 0; h < 2 && 2 * p + h < T; ++h)
                    result[static_cast<size_t>(2 * p + h) * result_stride] = acc1[2 * p + h];
            }
        }
    }
};

// The streamed products of a few tokens (2 to kStreamedTokens: a few sequences decoding
// together, a verification of a few proposals) for Q8_0 / Q4_0 / Q5_0: the one-token row
// kernel's layout (dot_block_sums_zmm8: a row's blocks b and b + 1 in one vector, eight
// rows' lanes reduced together by sum_lanes8_parts) with every token of the tile passing
// over the eight rows' unpacked levels. BlockSumTile512 unpacks one block per row and
// vector and fits 6 tokens, so 8 tokens read the weights twice. Each (row, token) is
// fused per block as dot_block_sums<Block, 8> fuses it (fma(float(total), d_w * d_x,
// acc)), in block order: the same bits. A single row goes to BlockSumTile512.
template <class Block>
struct BlockPairTile512 {
    template <int R, int T>
    static void run(int64_t n, float* result, size_t result_stride, const uint8_t* w, size_t w_stride,
                    const uint8_t* x, size_t x_stride) {
        if constexpr (R == 1) {
            BlockSumTile512<Block>::template run<1, T>(n, result, result_stride, w, w_stride, x, x_stride);
        } else {
            static_assert(R == 8);
            using Levels = avx512::PairLevels<Block>;
            const Block* wr[8];
            const BlockQ8_0* xr[T];
            for (int r = 0; r < 8; ++r) wr[r] = row_as<Block>(w, w_stride, r);
            for (int t = 0; t < T; ++t) xr[t] = row_as<BlockQ8_0>(x, x_stride, t);
            __m256 acc[T];  // lane r: row r of token t
            for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
            auto fuse = [&](int t, int64_t b, __m256 dw, __m256i totals) {
                const __m256 scale = _mm256_mul_ps(dw, _mm256_set1_ps(f16_to_f32(xr[t][b].d)));
                acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(totals), scale, acc[t]);
            };
            const int64_t n_blocks = n / kQK8_0;
            int64_t b = 0;
            for (; b + 2 <= n_blocks; b += 2) {
                prefetch_rows<8>(w, w_stride, static_cast<size_t>(b) * sizeof(Block), 2 * sizeof(Block));
                __m512i levels[8];
                for (int r = 0; r < 8; ++r) levels[r] = Levels::load(wr[r][b], wr[r][b + 1]);
                const __m256 dw0 = row_scales8(wr, b), dw1 = row_scales8(wr, b + 1);
                for (int t = 0; t < T; ++t) {
                    const __m512i xq = halves(load32(xr[t][b].qs), load32(xr[t][b + 1].qs));
                    const __m512i start = avx512::pair_start<Block>(xq);
                    __m512i p[8];
                    for (int r = 0; r < 8; ++r) p[r] = _mm512_dpbusd_epi32(start, levels[r], xq);
                    const __m512i sums = avx512::sum_lanes8_parts(p);  // quarters 0-1: block b, 2-3: block b + 1
                    fuse(t, b, dw0, _mm512_castsi512_si256(sums));
                    fuse(t, b + 1, dw1, _mm512_extracti64x4_epi64(sums, 1));
                }
            }
            if (b < n_blocks) {  // an odd last block: dot_block_sums<Block, 8>'s step
                const __m256 dw = row_scales8(wr, b);
                for (int t = 0; t < T; ++t) {
                    const __m256i xq = load32(xr[t][b].qs);
                    const __m256i start = offset_start<Block>(xq);
                    __m256i p[8];
                    for (int r = 0; r < 8; ++r) p[r] = Block32<Block>::dot(wr[r][b], xq, start);
                    fuse(t, b, dw, sum_lanes8(p));
                }
            }
            for (int t = 0; t < T; ++t) _mm256_storeu_ps(result + static_cast<size_t>(t) * result_stride, acc[t]);
        }
    }
};

// ---------------------------------------------------------------- Q4_K / Q5_K

// AffineKTile's arithmetic (vec_dot_avx2_kquants.cpp) with two tokens to a vector: the
// low half token 2p's sub-block products, the high half token 2p+1's, against one row's
// levels and scales broadcast to both halves. The integer totals of a super-block are
// exact whichever way they are added, so they are reduced for four tokens x two rows at
// once (pair_partials, token_totals) instead of pair by pair; each total then goes into
// its own float accumulator lane with fuse_totals' operation, fma(float(total),
// d_x * d_w, acc) (d_x * dmin for the mins), so the results are the same bits.
// An odd last token fills both halves (the high half's result is dropped); a single
// row (R = 1) reduces zeros as its second.
template <bool Q5>
struct AffineKTile512 {
    template <int R, int T>
    static void run(int64_t n, float* result, size_t result_stride, const uint8_t* w, size_t w_stride,
                    const uint8_t* x, size_t x_stride) {
        static_assert(R == 1 || R == 2, "the totals are reduced for two rows");
        using Block = std::conditional_t<Q5, BlockQ5_K, BlockQ4_K>;
        constexpr int P = (T + 1) / 2;  // token pairs
        constexpr int Q = (P + 1) / 2;  // accumulator vectors: four tokens each
        const Block* wr[R];
        const BlockQ8_K* xr[4 * Q];
        for (int r = 0; r < R; ++r) wr[r] = row_as<Block>(w, w_stride, r);
        for (int t = 0; t < 4 * Q; ++t) xr[t] = row_as<BlockQ8_K>(x, x_stride, std::min(t, T - 1));
        // Lane 4k + 2r (+1) of acc[q]: token 4q + k, row r, the sumi (summ) accumulator.
        __m512 acc[Q];
        for (int q = 0; q < Q; ++q) acc[q] = _mm512_setzero_ps();
        const __m512i token_of_lane = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
        for (int64_t b = 0; b < n / kQK_K; ++b) {
            prefetch_rows<R>(w, w_stride, static_cast<size_t>(b) * sizeof(Block), sizeof(Block));
            // Register pressure decides the speed here (32 vectors): the sub-block sums
            // of every (row, pair) stay live through the chunks, so the mins' products
            // are formed after them and each chunk prepares the rows before it walks
            // the token pairs (which then load their activations once for both rows).
            __m128i sm[R];
            __m512i scales16[R];
            __m256i qh[R];
            __m512i sumi[R][P];
            for (int r = 0; r < R; ++r) {
                const Block& wb = wr[r][b];
                sm[r] = unpack_k_scales(wb.scales);
                scales16[r] = _mm512_broadcast_i32x4(_mm_cvtepu8_epi16(sm[r]));
                for (int p = 0; p < P; ++p) sumi[r][p] = _mm512_setzero_si512();
                if constexpr (Q5) qh[r] = load32(wb.qh);
            }
            auto chunk = [&]<int C>() {
                __m512i lo2[R], hi2[R], scale_lo[R], scale_hi[R];
                for (int r = 0; r < R; ++r) {
                    __m256i lo, hi;
                    affine_levels<Q5, C>(wr[r][b], qh[r], lo, hi);
                    lo2[r] = _mm512_broadcast_i64x4(lo);
                    hi2[r] = _mm512_broadcast_i64x4(hi);
                    scale_lo[r] = _mm512_shuffle_epi8(scales16[r], _mm512_broadcast_i64x4(broadcast16_pick(2 * C)));
                    scale_hi[r] = _mm512_shuffle_epi8(scales16[r], _mm512_broadcast_i64x4(broadcast16_pick(2 * C + 1)));
                }
                for (int p = 0; p < P; ++p) {
                    const __m512i xl = halves(load32(xr[2 * p][b].qs + 64 * C), load32(xr[2 * p + 1][b].qs + 64 * C));
                    const __m512i xh =
                        halves(load32(xr[2 * p][b].qs + 64 * C + 32), load32(xr[2 * p + 1][b].qs + 64 * C + 32));
                    for (int r = 0; r < R; ++r) {
                        sumi[r][p] = _mm512_dpwssd_epi32(sumi[r][p], _mm512_maddubs_epi16(lo2[r], xl), scale_lo[r]);
                        sumi[r][p] = _mm512_dpwssd_epi32(sumi[r][p], _mm512_maddubs_epi16(hi2[r], xh), scale_hi[r]);
                    }
                }
            };
            chunk.template operator()<0>();
            chunk.template operator()<1>();
            chunk.template operator()<2>();
            chunk.template operator()<3>();
            __m512i mins[R][P];
            for (int p = 0; p < P; ++p) {
                const __m512i bsums = halves(load32(xr[2 * p][b].bsums), load32(xr[2 * p + 1][b].bsums));
                for (int r = 0; r < R; ++r)
                    mins[r][p] = _mm512_madd_epi16(bsums, _mm512_broadcast_i64x4(k_min_pairs(sm[r])));  // k_min_products, per half
            }
            // [d, dmin] of each row as f32 (the blocks start with the two f16 scales),
            // repeated for every token; times each lane's token's d_x.
            const __m128i dw_bits = _mm_setr_epi32(static_cast<int32_t>(load_u32(&wr[0][b].d)),
                                                   R == 2 ? static_cast<int32_t>(load_u32(&wr[R - 1][b].d)) : 0, 0, 0);
            const __m512 dw = _mm512_broadcast_f32x4(_mm_cvtph_ps(dw_bits));
            const __m512i zero = _mm512_setzero_si512();
            for (int q = 0; q < Q; ++q) {
                const int p0 = 2 * q, p1 = std::min(2 * q + 1, P - 1);
                const __m512i u = pair_partials(sumi[0][p0], mins[0][p0], R == 2 ? sumi[R - 1][p0] : zero,
                                                R == 2 ? mins[R - 1][p0] : zero);
                const __m512i v = pair_partials(sumi[0][p1], mins[0][p1], R == 2 ? sumi[R - 1][p1] : zero,
                                                R == 2 ? mins[R - 1][p1] : zero);
                const __m128 dx4 = _mm_setr_ps(xr[4 * q][b].d, xr[4 * q + 1][b].d, xr[4 * q + 2][b].d, xr[4 * q + 3][b].d);
                const __m512 scale = _mm512_mul_ps(_mm512_permutexvar_ps(token_of_lane, _mm512_castps128_ps512(dx4)), dw);
                acc[q] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(token_totals(u, v)), scale, acc[q]);
            }
        }
        for (int q = 0; q < Q; ++q) {
            alignas(64) float lanes[16];
            _mm512_store_ps(lanes, acc[q]);
            for (int k = 0; k < 4 && 4 * q + k < T; ++k)
                for (int r = 0; r < R; ++r)
                    result[static_cast<size_t>(4 * q + k) * result_stride + static_cast<size_t>(r)] =
                        lanes[4 * k + 2 * r] - lanes[4 * k + 2 * r + 1];
        }
    }
};

// ---------------------------------------------------------------- Q6_K

// Q6KTile's arithmetic (dot_q6_k's, vec_dot_avx2_kquants.cpp) for two rows with two
// tokens to a vector, as AffineKTile512 does: the super-block's integer totals are exact
// in any order, reduced for eight tokens x two rows at once, and each goes into its own
// accumulator lane with dot_q6_k's fma(float(total), d_x * d_w, acc). Same bits.
struct Q6KTile512 {
    template <int R, int T>
    static void run(int64_t n, float* result, size_t result_stride, const uint8_t* w, size_t w_stride,
                    const uint8_t* x, size_t x_stride) {
        static_assert(R == 1 || R == 2, "the totals are reduced for two rows");
        constexpr int P = (T + 1) / 2;  // token pairs
        constexpr int Q = (P + 3) / 4;  // accumulator vectors: eight tokens each
        const BlockQ6_K* wr[R];
        const BlockQ8_K* xr[8 * Q];
        for (int r = 0; r < R; ++r) wr[r] = row_as<BlockQ6_K>(w, w_stride, r);
        for (int t = 0; t < 8 * Q; ++t) xr[t] = row_as<BlockQ8_K>(x, x_stride, std::min(t, T - 1));
        // pair_partials(pairs 4q, 4q+1 of rows 0, 1) and (4q+2, 4q+3) give, after
        // token_totals, 128-bit lane k = [row 0, row 1] of tokens 4q' + k%2 + {0, 2} with
        // q' = 2q + k/2: lane j of block k is token 8q + 4(k/2) + k%2 + 2(j/2), row j%2.
        const __m512i token_of_lane = _mm512_setr_epi32(0, 0, 2, 2, 1, 1, 3, 3, 4, 4, 6, 6, 5, 5, 7, 7);
        __m512 acc[Q];
        for (int q = 0; q < Q; ++q) acc[q] = _mm512_setzero_ps();
        for (int64_t b = 0; b < n / kQK_K; ++b) {
            prefetch_rows<R>(w, w_stride, static_cast<size_t>(b) * sizeof(BlockQ6_K), sizeof(BlockQ6_K));
            __m256i sc16[R];
            __m512i sumi[R][P];
            for (int r = 0; r < R; ++r) sc16[r] = _mm256_cvtepi8_epi16(load16(wr[r][b].scales));
            for (int p = 0; p < P; ++p) {
                const __m512i bsums = halves(load32(xr[2 * p][b].bsums), load32(xr[2 * p + 1][b].bsums));
                for (int r = 0; r < R; ++r) {
                    // Levels are stored with +32: start from -32 * sum_s scale_s * bsum_s.
                    const __m512i bias = _mm512_madd_epi16(bsums, _mm512_broadcast_i64x4(sc16[r]));
                    sumi[r][p] = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(bias, 5));
                }
            }
            for (int h = 0; h < 2; ++h) {
                __m256i q[R][4];
                __m256i scales16[R];  // int16 scales 8h..8h+7 of half h, in both 128-bit lanes
                for (int r = 0; r < R; ++r) {
                    q6_levels(wr[r][b], h, q[r]);
                    scales16[r] = h == 0 ? _mm256_permute2x128_si256(sc16[r], sc16[r], 0x00)
                                         : _mm256_permute2x128_si256(sc16[r], sc16[r], 0x11);
                }
                for (int k = 0; k < 4; ++k) {
                    // 32 values k of this half use scale 8h+2k (values 0-15) and 8h+2k+1 (16-31).
                    __m512i levels[R], scale[R];
                    for (int r = 0; r < R; ++r) {
                        levels[r] = _mm512_broadcast_i64x4(q[r][k]);
                        scale[r] = _mm512_broadcast_i64x4(_mm256_shuffle_epi8(scales16[r], pair_pick16(2 * k)));
                    }
                    for (int p = 0; p < P; ++p) {
                        const int8_t* xa = xr[2 * p][b].qs + 128 * h + 32 * k;
                        const int8_t* xb = xr[2 * p + 1][b].qs + 128 * h + 32 * k;
                        const __m512i xv = halves(load32(xa), load32(xb));
                        for (int r = 0; r < R; ++r)
                            sumi[r][p] = _mm512_dpwssd_epi32(sumi[r][p], _mm512_maddubs_epi16(levels[r], xv), scale[r]);
                    }
                }
            }
            const float dw0 = f16_to_f32(wr[0][b].d), dw1 = R == 2 ? f16_to_f32(wr[R - 1][b].d) : 0.0f;
            const __m512 dw = _mm512_broadcast_f32x4(_mm_setr_ps(dw0, dw1, dw0, dw1));
            const __m512i zero = _mm512_setzero_si512();
            auto rows = [&](int r, int p) { return r < R && p < P ? sumi[r][p] : zero; };
            for (int q = 0; q < Q; ++q) {
                const int p = 4 * q;
                const __m512i u = pair_partials(rows(0, p), rows(1, p), rows(0, p + 1), rows(1, p + 1));
                const __m512i v = pair_partials(rows(0, p + 2), rows(1, p + 2), rows(0, p + 3), rows(1, p + 3));
                alignas(32) float dx[8];
                for (int t = 0; t < 8; ++t) dx[t] = xr[8 * q + t][b].d;
                const __m512 scale =
                    _mm512_mul_ps(_mm512_permutexvar_ps(token_of_lane, _mm512_castps256_ps512(_mm256_load_ps(dx))), dw);
                acc[q] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(token_totals(u, v)), scale, acc[q]);
            }
        }
        for (int q = 0; q < Q; ++q) {
            alignas(64) float lanes[16];
            _mm512_store_ps(lanes, acc[q]);
            for (int l = 0; l < 16; ++l) {
                const int block = l / 4, j = l % 4;
                const int t = 8 * q + 4 * (block / 2) + block % 2 + 2 * (j / 2), r = j % 2;
                if (t < T && r < R)
                    result[static_cast<size_t>(t) * result_stride + static_cast<size_t>(r)] = lanes[l];
            }
        }
    }
};

// K-quant tiles: the sixteen-row tiles (vec_dot_tile_avx512_rows16_kquants.cpp) from
// MinTokens tokens on, Tile's two rows at a time below.
template <DType Type, class Tile, int64_t MinTokens>
void kquant_tiles(int64_t n, int64_t n_rows, int64_t n_tokens, float* result, size_t result_stride, const void* w,
                  size_t w_stride, const void* x, size_t x_stride) {
    if (n_tokens >= MinTokens) {
        avx512_rows16_kquant_tile_kernel(Type)(n, n_rows, n_tokens, result, result_stride, w, w_stride, x, x_stride);
        return;
    }
    tiles<Tile, 2, 8>(n, n_rows, n_tokens, result, result_stride, w, w_stride, x, x_stride);
}

}  // namespace

// 8 rows x 3 tokens: a group's eight weight rows stay in L1 for a chunk of 48 tokens, so
// each activation byte brought from L2 serves twice the products of 4 x 6 (Zen 4: kernel
// 1.2x for F16, 1.2-1.5x for BF16; 6 x 4, 5 x 5 and 12 x 2 were slower).
VecDotTileFn avx512_tile_kernel_widened(DType weight) {
    switch (weight) {
        case DType::F16: return tiles_token_chunks<FloatTile512<DType::F16, true>, 8, 3>;
        case DType::BF16: return tiles_token_chunks<FloatTile512<DType::BF16, true>, 8, 3>;
        default: return nullptr;
    }
}

VecDotTileFn avx512_tile_kernel(DType weight) {
    switch (weight) {
        case DType::F16: return tiles<FloatTile512<DType::F16>, 4, 6>;
        case DType::BF16: return tiles<FloatTile512<DType::BF16>, 4, 6>;
        case DType::Q8_0: return tiles<BlockPairTile512<BlockQ8_0>, 8, kStreamedTokens>;
        case DType::Q4_0: return tiles<BlockPairTile512<BlockQ4_0>, 8, kStreamedTokens>;
        case DType::Q5_0: return tiles<BlockPairTile512<BlockQ5_0>, 8, kStreamedTokens>;
        case DType::Q4_1: return tiles<Block32Tile512<BlockQ4_1>, 4, 4>;
        case DType::Q5_1: return tiles<Block32Tile512<BlockQ5_1>, 4, 4>;
        case DType::Q4_K: return kquant_tiles<DType::Q4_K, AffineKTile512<false>, kRows16KquantMinTokens>;
        case DType::Q5_K: return kquant_tiles<DType::Q5_K, AffineKTile512<true>, kRows16KquantMinTokens>;
        case DType::Q6_K: return kquant_tiles<DType::Q6_K, Q6KTile512, kRows16Q6KMinTokens>;
        default: return nullptr;
    }
}

}  // namespace inlay::quant::detail

#else  // without AVX-512 the 256-bit tile kernels serve

namespace inlay::quant::detail {
VecDotTileFn avx512_tile_kernel(DType) { return nullptr; }
VecDotTileFn avx512_tile_kernel_widened(DType) { return nullptr; }
}  // namespace inlay::quant::detail

#endif
