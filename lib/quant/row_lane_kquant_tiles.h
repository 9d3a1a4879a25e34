// Internal: the driver of the K-quant token tiles that keep one weight row per 32-bit
// lane (vec_dot_tile_avx512_rows16_kquants.cpp: 16 rows to a vector;
// vec_dot_tile_avx2_rows8_kquants.cpp: 8). A Format gives the layout and the arithmetic:
// kRows, kTokens (tokens whose integer totals stay in registers), kChunkBlocks
// (super-blocks regrouped at a time), kHasMin (an acc_min as Q4_K/Q5_K have), Group (one
// super-block of the rows, regrouped), interleave(w, w_stride, n_rows, b0, count, out)
// and accumulate<T>(groups, count, x, acc, acc_min). The rows' floats of kTokenBlock
// tokens stay on the stack while the chunks pass, so the rows are regrouped once per
// chunk and block of tokens. Include only inside the including file's ISA guard.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "quant/avx2_blocks.h"

namespace inlay::quant::detail::lanes {

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
