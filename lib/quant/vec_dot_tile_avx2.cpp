// Token-tile AVX2 kernels: R weight rows times T activation rows (tokens) per call, for
// batches of decode tokens and prompt chunks. A weight block is loaded and widened or
// unpacked once for T tokens and an activation block once for R rows, where the row
// kernels (vec_dot_avx2.cpp) redo that work for every token.
//
// Per (row, token) pair the arithmetic is the row kernel's: the same int32 lanes (integer
// sums are exact, so splitting a block's dot into per-row, per-token and per-pair work
// cannot change them) and the same float operations in the same order. A tile result
// therefore equals vec_dot_kernel's bitwise, and a token's output does not depend on
// which other tokens share its batch.
#include "quant/kernels.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <cmath>

#include "core/half.h"
#include "quant/avx2_blocks.h"

namespace inlay::quant::detail {
namespace {

using namespace avx2;

// ---------------------------------------------------------------- float types

// dot_float's arithmetic per pair: U accumulators over chunks of 8 * U, then chunks of
// 8 into the first, (a0 + a1), hsum, a scalar tail.
template <DType Type>
struct FloatTile {
    template <int R, int T>
    static void run(int64_t n, float* result, size_t result_stride, const uint8_t* w, size_t w_stride,
                    const uint8_t* x, size_t x_stride) {
        using E = FloatElem<Type>;
        using Elem = typename E::type;
        constexpr int U = Type == DType::F32 ? 1 : 2;
        const Elem* wr[R];
        const Elem* xr[T];
        for (int r = 0; r < R; ++r) wr[r] = row_as<Elem>(w, w_stride, r);
        for (int t = 0; t < T; ++t) xr[t] = row_as<Elem>(x, x_stride, t);
        __m256 acc[R][T][U];
        for (int r = 0; r < R; ++r)
            for (int t = 0; t < T; ++t)
                for (int u = 0; u < U; ++u) acc[r][t][u] = _mm256_setzero_ps();
        int64_t i = 0;
        for (; i + 8 * U <= n; i += 8 * U) {
            prefetch_rows<R, kPrefetchL2>(w, w_stride, static_cast<size_t>(i) * sizeof(Elem), 8 * U * sizeof(Elem));
            // The tokens' vectors held, each row's loaded once: with the rows held GCC
            // reloaded each row for every token (two loads an FMA, load-bound at half the
            // FMA rate).
            for (int u = 0; u < U; ++u) {
                __m256 xv[T];
                for (int t = 0; t < T; ++t) xv[t] = E::load(xr[t] + i + 8 * u);
                for (int r = 0; r < R; ++r) {
                    const __m256 wv = E::load(wr[r] + i + 8 * u);
                    for (int t = 0; t < T; ++t) acc[r][t][u] = _mm256_fmadd_ps(wv, xv[t], acc[r][t][u]);
                }
            }
        }
        for (; i + 8 <= n; i += 8) {
            __m256 wv[R];
            for (int r = 0; r < R; ++r) wv[r] = E::load(wr[r] + i);
            for (int t = 0; t < T; ++t) {
                const __m256 xv = E::load(xr[t] + i);
                for (int r = 0; r < R; ++r) acc[r][t][0] = _mm256_fmadd_ps(wv[r], xv, acc[r][t][0]);
            }
        }
        for (int r = 0; r < R; ++r) {
            for (int t = 0; t < T; ++t) {
                __m256 total = acc[r][t][0];
                if constexpr (U == 2) total = _mm256_add_ps(acc[r][t][0], acc[r][t][1]);
                float sum = hsum(total);
                for (int64_t j = i; j < n; ++j) sum += E::scalar(wr[r][j]) * E::scalar(xr[t][j]);
                result[static_cast<size_t>(t) * result_stride + static_cast<size_t>(r)] = sum;
            }
        }
    }
};

// The same arithmetic for the 16-bit types where only 16 vector registers exist. A pair's
// two accumulators are independent chains (elements 16k..16k+7 into the first,
// 16k+8..16k+15 into the second), so they are computed one after the other: the first
// pass keeps R * T first accumulators in registers, stores them, and the second pass
// adds its own. That doubles the tile's loads from L1 but lets 4 rows x 3 tokens share
// each widened operand (12 FMAs per 7 conversions, where keeping both accumulators
// live fits only 1 row x 2 tokens: 4 FMAs per 6). Four rows, not three, so that a
// matmul's blocks of 16 rows leave no single row to a 1 x 3 tile (3 x 4 spent 6.5% of
// a SmolLM2 F16 prompt on those rows); with R > T the tokens' widened vectors stay in
// registers and the rows stream past them (12 accumulators + 3 + 1 of 16 registers).
template <DType Type>
struct HalfFloatTile {
    template <int R, int T>
    static void run(int64_t n, float* result, size_t result_stride, const uint8_t* w, size_t w_stride,
                    const uint8_t* x, size_t x_stride) {
        using E = FloatElem<Type>;
        using Elem = typename E::type;
        const Elem* wr[R];
        const Elem* xr[T];
        for (int r = 0; r < R; ++r) wr[r] = row_as<Elem>(w, w_stride, r);
        for (int t = 0; t < T; ++t) xr[t] = row_as<Elem>(x, x_stride, t);
        const int64_t n16 = n / 16 * 16;
        __m256 first[R][T];
        // Pass 0: elements 16k..16k+7 of every full chunk of 16, then one chunk of 8
        // left over (dot_float puts it into the first accumulator too).
        pass(n16, 0, w_stride, wr, xr, first);
        if (n16 + 8 <= n) {
            __m256 wv[R];
            for (int r = 0; r < R; ++r) wv[r] = E::load(wr[r] + n16);
            for (int t = 0; t < T; ++t) {
                const __m256 xv = E::load(xr[t] + n16);
                for (int r = 0; r < R; ++r) first[r][t] = _mm256_fmadd_ps(wv[r], xv, first[r][t]);
            }
        }
        alignas(32) float spilled[R][T][8];
        for (int r = 0; r < R; ++r)
            for (int t = 0; t < T; ++t) _mm256_store_ps(spilled[r][t], first[r][t]);
        __m256 second[R][T];
        pass(n16, 8, w_stride, wr, xr, second);
        const int64_t done = n16 + 8 <= n ? n16 + 8 : n16;
        if constexpr (R == 4) {
            if (done == n) {  // no scalar tail: each token's four rows reduced side by side
                for (int t = 0; t < T; ++t) {
                    __m256 total[R];
                    for (int r = 0; r < R; ++r) total[r] = _mm256_add_ps(_mm256_load_ps(spilled[r][t]), second[r][t]);
                    _mm_storeu_ps(result + static_cast<size_t>(t) * result_stride,
                                  hsum4(total[0], total[1], total[2], total[3]));
                }
                return;
            }
        }
        for (int r = 0; r < R; ++r) {
            for (int t = 0; t < T; ++t) {
                float sum = hsum(_mm256_add_ps(_mm256_load_ps(spilled[r][t]), second[r][t]));
                for (int64_t j = done; j < n; ++j) sum += E::scalar(wr[r][j]) * E::scalar(xr[t][j]);
                result[static_cast<size_t>(t) * result_stride + static_cast<size_t>(r)] = sum;
            }
        }
    }

private:
    // acc[r][t] = sum over the chunks of 16 below n16 of the 8 elements at `offset`.
    template <int R, int T>
    static void pass(int64_t n16, int offset, size_t row_stride, const typename FloatElem<Type>::type* const (&wr)[R],
                     const typename FloatElem<Type>::type* const (&xr)[T], __m256 (&acc)[R][T]) {
        using E = FloatElem<Type>;
        for (int r = 0; r < R; ++r)
            for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
        for (int64_t i = offset; i < n16; i += 16) {
            if (offset == 0)  // pass 1 reads the lines pass 0 brought in
                prefetch_rows<R, kPrefetchL2>(wr[0], row_stride, static_cast<size_t>(i) * sizeof(*wr[0]), 16 * sizeof(*wr[0]));
            if constexpr (R <= T) {
                __m256 wv[R];
                for (int r = 0; r < R; ++r) wv[r] = E::load(wr[r] + i);
                for (int t = 0; t < T; ++t) {
                    const __m256 xv = E::load(xr[t] + i);
                    for (int r = 0; r < R; ++r) acc[r][t] = _mm256_fmadd_ps(wv[r], xv, acc[r][t]);
                }
            } else {
                __m256 xv[T];
                for (int t = 0; t < T; ++t) xv[t] = E::load(xr[t] + i);
                for (int r = 0; r < R; ++r) {
                    const __m256 wv = E::load(wr[r] + i);
                    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_fmadd_ps(wv, xv[t], acc[r][t]);
                }
            }
        }
    }
};

// ---------------------------------------------------------------- 32-element blocks

// Per weight type, Block32<Block>::dot split into a part loaded once per weight block
// (Row), once per activation block (Token) and the part per pair. Each pair's int32
// lanes equal Block32<Block>::dot's.
template <class Block>
struct Block32Split;

// Types stored as unsigned levels: levels once per row; the offset term (-offset * sum x)
// once per token.
template <class Block>
struct LevelsSplit {
    struct Row {
        __m256i levels;
        void load(const Block& b) { levels = Block32<Block>::levels(b); }
    };
    struct Token {
        __m256i x, start;
        void load(const typename Block32<Block>::Act& b) {
            x = load32(b.qs);
            start = offset_start<Block>(x);
        }
    };
    static __m256i pair(const Row& r, const Token& t) {
        if constexpr (Block32<Block>::kOffset == 0) return dot_u8_i8(r.levels, t.x);
        else return dot_u8_i8_add(t.start, r.levels, t.x);
    }
};
template <>
struct Block32Split<BlockQ4_1> : LevelsSplit<BlockQ4_1> {};
template <>
struct Block32Split<BlockQ5_1> : LevelsSplit<BlockQ5_1> {};

// dot_block32's arithmetic per pair: lanes fused with d_w * d_x per block, the mins'
// m * s in a fused scalar sum, added after the lanes' hsum.
template <class Block>
struct Block32Tile {
    template <int R, int T>
    static void run(int64_t n, float* result, size_t result_stride, const uint8_t* w, size_t w_stride,
                    const uint8_t* x, size_t x_stride) {
        using Split = Block32Split<Block>;
        using Act = typename Block32<Block>::Act;
        constexpr bool kMin = Block32<Block>::kMin;
        const Block* wr[R];
        const Act* xr[T];
        for (int r = 0; r < R; ++r) wr[r] = row_as<Block>(w, w_stride, r);
        for (int t = 0; t < T; ++t) xr[t] = row_as<Act>(x, x_stride, t);
        __m256 acc[R][T];
        float mins[R][T];
        for (int r = 0; r < R; ++r) {
            for (int t = 0; t < T; ++t) {
                acc[r][t] = _mm256_setzero_ps();
                mins[r][t] = 0.0f;
            }
        }
        for (int64_t b = 0; b < n / 32; ++b) {
            prefetch_rows<R>(w, w_stride, static_cast<size_t>(b) * sizeof(Block), sizeof(Block));
            typename Split::Row row[R];
            float dw[R];
            for (int r = 0; r < R; ++r) {
                row[r].load(wr[r][b]);
                dw[r] = f16_to_f32(wr[r][b].d);
            }
            for (int t = 0; t < T; ++t) {
                typename Split::Token token;
                token.load(xr[t][b]);
                const float dx = f16_to_f32(xr[t][b].d);
                for (int r = 0; r < R; ++r) {
                    const __m256i p = Split::pair(row[r], token);
                    acc[r][t] = _mm256_fmadd_ps(_mm256_set1_ps(dw[r] * dx), _mm256_cvtepi32_ps(p), acc[r][t]);
                    if constexpr (kMin)
                        mins[r][t] = std::fma(f16_to_f32(wr[r][b].m), f16_to_f32(xr[t][b].s), mins[r][t]);
                }
            }
        }
        for (int r = 0; r < R; ++r)
            for (int t = 0; t < T; ++t)
                result[static_cast<size_t>(t) * result_stride + static_cast<size_t>(r)] = hsum(acc[r][t]) + mins[r][t];
    }
};

// ---------------------------------------------------------------- block-sum types

// Q4_0, Q5_0 and Q8_0 (dot_block_sums' order: per row one float fused with each block's whole
// integer dot): eight rows' block sums in the lanes of one vector (sum_lanes8), one
// vector per token. Block32<Block>::dot split as for the other types.
template <class Block>
struct BlockSumSplit;

#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
// Q8_0 with VNNI: (w + 128) is unsigned, so one dpbusd per pair computes sum (w + 128) x,
// started from -128 sum x (per token and lane): exactly sum w x.
template <>
struct BlockSumSplit<BlockQ8_0> {
    struct Row {
        __m256i levels;
        void load(const BlockQ8_0& b) { levels = _mm256_xor_si256(load32(b.qs), _mm256_set1_epi8(-128)); }
    };
    struct Token {
        __m256i x, start;
        void load(const BlockQ8_0& b) {
            x = load32(b.qs);
            start = _mm256_sub_epi32(_mm256_setzero_si256(), dot_u8_i8(_mm256_set1_epi8(-128), x));
        }
    };
    static __m256i pair(const Row& r, const Token& t) { return dot_u8_i8_add(t.start, r.levels, t.x); }
};
#else
// Without VNNI the sign trick of dot_i8_i8 (maddubs would saturate on 255 * 127 pairs).
template <>
struct BlockSumSplit<BlockQ8_0> {
    struct Row {
        __m256i w, abs_w;
        void load(const BlockQ8_0& b) {
            w = load32(b.qs);
            abs_w = _mm256_sign_epi8(w, w);
        }
    };
    struct Token {
        __m256i x;
        void load(const BlockQ8_0& b) { x = load32(b.qs); }
    };
    static __m256i pair(const Row& r, const Token& t) { return dot_u8_i8(r.abs_w, _mm256_sign_epi8(t.x, r.w)); }
};
#endif

template <>
struct BlockSumSplit<BlockQ4_0> : LevelsSplit<BlockQ4_0> {};
template <>
struct BlockSumSplit<BlockQ5_0> : LevelsSplit<BlockQ5_0> {};

template <class Block>
struct BlockSumTile {
    template <int R, int T>
    static void run(int64_t n, float* result, size_t result_stride, const uint8_t* w, size_t w_stride,
                    const uint8_t* x, size_t x_stride) {
        static_assert(R == 1 || R == 8);
        using Split = BlockSumSplit<Block>;
        const Block* wr[R];
        const BlockQ8_0* xr[T];
        for (int r = 0; r < R; ++r) wr[r] = row_as<Block>(w, w_stride, r);
        for (int t = 0; t < T; ++t) xr[t] = row_as<BlockQ8_0>(x, x_stride, t);
        __m256 acc8[T];
        float acc1[T];
        for (int t = 0; t < T; ++t) {
            acc8[t] = _mm256_setzero_ps();
            acc1[t] = 0.0f;
        }
        for (int64_t b = 0; b < n / kQK8_0; ++b) {
            prefetch_rows<R>(w, w_stride, static_cast<size_t>(b) * sizeof(Block), sizeof(Block));
            if constexpr (R == 8) {
                typename Split::Row row[8];
                for (int r = 0; r < 8; ++r) row[r].load(wr[r][b]);
                const __m256 dw = row_scales8(wr, b);
                for (int t = 0; t < T; ++t) {
                    typename Split::Token token;
                    token.load(xr[t][b]);
                    __m256i p[8];
                    for (int r = 0; r < 8; ++r) p[r] = Split::pair(row[r], token);
                    const __m256 scale = _mm256_mul_ps(dw, _mm256_set1_ps(f16_to_f32(xr[t][b].d)));
                    acc8[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum_lanes8(p)), scale, acc8[t]);
                }
            } else {
                typename Split::Row row;
                row.load(wr[0][b]);
                const float dw = f16_to_f32(wr[0][b].d);
                for (int t = 0; t < T; ++t) {
                    typename Split::Token token;
                    token.load(xr[t][b]);
                    const int32_t sumi = hsum(Split::pair(row, token));
                    acc1[t] = std::fma(static_cast<float>(sumi), dw * f16_to_f32(xr[t][b].d), acc1[t]);
                }
            }
        }
        for (int t = 0; t < T; ++t) {
            float* out = result + static_cast<size_t>(t) * result_stride;
            if constexpr (R == 8) _mm256_storeu_ps(out, acc8[t]);
            else out[0] = acc1[t];
        }
    }
};

// Tile shapes: R * T accumulators (times 4 for the 16-bit floats) plus R rows' operands
// must fit the register file.
constexpr int kFloat16Rows = 2;  // with 32 registers, both accumulators stay live
constexpr int kFloat16Tokens = 3;
constexpr int kHalfFloatRows = 4;  // with 16: one accumulator per pass (16 % 4 == 0)
constexpr int kHalfFloatTokens = 3;
constexpr int kF32Rows = kWideRegisters ? 4 : 2;
constexpr int kF32Tokens = kWideRegisters ? 4 : 3;
constexpr int kBlockRows = kWideRegisters ? 4 : 2;
constexpr int kBlockTokens = kWideRegisters ? 3 : 2;
constexpr int kBlockSumTokens = kWideRegisters ? 3 : 2;

template <DType Type>
VecDotTileFn float16_tiles() {
    if constexpr (kWideRegisters) return tiles<FloatTile<Type>, kFloat16Rows, kFloat16Tokens>;
    else return tiles_token_chunks<HalfFloatTile<Type>, kHalfFloatRows, kHalfFloatTokens>;
}

}  // namespace

VecDotTileFn avx2_tile_kernel(DType weight) {
    switch (weight) {
        case DType::F32: return tiles<FloatTile<DType::F32>, kF32Rows, kF32Tokens>;
        case DType::F16: return float16_tiles<DType::F16>();
        case DType::BF16: return float16_tiles<DType::BF16>();
        case DType::Q8_0: return tiles<BlockSumTile<BlockQ8_0>, 8, kBlockSumTokens>;
        case DType::Q4_0: return tiles<BlockSumTile<BlockQ4_0>, 8, kBlockSumTokens>;
        case DType::Q5_0: return tiles<BlockSumTile<BlockQ5_0>, 8, kBlockSumTokens>;
        case DType::Q4_1: return tiles<Block32Tile<BlockQ4_1>, kBlockRows, kBlockTokens>;
        case DType::Q5_1: return tiles<Block32Tile<BlockQ5_1>, kBlockRows, kBlockTokens>;
        default: return nullptr;
    }
}

}  // namespace inlay::quant::detail

#else  // no AVX2: vec_dot_tile runs the row kernels token by token

namespace inlay::quant::detail {
VecDotTileFn avx2_tile_kernel(DType) { return nullptr; }
}  // namespace inlay::quant::detail

#endif
