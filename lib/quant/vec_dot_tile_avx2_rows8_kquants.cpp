// Q4_K, Q5_K and Q6_K token tiles over eight weight rows at once with 256-bit vectors, for
// prompts on CPUs without AVX-512: the layout of vec_dot_tile_avx512_rows16_kquants.cpp
// (each 32-bit lane one weight row, the rows regrouped once per chunk of super-blocks
// and block of tokens) with AVX2's integer products instead of VNNI.
//
// For sub-block j, vector k holds levels 4k..4k+3 of every row; maddubs against a
// broadcast of the token's quants 4k..4k+3 leaves two int16 pair sums per lane (at most
// 2 x 31 x 127, so four k's add up in int16 without overflow), and madd with the row's
// scale in both halves of its lane turns them into the scaled int32 sum. The super-block's
// sumi and summ are exact integers as in every other K-quant kernel, and they go into the
// floats with affine_k_accumulate's operations: the same bits as vec_dot_kernel. Q6_K
// as in the sixteen-row file (sixteen sub-blocks of 16, the -32 offset from the scales
// against the block sums, one float).
#include "quant/kernels.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "core/half.h"
#include "quant/avx2_blocks.h"
#include "quant/avx2_kquant_levels.h"
#include "quant/row_lane_tiles.h"

