// Internal: the drivers of the token tiles that keep one weight row per 32-bit lane (the
// row-per-lane tiles: vec_dot_tile_avx512_rows16*.cpp with 16 rows to a vector,
// vec_dot_tile_avx2_rows8*.cpp with 8). Each file's Format gives the layout and the
// arithmetic; the drivers walk the rows a vector's worth at a time, regroup a chunk of
// their blocks (`interleave`) and pass every token over it. Include only inside the
// including file's ISA guard.
//
// block_tiles (blocks of 32: Q8_0, Q4_0, Q5_0, Q1_0): Format gives kRows, kTokens (tokens
// whose floats stay in registers), kMaxBlocks (blocks regrouped at a time), Group,
// interleave(w, w_stride, n_rows, b0, count, out) and token_group<T>(groups, b0, count,
// x, x_stride, n_rows, result, result_stride): tokens [0, T) from x (x_stride bytes
// apart, each from its block 0) against blocks [b0, b0 + count), the rows' floats carried
// over between chunks in the result.
//
// kquant_tiles (super-blocks of 256): Format gives kRows, kTokens (tokens whose integer
// totals stay in registers), kChunkBlocks (super-blocks regrouped at a time), kHasMin (an
// acc_min as Q4_K/Q5_K have), Group, interleave and accumulate<T>(groups, count, x, acc,
// acc_min). The rows' floats of kTokenBlock tokens stay on the stack while the chunks
// pass, so the rows are regrouped once per chunk and block of tokens.
//
// Both ask for the next row group's bytes while they walk their own (prefetch_span_part):
// a batch of a few tokens streams the weights from DRAM nearly as fast as one token, and
// sixteen rows side by side are sixteen short streams that the hardware prefetcher
// does not follow.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "quant/avx2_blocks.h"

namespace inlay::quant::detail::lanes {

template <class Format, int T>
void block_token_tail(int tokens, const typename Format::Group* groups, int64_t b0, int64_t count, const uint8_t* x,
                      size_t x_stride, int n_rows, float* result, size_t result_stride) {
    if constexpr (T > 0) {
        if (tokens == T) Format::template token_group<T>(groups, b0, count, x, x_stride, n_rows, result, result_stride);
        else block_token_tail<Format, T - 1>(tokens, groups, b0, count, x, x_stride, n_rows, result, result_stride);
    }
}

// result[t * result_stride + r] for r < n_rows and t < n_tokens, as VecDotTileFn (x: the
// activations in the Format's layout, x_stride bytes a token).
template <class Format>
void block_tiles(int64_t n, int64_t n_rows, int64_t n_tokens, float* result, size_t result_stride, const void* w,
                 size_t w_stride, const void* x, size_t x_stride) {
    constexpr int kRows = Format::kRows;
    constexpr int kTokens = Format::kTokens;
    const int64_t nb = n / kQK8_0;
    const auto* wb = static_cast<const uint8_t*>(w);
    const auto* xb = static_cast<const uint8_t*>(x);
    typename Format::Group groups[Format::kMaxBlocks];
    for (int64_t r = 0; r < n_rows; r += kRows) {
        const int rows = static_cast<int>(std::min<int64_t>(kRows, n_rows - r));
        for (int64_t b0 = 0; b0 < nb; b0 += Format::kMaxBlocks) {
            const int64_t count = std::min(Format::kMaxBlocks, nb - b0);
            avx2::prefetch_span_part(wb + static_cast<size_t>(r + kRows) * w_stride, kRows * w_stride, b0, b0 + count, nb);
            Format::interleave(wb + static_cast<size_t>(r) * w_stride, w_stride, rows, b0, count, groups);
            int64_t t = 0;
            for (; t + kTokens <= n_tokens; t += kTokens)
                Format::template token_group<kTokens>(groups, b0, count, xb + static_cast<size_t>(t) * x_stride, x_stride,
                                                      rows, result + static_cast<size_t>(t) * result_stride + static_cast<size_t>(r),
                                                      result_stride);
            if (t < n_tokens)
                block_token_tail<Format, kTokens - 1>(static_cast<int>(n_tokens - t), groups, b0, count,
                                                      xb + static_cast<size_t>(t) * x_stride, x_stride, rows,
                                                      result + static_cast<size_t>(t) * result_stride + static_cast<size_t>(r),
                                                      result_stride);
        }
    }
}

inline constexpr int64_t kTokenBlock = 64;

template <class Format, int T>
void token_tail(int tokens, const typename Format::Group* groups, int64_t count,
                const BlockQ8_K* const (&x)[Format::kTokens], float* acc, float* acc_min) {
    if constexpr (T > 0) {
        if (tokens == T) Format::template accumulate<T>(groups, count, x, acc, acc_min);
        else token_tail<Format, T - 1>(tokens, groups, count, x, acc, acc_min);
    }
}

// result[t * result_stride + r] for r < n_rows and t < n_tokens, as VecDotTileFn.
template <class Format>
void kquant_tiles(int64_t n, int64_t n_rows, int64_t n_tokens, float* result, size_t result_stride, const void* w,
                  size_t w_stride, const void* x, size_t x_stride) {
    constexpr int kRows = Format::kRows;
    constexpr int kTokens = Format::kTokens;
    constexpr int64_t kChunkBlocks = Format::kChunkBlocks;
    const int64_t nb = n / kQK_K;
    const auto* wb = static_cast<const uint8_t*>(w);
    const auto* xb = static_cast<const uint8_t*>(x);
    typename Format::Group groups[kChunkBlocks];
    alignas(64) float acc[kTokenBlock * kRows], acc_min[kTokenBlock * kRows];
    for (int64_t r = 0; r < n_rows; r += kRows) {
        const int rows = static_cast<int>(std::min<int64_t>(kRows, n_rows - r));
        const uint8_t* w_rows = wb + static_cast<size_t>(r) * w_stride;
        for (int64_t t0 = 0; t0 < n_tokens; t0 += kTokenBlock) {
            const int64_t tokens = std::min(kTokenBlock, n_tokens - t0);
            std::fill(acc, acc + tokens * kRows, 0.0f);
            if constexpr (Format::kHasMin) std::fill(acc_min, acc_min + tokens * kRows, 0.0f);
            for (int64_t b0 = 0; b0 < nb; b0 += kChunkBlocks) {
                const int64_t count = std::min(kChunkBlocks, nb - b0);
                if (t0 == 0) avx2::prefetch_span_part(w_rows + kRows * w_stride, kRows * w_stride, b0, b0 + count, nb);
                Format::interleave(w_rows, w_stride, rows, b0, count, groups);
                for (int64_t t = 0; t < tokens; t += kTokens) {
                    const BlockQ8_K* xt[kTokens];
                    const int group = static_cast<int>(std::min<int64_t>(kTokens, tokens - t));
                    for (int k = 0; k < group; ++k)
                        xt[k] = avx2::row_as<BlockQ8_K>(xb, x_stride, static_cast<int>(t0 + t + k)) + b0;
                    token_tail<Format, kTokens>(group, groups, count, xt, acc + t * kRows, acc_min + t * kRows);
                }
            }
            for (int64_t t = 0; t < tokens; ++t) {
                float* out = result + static_cast<size_t>(t0 + t) * result_stride + static_cast<size_t>(r);
                for (int k = 0; k < rows; ++k)
                    out[k] = Format::kHasMin ? acc[t * kRows + k] - acc_min[t * kRows + k] : acc[t * kRows + k];
            }
        }
    }
}

}  // namespace inlay::quant::detail::lanes
