// Q4_K and Q5_K token tiles over sixteen weight rows at once (AVX-512 VNNI), for
// prompts: vec_dot_tile_avx512_rows16.cpp's layout for the K-quants.
//
// The two-row K-quant tile (vec_dot_tile_avx512.cpp) multiplies with maddubs and
// dpwssd and reduces every (row, token)'s lane sums at the end of each super-block;
// here each 32-bit lane is one of sixteen rows, so nothing is reduced. Once per call and
// per chunk of super-blocks the rows are regrouped (`interleave`): for sub-block j,
// vector k holds levels 4k..4k+3 of every row (unsigned, 0..31), beside every row's
// scale and min. For a token, eight dpbusd against broadcasts of its quants give each
// row's sub-block dot in its lane; times the row's scale (vpmulld) they add up to the
// super-block's exact sumi, and four dpwssd of the mins against the token's sub-block
// sums give summ. Both go into per-(row, token) floats with affine_k_accumulate's
// operations and the result is acc - acc_min: the same bits as vec_dot_kernel.
//
// The floats of a block of tokens live on the stack while the chunks of super-blocks
// pass, so the rows are regrouped once per 64 tokens.
#include "quant/kernels.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__) && \
    defined(__AVX512VNNI__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <algorithm>
#include <type_traits>

#include "core/half.h"
#include "quant/avx2_blocks.h"
#include "quant/avx2_kquant_levels.h"
#include "quant/gcc_avx512_warnings.h"

namespace inlay::quant::detail {
namespace {

using namespace avx2;

constexpr int kRows = 16;
constexpr int64_t kChunkBlocks = 4;  // super-blocks regrouped at a time: 4 x 4992 bytes
constexpr int64_t kTokenBlock = 64;  // tokens whose floats stay on the stack
constexpr int kTokens = 8;           // tokens whose integer totals stay in registers

// One super-block of the sixteen rows, regrouped.
struct InterleavedSuperBlock {
    int32_t quads[8][8][kRows];  // quads[j][k][r]: levels 4k..4k+3 of sub-block j of row r
    int32_t scales[8][kRows];    // row r's scale of sub-block j
    int32_t min_pairs[4][kRows]; // row r's mins 2i and 2i+1 as int16 (low, high)
    float d[kRows];
    float dmin[kRows];
};

template <bool Q5>
using AffineBlock = std::conditional_t<Q5, BlockQ5_K, BlockQ4_K>;

template <bool Q5>
void interleave(const uint8_t* w, size_t w_stride, int n_rows, int64_t b0, int64_t count, InterleavedSuperBlock* out) {
    for (int64_t i = 0; i < count; ++i) {
        InterleavedSuperBlock& ib = out[i];
        alignas(32) uint8_t sm[kRows][16] = {};
        alignas(32) uint16_t d16[kRows] = {}, dmin16[kRows] = {};
        for (int half = 0; half < 2; ++half) {
            __m256i levels[8][8];  // [sub-block][row of the half]
            for (int j = 0; j < 8; ++j) {
                const int r = 8 * half + j;
                if (r >= n_rows) {
                    for (auto& sub : levels) sub[j] = _mm256_setzero_si256();
                    continue;
                }
                const AffineBlock<Q5>& b = row_as<AffineBlock<Q5>>(w, w_stride, r)[b0 + i];
                _mm_store_si128(reinterpret_cast<__m128i*>(sm[r]), unpack_k_scales(b.scales));
                d16[r] = b.d;
                dmin16[r] = b.dmin;
                __m256i qh = _mm256_setzero_si256();
                if constexpr (Q5) qh = load32(b.qh);
                affine_levels<Q5, 0>(b, qh, levels[0][j], levels[1][j]);
                affine_levels<Q5, 1>(b, qh, levels[2][j], levels[3][j]);
                affine_levels<Q5, 2>(b, qh, levels[4][j], levels[5][j]);
                affine_levels<Q5, 3>(b, qh, levels[6][j], levels[7][j]);
            }
            for (int j = 0; j < 8; ++j) {
                __m256i quads[8];
                transpose8x32(levels[j], quads);
                for (int k = 0; k < 8; ++k)
                    _mm256_storeu_si256(reinterpret_cast<__m256i*>(&ib.quads[j][k][8 * half]), quads[k]);
            }
        }
        for (int r = 0; r < kRows; ++r) {
            for (int j = 0; j < 8; ++j) ib.scales[j][r] = sm[r][j];
            for (int p = 0; p < 4; ++p) ib.min_pairs[p][r] = sm[r][8 + 2 * p] | (sm[r][8 + 2 * p + 1] << 16);
        }
        _mm512_storeu_ps(ib.d, _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(d16))));
        _mm512_storeu_ps(ib.dmin, _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(dmin16))));
    }
}