namespace inlay::quant::detail {
namespace {

using namespace avx2;

// The tiles' shape (row_lane_tiles.h runs them).
struct Lanes8 {
    static constexpr int kRows = 8;
    static constexpr int64_t kChunkBlocks = 8;  // super-blocks regrouped at a time
    static constexpr int kTokens = 4;           // tokens whose integer totals stay in registers
};

inline __m256i broadcast4(const int8_t* q) { return _mm256_set1_epi32(static_cast<int32_t>(load_u32(q))); }
inline __m256i load_lanes(const int32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// The format policies, as in vec_dot_tile_avx512_rows16_kquants.cpp: Group, interleave
// (super-blocks [b0, b0 + count) of n_rows <= 8 rows; missing rows are zeros) and
// accumulate<T> (tokens [0, T) over `count` groups into their rows' floats, kRows apart).

// Q4_K / Q5_K.
template <bool Q5>
struct Affine : Lanes8 {
    static constexpr bool kHasMin = true;
    using Block = std::conditional_t<Q5, BlockQ5_K, BlockQ4_K>;
    struct Group {
        int32_t quads[8][8][kRows];   // quads[j][k][r]: levels 4k..4k+3 of sub-block j of row r
        int32_t scales[8][kRows];     // row r's scale of sub-block j, in both int16 halves
        int32_t min_pairs[4][kRows];  // row r's mins 2i and 2i+1 as int16 (low, high)
        float d[kRows];
        float dmin[kRows];
    };

    static void interleave(const uint8_t* w, size_t w_stride, int n_rows, int64_t b0, int64_t count, Group* out) {
        for (int64_t i = 0; i < count; ++i) {
            Group& g = out[i];
            alignas(16) uint8_t sm[kRows][16] = {};
            alignas(16) uint16_t d16[kRows] = {}, dmin16[kRows] = {};
            __m256i levels[8][8];  // [sub-block][row]
            for (int r = 0; r < kRows; ++r) {
                if (r >= n_rows) {
                    for (auto& sub : levels) sub[r] = _mm256_setzero_si256();
                    continue;
                }
                const Block& b = row_as<Block>(w, w_stride, r)[b0 + i];
                _mm_store_si128(reinterpret_cast<__m128i*>(sm[r]), unpack_k_scales(b.scales));
                d16[r] = b.d;
                dmin16[r] = b.dmin;
                __m256i qh = _mm256_setzero_si256();
                if constexpr (Q5) qh = load32(b.qh);
                affine_levels<Q5, 0>(b, qh, levels[0][r], levels[1][r]);
                affine_levels<Q5, 1>(b, qh, levels[2][r], levels[3][r]);
                affine_levels<Q5, 2>(b, qh, levels[4][r], levels[5][r]);
                affine_levels<Q5, 3>(b, qh, levels[6][r], levels[7][r]);
            }
            for (int j = 0; j < 8; ++j) {
                __m256i quads[8];
                transpose8x32(levels[j], quads);
                for (int k = 0; k < 8; ++k) _mm256_storeu_si256(reinterpret_cast<__m256i*>(g.quads[j][k]), quads[k]);
            }
            for (int r = 0; r < kRows; ++r) {
                for (int j = 0; j < 8; ++j) g.scales[j][r] = sm[r][j] | (sm[r][j] << 16);
                for (int p = 0; p < 4; ++p) g.min_pairs[p][r] = sm[r][8 + 2 * p] | (sm[r][8 + 2 * p + 1] << 16);
            }
            _mm256_storeu_ps(g.d, _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(d16))));
            _mm256_storeu_ps(g.dmin, _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(dmin16))));
        }
    }

    template <int T>
    static void accumulate(const Group* groups, int64_t count, const BlockQ8_K* const (&x)[kTokens], float* acc,
                           float* acc_min) {
        for (int64_t i = 0; i < count; ++i) {
            const Group& g = groups[i];
            __m256i sumi[T];
            for (int t = 0; t < T; ++t) sumi[t] = _mm256_setzero_si256();
            for (int j = 0; j < 8; ++j) {
                const __m256i scale = load_lanes(g.scales[j]);
                for (int h = 0; h < 2; ++h) {  // levels 16h..16h+15 of the sub-block: four k's in int16
                    __m256i quads[4];
                    for (int k = 0; k < 4; ++k) quads[k] = load_lanes(g.quads[j][4 * h + k]);
                    for (int t = 0; t < T; ++t) {
                        const int8_t* q = x[t][i].qs + 32 * j + 16 * h;
                        __m256i pairs = _mm256_maddubs_epi16(quads[0], broadcast4(q));
                        for (int k = 1; k < 4; ++k)
                            pairs = _mm256_add_epi16(pairs, _mm256_maddubs_epi16(quads[k], broadcast4(q + 4 * k)));
                        sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(pairs, scale));
                    }
                }
            }
            const __m256 dw = _mm256_loadu_ps(g.d), dmin = _mm256_loadu_ps(g.dmin);
            for (int t = 0; t < T; ++t) {
                const BlockQ8_K& xb = x[t][i];
                // The token's sub-block sums as int16 pairs: pair p = (sum 2p, sum 2p + 1).
                const __m256i sums = _mm256_madd_epi16(load32(xb.bsums), _mm256_set1_epi16(1));
                alignas(32) int32_t pairs[8];
                _mm256_store_si256(reinterpret_cast<__m256i*>(pairs), _mm256_packs_epi32(sums, sums));
                const int32_t pair_words[4] = {pairs[0], pairs[1], pairs[4], pairs[5]};
                __m256i summ = _mm256_setzero_si256();
                for (int p = 0; p < 4; ++p)
                    summ = _mm256_add_epi32(summ, _mm256_madd_epi16(load_lanes(g.min_pairs[p]), _mm256_set1_epi32(pair_words[p])));
                const __m256 dx = _mm256_set1_ps(xb.d);
                float* a = acc + static_cast<size_t>(t) * kRows;
                float* am = acc_min + static_cast<size_t>(t) * kRows;
                _mm256_storeu_ps(a, _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[t]), _mm256_mul_ps(dx, dw), _mm256_loadu_ps(a)));
                _mm256_storeu_ps(am,
                                 _mm256_fmadd_ps(_mm256_cvtepi32_ps(summ), _mm256_mul_ps(dx, dmin), _mm256_loadu_ps(am)));
            }
        }
    }
};

// Q6_K: sixteen sub-blocks of 16, levels 0..63 stored +32 (two k's add up in int16: at
// most 2 x 2 x 63 x 127), signed 8-bit scales.
struct Q6 : Lanes8 {
    static constexpr bool kHasMin = false;
    struct Group {
        int32_t quads[8][8][kRows];     // quads[v][k][r]: levels 32v + 4k..32v + 4k + 3 of row r
        int32_t scales[16][kRows];      // row r's scale of sub-block s, in both int16 halves
        int32_t scale_pairs[8][kRows];  // row r's scales 2i and 2i+1 as int16 (low, high)
        float d[kRows];
    };

