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

namespace inlay::quant::detail {
namespace {

using namespace avx2;

// Two 256-bit halves in one vector, `lo` in the low half.
inline __m512i halves(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }
inline __m512 halves(__m256 lo, __m256 hi) { return _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1); }

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
        for (int r = 0; r < R; ++r) {
            for (int t = 0; t < T; ++t) {
                const __m256 a0 = _mm512_castps512_ps256(acc[r][t]), a1 = _mm512_extractf32x8_ps(acc[r][t], 1);
                float sum = hsum(_mm256_add_ps(a0, a1));
                for (int64_t j = i; j < n; ++j) sum += E::scalar(wr[r][j]) * XE::scalar(xr[t][j]);
                result[static_cast<size_t>(t) * result_stride + static_cast<size_t>(r)] = sum;
            }
        }
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

// ---------------------------------------------------------------- Q4_K / Q5_K

// AffineKTile's arithmetic (vec_dot_avx2_kquants.cpp) with two tokens to a vector: the
// low half token 2p's sub-block products, the high half token 2p+1's, against one row's
// levels and scales broadcast to both halves. The integer totals of a super-block are
// exact whichever way they are added, and each half's totals go into that token's two
// float accumulators exactly as there (fuse_totals), so the results are the same bits.
// An odd last token fills both halves (the high half's result is dropped).
template <bool Q5>
struct AffineKTile512 {
    template <int R, int T>
    static void run(int64_t n, float* result, size_t result_stride, const uint8_t* w, size_t w_stride,
                    const uint8_t* x, size_t x_stride) {
        using Block = std::conditional_t<Q5, BlockQ5_K, BlockQ4_K>;
        constexpr int P = (T + 1) / 2;
        const Block* wr[R];
        const BlockQ8_K* xr[2 * P];
        for (int r = 0; r < R; ++r) wr[r] = row_as<Block>(w, w_stride, r);
        for (int t = 0; t < 2 * P; ++t) xr[t] = row_as<BlockQ8_K>(x, x_stride, std::min(t, T - 1));
        __m128 acc[R][2 * P];  // fuse_totals accumulators
        for (int r = 0; r < R; ++r)
            for (int t = 0; t < 2 * P; ++t) acc[r][t] = _mm_setzero_ps();
        for (int64_t b = 0; b < n / kQK_K; ++b) {
            __m512i scales16[R];
            __m256i qh[R];
            __m512i sumi[R][P], mins[R][P];
            __m512i bsums[P];
            for (int p = 0; p < P; ++p) bsums[p] = halves(load32(xr[2 * p][b].bsums), load32(xr[2 * p + 1][b].bsums));
            for (int r = 0; r < R; ++r) {
                const Block& wb = wr[r][b];
                const __m128i sm = unpack_k_scales(wb.scales);
                scales16[r] = _mm512_broadcast_i32x4(_mm_cvtepu8_epi16(sm));
                const __m512i pairs = _mm512_broadcast_i64x4(k_min_pairs(sm));
                for (int p = 0; p < P; ++p) {
                    mins[r][p] = _mm512_madd_epi16(bsums[p], pairs);  // k_min_products, per half
                    sumi[r][p] = _mm512_setzero_si512();
                }
                if constexpr (Q5) qh[r] = load32(wb.qh);
            }
            auto chunk = [&]<int C>() {
                __m512i xl[P], xh[P];
                for (int p = 0; p < P; ++p) {
                    xl[p] = halves(load32(xr[2 * p][b].qs + 64 * C), load32(xr[2 * p + 1][b].qs + 64 * C));
                    xh[p] = halves(load32(xr[2 * p][b].qs + 64 * C + 32), load32(xr[2 * p + 1][b].qs + 64 * C + 32));
                }
                for (int r = 0; r < R; ++r) {
                    __m256i lo, hi;
                    affine_levels<Q5, C>(wr[r][b], qh[r], lo, hi);
                    const __m512i lo2 = _mm512_broadcast_i64x4(lo), hi2 = _mm512_broadcast_i64x4(hi);
                    const __m512i scale_lo =
                        _mm512_shuffle_epi8(scales16[r], _mm512_broadcast_i64x4(broadcast16_pick(2 * C)));
                    const __m512i scale_hi =
                        _mm512_shuffle_epi8(scales16[r], _mm512_broadcast_i64x4(broadcast16_pick(2 * C + 1)));
                    for (int p = 0; p < P; ++p) {
                        const __m512i pl = _mm512_madd_epi16(_mm512_maddubs_epi16(lo2, xl[p]), scale_lo);
                        const __m512i ph = _mm512_madd_epi16(_mm512_maddubs_epi16(hi2, xh[p]), scale_hi);
                        sumi[r][p] = _mm512_add_epi32(sumi[r][p], _mm512_add_epi32(pl, ph));
                    }
                }
            };
            chunk.template operator()<0>();
            chunk.template operator()<1>();
            chunk.template operator()<2>();
            chunk.template operator()<3>();
            for (int r = 0; r < R; ++r) {
                const float dw = f16_to_f32(wr[r][b].d), dmin = f16_to_f32(wr[r][b].dmin);
                for (int p = 0; p < P; ++p) {
                    for (int h = 0; h < 2; ++h) {
                        const int t = 2 * p + h;
                        const __m256i s = h == 0 ? _mm512_castsi512_si256(sumi[r][p])
                                                 : _mm512_extracti64x4_epi64(sumi[r][p], 1);
                        const __m256i m = h == 0 ? _mm512_castsi512_si256(mins[r][p])
                                                 : _mm512_extracti64x4_epi64(mins[r][p], 1);
                        acc[r][t] = fuse_totals(lane_totals(s, m), xr[t][b].d * dw, xr[t][b].d * dmin, acc[r][t]);
                    }
                }
            }
        }
        for (int r = 0; r < R; ++r)
            for (int t = 0; t < T; ++t)
                result[static_cast<size_t>(t) * result_stride + static_cast<size_t>(r)] = affine_result(acc[r][t]);
    }
};

// tiles<K, R, T> with the tokens in chunks: each chunk's f32 activations (kTokenChunk x
// n floats) stay in L2 while every row group of the call passes over them, where all
// the tokens' would not (512 tokens of 1536 floats are 3 MiB).
template <class K, int R, int T>
void tiles_token_chunks(int64_t n, int64_t n_rows, int64_t n_tokens, float* result, size_t result_stride,
                        const void* w, size_t w_stride, const void* x, size_t x_stride) {
    constexpr int64_t kTokenChunk = 16 * T;
    const auto* xb = static_cast<const uint8_t*>(x);
    for (int64_t t = 0; t < n_tokens; t += kTokenChunk)
        tiles<K, R, T>(n, n_rows, std::min(kTokenChunk, n_tokens - t), result + static_cast<size_t>(t) * result_stride,
                       result_stride, w, w_stride, xb + static_cast<size_t>(t) * x_stride, x_stride);
}

}  // namespace

VecDotTileFn avx512_tile_kernel_widened(DType weight) {
    switch (weight) {
        case DType::F16: return tiles_token_chunks<FloatTile512<DType::F16, true>, 4, 6>;
        case DType::BF16: return tiles_token_chunks<FloatTile512<DType::BF16, true>, 4, 6>;
        default: return nullptr;
    }
}

VecDotTileFn avx512_tile_kernel(DType weight) {
    switch (weight) {
        case DType::F16: return tiles<FloatTile512<DType::F16>, 4, 6>;
        case DType::BF16: return tiles<FloatTile512<DType::BF16>, 4, 6>;
        case DType::Q4_1: return tiles<Block32Tile512<BlockQ4_1>, 4, 4>;
        case DType::Q5_1: return tiles<Block32Tile512<BlockQ5_1>, 4, 4>;
        case DType::Q4_K: return tiles<AffineKTile512<false>, 2, 4>;
        case DType::Q5_K: return tiles<AffineKTile512<true>, 2, 4>;
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