// Tokens [0, T) against `count` regrouped super-blocks; acc / acc_min: the tokens' rows'
// floats, kRows apart.
template <int T>
void token_group(const InterleavedSuperBlock* blocks, int64_t count, const BlockQ8_K* const (&x)[kTokens],
                 float* acc, float* acc_min) {
    for (int64_t i = 0; i < count; ++i) {
        const InterleavedSuperBlock& ib = blocks[i];
        __m512i sumi[T];
        for (int t = 0; t < T; ++t) sumi[t] = _mm512_setzero_si512();
        for (int j = 0; j < 8; ++j) {
            __m512i quads[8];
            for (int k = 0; k < 8; ++k) quads[k] = _mm512_loadu_si512(ib.quads[j][k]);
            const __m512i scale = _mm512_loadu_si512(ib.scales[j]);
            for (int t = 0; t < T; ++t) {
                const int8_t* q = x[t][i].qs + 32 * j;
                __m512i dot = _mm512_dpbusd_epi32(_mm512_setzero_si512(), quads[0],
                                                  _mm512_set1_epi32(static_cast<int32_t>(load_u32(q))));
                for (int k = 1; k < 8; ++k)
                    dot = _mm512_dpbusd_epi32(dot, quads[k], _mm512_set1_epi32(static_cast<int32_t>(load_u32(q + 4 * k))));
                sumi[t] = _mm512_add_epi32(sumi[t], _mm512_mullo_epi32(dot, scale));
            }
        }
        const __m512 dw = _mm512_loadu_ps(ib.d), dmin = _mm512_loadu_ps(ib.dmin);
        for (int t = 0; t < T; ++t) {
            const BlockQ8_K& xb = x[t][i];
            // The token's sub-block sums as int16 pairs: pair p = (sum 2p, sum 2p + 1).
            const __m256i sums = _mm256_madd_epi16(load32(xb.bsums), _mm256_set1_epi16(1));
            alignas(32) int32_t pairs[8];
            _mm256_store_si256(reinterpret_cast<__m256i*>(pairs), _mm256_packs_epi32(sums, sums));
            const int32_t pair_words[4] = {pairs[0], pairs[1], pairs[4], pairs[5]};
            __m512i summ = _mm512_setzero_si512();
            for (int p = 0; p < 4; ++p)
                summ = _mm512_dpwssd_epi32(summ, _mm512_loadu_si512(ib.min_pairs[p]), _mm512_set1_epi32(pair_words[p]));
            const __m512 dx = _mm512_set1_ps(xb.d);
            float* a = acc + static_cast<size_t>(t) * kRows;
            float* am = acc_min + static_cast<size_t>(t) * kRows;
            _mm512_storeu_ps(a, _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi[t]), _mm512_mul_ps(dx, dw), _mm512_loadu_ps(a)));
            _mm512_storeu_ps(am,
                             _mm512_fmadd_ps(_mm512_cvtepi32_ps(summ), _mm512_mul_ps(dx, dmin), _mm512_loadu_ps(am)));
        }
    }
}

template <int T>
void token_tail(int tokens, const InterleavedSuperBlock* blocks, int64_t count, const BlockQ8_K* const (&x)[kTokens],
                float* acc, float* acc_min) {
    if constexpr (T > 0) {
        if (tokens == T) token_group<T>(blocks, count, x, acc, acc_min);
        else token_tail<T - 1>(tokens, blocks, count, x, acc, acc_min);
    }
}

template <bool Q5>
void rows16_kquant_tiles(int64_t n, int64_t n_rows, int64_t n_tokens, float* result, size_t result_stride,
                         const void* w, size_t w_stride, const void* x, size_t x_stride) {
    const int64_t nb = n / kQK_K;
    const auto* wb = static_cast<const uint8_t*>(w);
    const auto* xb = static_cast<const uint8_t*>(x);
    InterleavedSuperBlock blocks[kChunkBlocks];
    alignas(64) float acc[kTokenBlock * kRows], acc_min[kTokenBlock * kRows];
    for (int64_t r = 0; r < n_rows; r += kRows) {
        const int rows = static_cast<int>(std::min<int64_t>(kRows, n_rows - r));
        const uint8_t* w_rows = wb + static_cast<size_t>(r) * w_stride;
        for (int64_t t0 = 0; t0 < n_tokens; t0 += kTokenBlock) {
            const int64_t tokens = std::min(kTokenBlock, n_tokens - t0);
            std::fill(acc, acc + tokens * kRows, 0.0f);
            std::fill(acc_min, acc_min + tokens * kRows, 0.0f);
            for (int64_t b0 = 0; b0 < nb; b0 += kChunkBlocks) {
                const int64_t count = std::min(kChunkBlocks, nb - b0);
                interleave<Q5>(w_rows, w_stride, rows, b0, count, blocks);
                for (int64_t t = 0; t < tokens; t += kTokens) {
                    const BlockQ8_K* xt[kTokens];
                    const int group = static_cast<int>(std::min<int64_t>(kTokens, tokens - t));
                    for (int k = 0; k < group; ++k)
                        xt[k] = row_as<BlockQ8_K>(xb, x_stride, static_cast<int>(t0 + t + k)) + b0;
                    token_tail<kTokens>(group, blocks, count, xt, acc + t * kRows, acc_min + t * kRows);
                }
            }
            for (int64_t t = 0; t < tokens; ++t) {
                float* out = result + static_cast<size_t>(t0 + t) * result_stride + static_cast<size_t>(r);
                for (int k = 0; k < rows; ++k) out[k] = acc[t * kRows + k] - acc_min[t * kRows + k];
            }
        }
    }
}

}  // namespace

VecDotTileFn avx512_rows16_kquant_tile_kernel(DType weight) {
    switch (weight) {
        case DType::Q4_K: return rows16_kquant_tiles<false>;
        case DType::Q5_K: return rows16_kquant_tiles<true>;
        default: return nullptr;
    }
}

}  // namespace inlay::quant::detail

#else

namespace inlay::quant::detail {
VecDotTileFn avx512_rows16_kquant_tile_kernel(DType) { return nullptr; }
}  // namespace inlay::quant::detail

#endif