    static void interleave(const uint8_t* w, size_t w_stride, int n_rows, int64_t b0, int64_t count, Group* out) {
        for (int64_t i = 0; i < count; ++i) {
            Group& g = out[i];
            alignas(16) int8_t sc[kRows][16] = {};
            alignas(16) uint16_t d16[kRows] = {};
            __m256i levels[8][8];  // [32 values v][row]
            for (int r = 0; r < kRows; ++r) {
                if (r >= n_rows) {
                    for (auto& v : levels) v[r] = _mm256_setzero_si256();
                    continue;
                }
                const BlockQ6_K& b = row_as<BlockQ6_K>(w, w_stride, r)[b0 + i];
                std::memcpy(sc[r], b.scales, sizeof b.scales);
                d16[r] = b.d;
                __m256i q[4];
                for (int h = 0; h < 2; ++h) {
                    q6_levels(b, h, q);
                    for (int k = 0; k < 4; ++k) levels[4 * h + k][r] = q[k];
                }
            }
            for (int v = 0; v < 8; ++v) {
                __m256i quads[8];
                transpose8x32(levels[v], quads);
                for (int k = 0; k < 8; ++k) _mm256_storeu_si256(reinterpret_cast<__m256i*>(g.quads[v][k]), quads[k]);
            }
            for (int r = 0; r < kRows; ++r) {
                for (int s = 0; s < 16; ++s) {
                    const auto half = static_cast<uint32_t>(static_cast<uint16_t>(sc[r][s]));
                    g.scales[s][r] = static_cast<int32_t>(half | (half << 16));
                }
                for (int p = 0; p < 8; ++p)
                    g.scale_pairs[p][r] = static_cast<int32_t>(static_cast<uint16_t>(sc[r][2 * p]) |
                                                               (static_cast<uint32_t>(static_cast<uint16_t>(sc[r][2 * p + 1])) << 16));
            }
            _mm256_storeu_ps(g.d, _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(d16))));
        }
    }

    template <int T>
    static void accumulate(const Group* groups, int64_t count, const BlockQ8_K* const (&x)[kTokens], float* acc,
                           float*) {
        for (int64_t i = 0; i < count; ++i) {
            const Group& g = groups[i];
            __m256i sumi[T];
            for (int t = 0; t < T; ++t) {  // levels are stored with +32: start from -32 * sum_s scale_s * bsum_s
                const int16_t* bsums = x[t][i].bsums;
                __m256i bias = _mm256_setzero_si256();
                for (int p = 0; p < 8; ++p)
                    bias = _mm256_add_epi32(bias, _mm256_madd_epi16(load_lanes(g.scale_pairs[p]),
                                                                    _mm256_set1_epi32(static_cast<int32_t>(load_u32(bsums + 2 * p)))));
                sumi[t] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(bias, 5));
            }
            for (int v = 0; v < 8; ++v) {
                for (int h = 0; h < 2; ++h) {  // sub-block 2v + h: levels 32v + 16h .. + 15
                    const __m256i scale = load_lanes(g.scales[2 * v + h]);
                    __m256i quads[4];
                    for (int k = 0; k < 4; ++k) quads[k] = load_lanes(g.quads[v][4 * h + k]);
                    for (int t = 0; t < T; ++t) {
                        const int8_t* q = x[t][i].qs + 32 * v + 16 * h;
                        const __m256i lo = _mm256_add_epi16(_mm256_maddubs_epi16(quads[0], broadcast4(q)),
                                                            _mm256_maddubs_epi16(quads[1], broadcast4(q + 4)));
                        const __m256i hi = _mm256_add_epi16(_mm256_maddubs_epi16(quads[2], broadcast4(q + 8)),
                                                            _mm256_maddubs_epi16(quads[3], broadcast4(q + 12)));
                        sumi[t] = _mm256_add_epi32(sumi[t], _mm256_add_epi32(_mm256_madd_epi16(lo, scale),
                                                                             _mm256_madd_epi16(hi, scale)));
                    }
                }
            }
            const __m256 dw = _mm256_loadu_ps(g.d);
            for (int t = 0; t < T; ++t) {
                float* a = acc + static_cast<size_t>(t) * kRows;
                _mm256_storeu_ps(a, _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[t]), _mm256_mul_ps(_mm256_set1_ps(x[t][i].d), dw),
                                                    _mm256_loadu_ps(a)));
            }
        }
    }
};

}  // namespace

VecDotTileFn avx2_rows8_kquant_tile_kernel(DType weight) {
    switch (weight) {
        case DType::Q4_K: return lanes::kquant_tiles<Affine<false>>;
        case DType::Q5_K: return lanes::kquant_tiles<Affine<true>>;
        case DType::Q6_K: return lanes::kquant_tiles<Q6>;
        default: return nullptr;
    }
}

}  // namespace inlay::quant::detail

#else

namespace inlay::quant::detail {
VecDotTileFn avx2_rows8_kquant_tile_kernel(DType) { return nullptr; }
}  // namespace inlay::quant::detail

#endif
