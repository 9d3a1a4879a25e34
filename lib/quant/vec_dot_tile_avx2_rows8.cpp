// Q8_0, Q4_0, Q5_0 and Q1_0 token tiles over eight weight rows at once with 256-bit vectors,
// for prompts on CPUs without AVX-512: vec_dot_tile_avx512_rows16.cpp's layout (each
// 32-bit lane one weight row; vector k of a block holds bytes 4k..4k+3 of every row,
// regrouped once per call, a chunk of blocks at a time) with AVX2's products.
//
// Without VNNI the product of a broadcast of four activation bytes with a row's four
// weights is maddubs (unsigned x signed): the weights' magnitudes are the unsigned
// operand and the activations take the weights' signs (vpsignb), so each int16 pair is
// at most 2 x 128 x 127. Q4_0 / Q5_0 weights (|w| <= 16) let four k's add up in int16
// before one madd; Q8_0's need a madd per k. The block's exact dot then goes
// into its row's float with dot_block_sums' fma(float(dot), d_w * d_x, acc): the same
// bits as vec_dot_kernel. The rows' floats carry over between chunks in the result.
#include "quant/kernels.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <algorithm>
#include <type_traits>

#include "core/half.h"
#include "quant/avx2_blocks.h"
#include "quant/row_lane_tiles.h"

namespace inlay::quant::detail {
namespace {

using namespace avx2;

// The tiles' shape (row_lane_tiles.h's block_tiles runs them).
struct Lanes8 {
    static constexpr int kRows = 8;
    static constexpr int64_t kMaxBlocks = 64;  // blocks of 32 regrouped at a time (whole Q1_0 blocks): 64 x 544 bytes
    static constexpr int kTokens = 4;          // tokens whose floats stay in registers
};
constexpr int kRows = Lanes8::kRows;
constexpr int kTokens = Lanes8::kTokens;

// One block of the eight rows, regrouped.
struct InterleavedBlock {
    int32_t magnitudes[8][kRows];  // |w| of bytes 4k..4k+3 of row r
    int32_t weights[8][kRows];     // the signed weights themselves (their signs)
    float d[kRows];
};

// Sub-blocks [b0, b0 + count) of n_rows (<= 8) rows into `out`; missing rows are zeros.
template <class Block>
void interleave_rows(const uint8_t* w, size_t w_stride, int n_rows, int64_t b0, int64_t count, InterleavedBlock* out) {
    for (int64_t i = 0; i < count; ++i) {
        InterleavedBlock& g = out[i];
        alignas(16) uint16_t d16[kRows] = {};
        __m256i rows[8], quads[8];
        for (int r = 0; r < kRows; ++r) {
            if (r < n_rows) {
                rows[r] = block_weights<Block>(w + static_cast<size_t>(r) * w_stride, b0 + i, d16[r]);
            } else {
                rows[r] = _mm256_setzero_si256();
            }
        }
        transpose8x32(rows, quads);
        for (int k = 0; k < 8; ++k) {
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(g.weights[k]), quads[k]);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(g.magnitudes[k]), _mm256_abs_epi8(quads[k]));
        }
        _mm256_storeu_ps(g.d, _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(d16))));
    }
}

