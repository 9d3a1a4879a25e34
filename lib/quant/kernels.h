// Internal: the per-type dot kernels and activation quantizers behind vec_dot.h.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "quant/vec_dot.h"

namespace inlay::quant::detail {

// Scalar kernel of `weight`, or nullptr for a type without one (Q8_1, Q8_K).
VecDotFn reference_kernel(DType weight);

// Kernel using AVX2/FMA/F16C, or nullptr when the build does not target them.
VecDotFn avx2_kernel(DType weight);

// Multi-row AVX2 kernel: result[r] = dot(w + r*stride, x) for r < n_rows; nullptr when
// the build lacks AVX2 or the type has no multi-row variant.
using VecDotRowsFn = void (*)(int64_t n, int64_t n_rows, float* result, const void* w, size_t w_stride,
                              const void* x_row);
VecDotRowsFn avx2_rows_kernel(DType weight);

// Token-tile AVX2 kernel: result[t * result_stride + r] = dot(w + r * w_stride,
// x + t * x_stride) for r < n_rows and t < n_tokens; nullptr when the build lacks AVX2
// or the type has no tile kernel (vec_dot_tile then runs the row kernel per token).
using VecDotTileFn = void (*)(int64_t n, int64_t n_rows, int64_t n_tokens, float* result, size_t result_stride,
                              const void* w, size_t w_stride, const void* x, size_t x_stride);
VecDotTileFn avx2_tile_kernel(DType weight);
// The same with 512-bit vectors (two tokens' 8-lane sums in one vector); nullptr when the
// build lacks AVX-512 (F, BW, VL, DQ, VNNI) or the type has no such kernel.
VecDotTileFn avx512_tile_kernel(DType weight);
// F16 / BF16 weights against activations already widened to f32 (x rows of n floats;
// TilePack does it once per product): the same arithmetic as avx512_tile_kernel's, since
// widening a 16-bit float is exact, without converting every activation chunk again for
// every group of rows. Tokens go in chunks that stay in the cache while the rows pass.
// nullptr where avx512_tile_kernel has no float kernel.
VecDotTileFn avx512_tile_kernel_widened(DType weight);

// Q8_0 / Q4_0 / Q5_0 / Q1_0 prompt tiles with sixteen rows to a vector (AVX-512 VNNI;
// vec_dot_tile_avx512_rows16.cpp): the same arithmetic as avx512_tile_kernel's, against
// activations that rows16_pack wrote (rows16_pack_bytes(n, n_tokens) bytes: per token
// and block an f32 scale and the quants + 128). The rows are regrouped once per call,
// which pays from about kRows16MinTokens tokens on (bench_kernels). nullptr without
// AVX-512 VNNI or for other types.
//
// The sixteen- and eight-row tiles start above kStreamedTokens (vec_dot.h), where the
// matmul stops streaming: a product of up to 8 tokens reads weights that come
// from DRAM in any model larger than the last-level cache, and there the smaller tiles,
// which prefetch their rows, beat them, though they lose in cache. Zen 4, bench_kernels
// 151936 x 1024 (from DRAM) against 1024 x 1024 (in cache), one thread, 8 tokens, small
// tiles against the sixteen-row ones: Q8_0 23.5 / 29.4 ms but 149 / 106 us, Q4_0 23.0 /
// 26.1 ms but 170 / 105 us, Q6_K 19.2 / 35.5 ms, Q4_K 17.9 / 25.8 ms but 120 / 101 us
// (5 tokens: 15.2 / 21.4 ms). Batched decoding of the Qwen3-0.6B-shape Q4_K_M with 2
// threads, 4 sessions: 97-102 -> 130-141 tokens/s; 8 sessions 128-133 -> 181-191. (Since
// the sixteen-row tiles prefetch into L2, from DRAM at 8 tokens: Q8_0 23.2 / 26.1 ms, Q4_0
// 23.1 / 20.1, Q4_K 17.9 / 21.4, Q6_K 18.1 / 28.9; at 5 tokens the small tiles win all four.)
using Rows16TileFn = void (*)(int64_t n, int64_t n_rows, int64_t n_tokens, float* result, size_t result_stride,
                              const void* w, size_t w_stride, const std::byte* packed);
inline constexpr int64_t kRows16MinTokens = kStreamedTokens + 1;  // Zen 4 in cache: 0.87x at 4 tokens, 1.5x at 8, 1.9x at 16
Rows16TileFn avx512_rows16_tile_kernel(DType weight);
// The same tiles for Q8_0 / Q4_0 / Q5_0 weights in the interleaved layout (interleaved_rows.h;
// w: the first group's record 0, w_stride unused); nullptr without AVX-512 VNNI.
Rows16TileFn avx512_rows16_interleaved_kernel(DType weight);
size_t rows16_pack_bytes(int64_t n, int64_t n_tokens);
void rows16_pack(int64_t n, int64_t n_tokens, const void* x, size_t x_stride, std::byte* out);

// Q4_K / Q5_K / Q6_K prompt tiles with sixteen rows to a vector (AVX-512 VNNI;
// vec_dot_tile_avx512_rows16_kquants.cpp), against the Q8_K activations as they are:
// the same arithmetic as avx512_tile_kernel's. They regroup the rows once per 64 tokens,
// which pays from about kRows16KquantMinTokens (Q6_K: kRows16Q6KMinTokens) tokens on
// (bench_kernels). nullptr without AVX-512 VNNI or for other types.
inline constexpr int64_t kRows16KquantMinTokens = kStreamedTokens + 1;  // Zen 4 in cache, Q4_K: 1.2x at 4 tokens, 1.3x at 8, 1.5x at 16, 1.7x at 128
inline constexpr int64_t kRows16Q6KMinTokens = kStreamedTokens + 1;     // Zen 4 in cache, Q6_K: 0.93x at 4 tokens, 1.4x at 16, 1.9x at 128
VecDotTileFn avx512_rows16_kquant_tile_kernel(DType weight);
// The same tiles for K-quant weights in the interleaved layout (interleaved_rows.h): w
// the first group's records, w_stride not read.
VecDotTileFn avx512_rows16_kquant_interleaved_kernel(DType weight);

// Q8_0 / Q4_0 / Q5_0 / Q1_0 prompt tiles with eight rows to a 256-bit vector (AVX2, for CPUs
// without AVX-512; vec_dot_tile_avx2_rows8.cpp): the sixteen-row layout with maddubs on
// the weights' magnitudes and sign-adjusted activations, the same arithmetic as
// avx2_tile_kernel's. From rows8_min_tokens(weight) tokens on (bench_kernels, x86-64-v3
// build on Zen 4: Q8_0 0.76x at 4 tokens, 1.2x at 16, 1.4x at 128; Q4_0 0.9x at 4, 1.65x
// at 16, 1.95x at 128; Q5_0 1.14x at 4, 1.9x at 16, 2.5x at 128). nullptr without AVX2
// or for other types. (From DRAM at 8 tokens Q4_0's two kinds of tile cost the same.)
inline int64_t rows8_min_tokens(DType weight) { return weight == DType::Q8_0 ? 16 : 8; }
VecDotTileFn avx2_rows8_tile_kernel(DType weight);

// Q4_K / Q5_K / Q6_K prompt tiles with eight rows to a 256-bit vector (AVX2, for CPUs without
// AVX-512; vec_dot_tile_avx2_rows8_kquants.cpp): the sixteen-row tiles' layout with
// maddubs/madd instead of VNNI, the same arithmetic as avx2_kquant_tile_kernel's. From
// rows8_kquant_min_tokens(weight) tokens on (bench_kernels, x86-64-v3 build; in cache Q4_K
// 1.03-1.1x at 4 tokens, 2.0x at 16, 2.4x at 128). Below that the products stream from
// DRAM, where the smaller tiles win (Zen 4, 151936 x 1024, one thread, small against
// eight-row tiles: Q4_K 20.9 / 26.3 ms at 5 tokens but 32.9 / 29.9 at 8; Q6_K 22.9 / 37.6
// at 5, 33.7 / 42.1 at 8). nullptr without AVX2 or for other types.
inline int64_t rows8_kquant_min_tokens(DType weight) { return weight == DType::Q6_K ? kStreamedTokens + 1 : 8; }
VecDotTileFn avx2_rows8_kquant_tile_kernel(DType weight);

// AMX (matrix unit) Q8_0 tiles, vec_dot_tile_amx.cpp. amx_usable: the build targets
// AMX-INT8 and the OS granted this process the tile state. amx_pack_q8_0 writes
// amx_pack_q8_0_bytes(n, n_tokens) bytes: the activations in the layout amx_tile_q8_0 reads.
bool amx_usable();
size_t amx_pack_q8_0_bytes(int64_t n, int64_t n_tokens);
void amx_pack_q8_0(int64_t n, int64_t n_tokens, const void* x, size_t x_stride, std::byte* out);
void amx_tile_q8_0(int64_t n, int64_t n_rows, int64_t n_tokens, float* result, size_t result_stride, const void* w,
                   size_t w_stride, const std::byte* packed);
// Q4_0 and Q5_0 (block-sum order too) through the Q8_0 tiles: each block of 16 rows is
// first widened to Q8_0 rows, then multiplied by the same amx_pack_q8_0 activations.
void amx_tile_widened(DType weight, int64_t n, int64_t n_rows, int64_t n_tokens, float* result, size_t result_stride,
                      const void* w, size_t w_stride, const std::byte* packed);
// Q1_0 against the same amx_pack_q8_0 activations (n a multiple of 128).
void amx_tile_q1_0(int64_t n, int64_t n_rows, int64_t n_tokens, float* result, size_t result_stride, const void* w,
                   size_t w_stride, const std::byte* packed);

// AMX K-quant tiles (Q4_K, Q5_K, Q6_K against Q8_K), vec_dot_tile_amx_kquants.cpp, in the
// same shape: amx_pack_q8_k writes amx_pack_q8_k_bytes(n, n_tokens) bytes that
// amx_tile_kquant reads. amx_kquant_type: the build has these tiles for `weight`.
bool amx_kquant_type(DType weight);
size_t amx_pack_q8_k_bytes(int64_t n, int64_t n_tokens);
void amx_pack_q8_k(int64_t n, int64_t n_tokens, const void* x, size_t x_stride, std::byte* out);
void amx_tile_kquant(DType weight, int64_t n, int64_t n_rows, int64_t n_tokens, float* result, size_t result_stride,
                     const void* w, size_t w_stride, const std::byte* packed);

// AVX2 K-quant kernels (Q4_K, Q5_K, Q6_K; nullptr for other types or without AVX2).
VecDotFn avx2_kquant_kernel(DType weight);
VecDotRowsFn avx2_kquant_rows_kernel(DType weight);
VecDotTileFn avx2_kquant_tile_kernel(DType weight);  // Q4_K, Q5_K, Q6_K
// The same rows with 512-bit vectors (Q4_K, Q5_K, Q6_K; nullptr for other types or without
// AVX-512 BW/VL/VNNI), vec_dot_avx512_kquants.cpp: bitwise equal to the AVX2 kernels.
VecDotFn avx512_kquant_kernel(DType weight);
VecDotRowsFn avx512_kquant_rows_kernel(DType weight);

// Kernels written as row groups: GroupFn<R>(n, result, w, w_stride, x) computes rows
// 0..R-1 (row r at w + r*w_stride) with per-row arithmetic that does not depend on R,
// so grouped and single-row results are bitwise equal.
using GroupFn = void (*)(int64_t n, float* result, const uint8_t* w, size_t w_stride, const void* x);

template <GroupFn K1>
void single_row(int64_t n, float* result, const void* w, const void* x) {
    K1(n, result, static_cast<const uint8_t*>(w), 0, x);
}

template <int G, GroupFn KG, GroupFn K1>
void row_groups(int64_t n, int64_t n_rows, float* result, const void* w, size_t w_stride, const void* x) {
    const auto* base = static_cast<const uint8_t*>(w);
    int64_t r = 0;
    for (; r + G <= n_rows; r += G) KG(n, result + r, base + static_cast<size_t>(r) * w_stride, w_stride, x);
    for (; r < n_rows; ++r) K1(n, result + r, base + static_cast<size_t>(r) * w_stride, w_stride, x);
}

// Kernels written as tiles: K::run<R, T>(n, result, result_stride, w, w_stride, x,
// x_stride) computes rows 0..R-1 for tokens 0..T-1 with per-pair arithmetic that does
// not depend on R or T, so any tiling gives the same results.
template <class K, int R, int T>
void token_tail(int tokens, int64_t n, float* result, size_t result_stride, const uint8_t* w, size_t w_stride,
                const uint8_t* x, size_t x_stride) {
    if constexpr (T > 0) {
        if (tokens == T) K::template run<R, T>(n, result, result_stride, w, w_stride, x, x_stride);
        else token_tail<K, R, T - 1>(tokens, n, result, result_stride, w, w_stride, x, x_stride);
    }
}

// R rows for every token: tiles of T tokens, then one tile of the remainder.
template <class K, int R, int T>
void row_group(int64_t n, int64_t n_tokens, float* result, size_t result_stride, const uint8_t* w, size_t w_stride,
               const uint8_t* x, size_t x_stride) {
    int64_t t = 0;
    for (; t + T <= n_tokens; t += T)
        K::template run<R, T>(n, result + static_cast<size_t>(t) * result_stride, result_stride, w, w_stride,
                              x + static_cast<size_t>(t) * x_stride, x_stride);
    if (t < n_tokens)
        token_tail<K, R, T - 1>(static_cast<int>(n_tokens - t), n, result + static_cast<size_t>(t) * result_stride,
                                result_stride, w, w_stride, x + static_cast<size_t>(t) * x_stride, x_stride);
}

// Rows in groups of R (the rest one by one); within a group, tokens in tiles of T. The
// group's weight rows stay in L1 while every token passes over them.
template <class K, int R, int T>
void tiles(int64_t n, int64_t n_rows, int64_t n_tokens, float* result, size_t result_stride, const void* w,
           size_t w_stride, const void* x, size_t x_stride) {
    const auto* wb = static_cast<const uint8_t*>(w);
    const auto* xb = static_cast<const uint8_t*>(x);
    int64_t r = 0;
    for (; r + R <= n_rows; r += R)
        row_group<K, R, T>(n, n_tokens, result + r, result_stride, wb + static_cast<size_t>(r) * w_stride, w_stride, xb,
                           x_stride);
    for (; r < n_rows; ++r)
        row_group<K, 1, T>(n, n_tokens, result + r, result_stride, wb + static_cast<size_t>(r) * w_stride, w_stride, xb,
                           x_stride);
}

// tiles<K, R, T> with the tokens in chunks of 16 x T: each chunk's activations stay in
// L2 while every row group of the call passes over them, where all the tokens' would not
// (512 tokens of 1536 floats are 3 MiB; of 1536 f16 values 1.5 MiB).
template <class K, int R, int T>
void tiles_token_chunks(int64_t n, int64_t n_rows, int64_t n_tokens, float* result, size_t result_stride,
                        const void* w, size_t w_stride, const void* x, size_t x_stride) {
    constexpr int64_t kTokenChunk = 16 * T;
    const auto* xb = static_cast<const uint8_t*>(x);
    for (int64_t t = 0; t < n_tokens; t += kTokenChunk)
        tiles<K, R, T>(n, n_rows, std::min(kTokenChunk, n_tokens - t), result + static_cast<size_t>(t) * result_stride,
                       result_stride, w, w_stride, xb + static_cast<size_t>(t) * x_stride, x_stride);
}

// AVX2 activation quantizer writing the same bytes as quantize_activations_reference;
// returns false when the build lacks AVX2 or the type has no fast path (the caller
// falls back).
bool quantize_activations_avx2(DType act_type, const float* x, void* out, int64_t n);

}  // namespace inlay::quant::detail
