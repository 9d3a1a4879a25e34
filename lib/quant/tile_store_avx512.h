// Internal: writing a 16 x 16 block of tile results (16 weight rows, each a vector over 16
// tokens) into the token-major result matrix, result[t * stride + r]. A token's results
// are contiguous there, while a row's are a result stride apart (often a multiple of
// 4 KiB, so stores row by row would all land in one cache set): the block is transposed
// in registers and stored token by token. Include only where AVX-512F is enabled.
#pragma once

#include <immintrin.h>

#include <cstddef>

namespace inlay::quant::detail {

// v[i] = row i's 16 values -> v[j] = the 16 rows' value j.
inline void transpose16(__m512 (&v)[16]) {
    __m512 t[16], u[16];
    for (int i = 0; i < 8; ++i) {  // within each 128-bit block, pairs of rows interleaved
        t[2 * i] = _mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]);
    }
    for (int g = 0; g < 4; ++g) {  // u[4g + m], block k: rows 4g..4g+3 of column 4k + m
        u[4 * g + 0] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
        u[4 * g + 1] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0xee);
        u[4 * g + 2] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
        u[4 * g + 3] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xee);
    }
    for (int m = 0; m < 4; ++m) {  // column 4k + m: block k of u[m], u[4 + m], u[8 + m], u[12 + m]
        const __m512 a = _mm512_shuffle_f32x4(u[m], u[4 + m], 0x44), b = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0x44);
        const __m512 c = _mm512_shuffle_f32x4(u[m], u[4 + m], 0xee), d = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0xee);
        v[m] = _mm512_shuffle_f32x4(a, b, 0x88);
        v[4 + m] = _mm512_shuffle_f32x4(a, b, 0xdd);
        v[8 + m] = _mm512_shuffle_f32x4(c, d, 0x88);
        v[12 + m] = _mm512_shuffle_f32x4(c, d, 0xdd);
    }
}

// rows[r] (r < n_rows) holds row r's results for tokens 0..15; the first `tokens` go to
// result[t * result_stride + r]. Rows from n_rows on are ignored.
inline void store_token_major(__m512 (&rows)[16], int n_rows, int tokens, float* result, size_t result_stride) {
    transpose16(rows);
    const auto row_mask = static_cast<__mmask16>((1u << n_rows) - 1);
    for (int t = 0; t < tokens; ++t) _mm512_mask_storeu_ps(result + static_cast<size_t>(t) * result_stride, row_mask, rows[t]);
}

}  // namespace inlay::quant::detail