inline __m256i load_lanes(const int32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// The eight rows' exact dots with tokens [0, T)'s activation block i, one row per lane.
// Inlined by force: as a call, Q4_0 / Q5_0 / Q1_0 tiles ran 1.2x slower (GCC 12).
template <class Block, int T>
[[gnu::always_inline]] inline void block_dots(const InterleavedBlock& g, const BlockQ8_0* const (&x)[kTokens],
                                              int64_t i, __m256i (&dot)[T]) {
    constexpr bool kSmall = !std::is_same_v<Block, BlockQ8_0>;  // |w| <= 16: four k's in int16
    const __m256i ones = _mm256_set1_epi16(1);
    for (int t = 0; t < T; ++t) dot[t] = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {  // k = 4h..4h+3, four magnitudes and signs in registers
        __m256i mag[4], sgn[4];
        for (int k = 0; k < 4; ++k) {
            mag[k] = load_lanes(g.magnitudes[4 * h + k]);
            sgn[k] = load_lanes(g.weights[4 * h + k]);
        }
        for (int t = 0; t < T; ++t) {
            const int8_t* q = x[t][i].qs + 16 * h;
            if constexpr (kSmall) {
                __m256i pairs = _mm256_setzero_si256();
                for (int k = 0; k < 4; ++k) {
                    const __m256i xs = _mm256_sign_epi8(_mm256_set1_epi32(static_cast<int32_t>(load_u32(q + 4 * k))), sgn[k]);
                    pairs = _mm256_add_epi16(pairs, _mm256_maddubs_epi16(mag[k], xs));
                }
                dot[t] = _mm256_add_epi32(dot[t], _mm256_madd_epi16(pairs, ones));
            } else {
                for (int k = 0; k < 4; ++k) {
                    const __m256i xs = _mm256_sign_epi8(_mm256_set1_epi32(static_cast<int32_t>(load_u32(q + 4 * k))), sgn[k]);
                    dot[t] = _mm256_add_epi32(dot[t], _mm256_madd_epi16(_mm256_maddubs_epi16(mag[k], xs), ones));
                    // Each add in turn: integer adds reassociate freely, and GCC 12 summed
                    // the block's 32 products as a tree, every one live at once, spilled to
                    // the stack (16 vector registers). Zen 5, bench_kernels vec_dot_tile
                    // q8_0/576/1536/128, x86-64-v3, one thread: 2.07-2.11 -> 1.69-1.73 ms;
                    // stories15M Q8_0 pp512, 2 threads: 8.9-9.1k -> 11.3-11.5k tokens/s.
                    asm("" : "+x"(dot[t]));
                }
            }
        }
    }
}

// Tokens [0, T) against `count` regrouped sub-blocks; acc: the tokens' rows' floats.
// Q8_0 / Q4_0 / Q5_0: dot_block_sums' order; Q1_0: dot_q1_0's (its four sub-blocks' dots
// times their d_x into the block's float, then times d_w into the row's).
template <class Block, int T>
void accumulate(const InterleavedBlock* groups, int64_t count, const BlockQ8_0* const (&x)[kTokens], __m256 (&acc)[kTokens]) {
    __m256i dot[T];
    if constexpr (std::is_same_v<Block, BlockQ1_0>) {
        for (int64_t i = 0; i < count; i += 4) {
            __m256 block[T];  // set at p == 0 (a product, not a sum): zero only for the compiler's sake
            for (int t = 0; t < T; ++t) block[t] = _mm256_setzero_ps();
            for (int p = 0; p < 4; ++p) {
                block_dots<Block, T>(groups[i + p], x, i + p, dot);
                for (int t = 0; t < T; ++t) {
                    const __m256 s = _mm256_cvtepi32_ps(dot[t]);
                    const __m256 dx = _mm256_set1_ps(f16_to_f32(x[t][i + p].d));
                    block[t] = p == 0 ? _mm256_mul_ps(s, dx) : _mm256_fmadd_ps(s, dx, block[t]);
                }
            }
            const __m256 dw = _mm256_loadu_ps(groups[i].d);
            for (int t = 0; t < T; ++t) acc[t] = _mm256_fmadd_ps(block[t], dw, acc[t]);
        }
    } else {
        for (int64_t i = 0; i < count; ++i) {
            block_dots<Block, T>(groups[i], x, i, dot);
            const __m256 dw = _mm256_loadu_ps(groups[i].d);
            for (int t = 0; t < T; ++t)
                acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[t]), _mm256_mul_ps(dw, _mm256_set1_ps(f16_to_f32(x[t][i].d))),
                                         acc[t]);
        }
    }
}

// The tiles of one weight type, for block_tiles.
template <class Block>
struct Rows8 : Lanes8 {
    using Group = InterleavedBlock;
    static void interleave(const uint8_t* w, size_t w_stride, int n_rows, int64_t b0, int64_t count, Group* out) {
        interleave_rows<Block>(w, w_stride, n_rows, b0, count, out);
    }
    template <int T>
    static void token_group(const Group* groups, int64_t b0, int64_t count, const uint8_t* x0, size_t x_stride,
                            int n_rows, float* result, size_t result_stride) {
        const BlockQ8_0* x[kTokens];
        __m256 acc[kTokens];
        const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        const __m256i rows = _mm256_cmpgt_epi32(_mm256_set1_epi32(n_rows), lanes);  // lanes of real rows
        for (int t = 0; t < T; ++t) {
            x[t] = row_as<BlockQ8_0>(x0, x_stride, t) + b0;
            // The rows' floats carry over from the previous blocks through the result.
            acc[t] = b0 == 0 ? _mm256_setzero_ps() : _mm256_maskload_ps(result + static_cast<size_t>(t) * result_stride, rows);
        }
        accumulate<Block, T>(groups, count, x, acc);
        for (int t = 0; t < T; ++t) _mm256_maskstore_ps(result + static_cast<size_t>(t) * result_stride, rows, acc[t]);
    }
};

}  // namespace

VecDotTileFn avx2_rows8_tile_kernel(DType weight) {
    switch (weight) {
        case DType::Q8_0: return lanes::block_tiles<Rows8<BlockQ8_0>>;
        case DType::Q4_0: return lanes::block_tiles<Rows8<BlockQ4_0>>;
        case DType::Q5_0: return lanes::block_tiles<Rows8<BlockQ5_0>>;
        case DType::Q1_0: return lanes::block_tiles<Rows8<BlockQ1_0>>;
        default: return nullptr;
    }
}

}  // namespace inlay::quant::detail

#else

namespace inlay::quant::detail {
VecDotTileFn avx2_rows8_tile_kernel(DType) { return nullptr; }
}  // namespace inlay::quant::detail

#endif
