// Q4_K, Q5_K and Q6_K token tiles over sixteen weight rows at once (AVX-512 VNNI), for
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
// operations and the result is acc - acc_min: the same bits as vec_dot_kernel. Q6_K
// the same way with its sixteen sub-blocks of 16 (levels 0..63, signed scales), the
// -32 offset taken out by eight dpwssd of the scales against the token's block sums,
// and dot_q6_k's one float per (row, token).
//
// The floats of a block of tokens live on the stack while the chunks of super-blocks
// pass, so the rows are regrouped once per 64 tokens.
//
// Weights interleaved at load time (interleaved_rows.h) take the same tiles, regrouped
// from their records (AffineRecords, Q6Records): the levels are already one row per lane,
// so the regrouping is loads, masks and stores, with no transposes.
#include "quant/kernels.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__) && \
    defined(__AVX512VNNI__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <utility>

#include "core/half.h"
#include "quant/avx2_blocks.h"
#include "quant/avx2_kquant_levels.h"
#include "quant/row_lane_tiles.h"
#include "quant/gcc_avx512_warnings.h"
#include "quant/interleaved_records.h"

namespace inlay::quant::detail {
namespace {

using namespace avx2;

// The tiles' shape (row_lane_tiles.h runs them).
struct Lanes16 {
    static constexpr int kRows = 16;
    static constexpr int64_t kChunkBlocks = 4;  // super-blocks regrouped at a time
    static constexpr int kTokens = 8;           // tokens whose integer totals stay in registers
};

// The format policies: Group (one super-block of the sixteen rows, regrouped),
// interleave (super-blocks [b0, b0 + count) of n_rows <= 16 rows; missing rows are zeros)
// and accumulate<T> (tokens [0, T) over `count` groups into their rows' floats, kRows
// apart: acc and, for the affine formats, acc_min).

// Q4_K / Q5_K.
template <bool Q5>
struct Affine : Lanes16 {
    static constexpr bool kHasMin = true;
    using Block = std::conditional_t<Q5, BlockQ5_K, BlockQ4_K>;
    struct Group {
        int32_t quads[8][8][kRows];   // quads[j][k][r]: levels 4k..4k+3 of sub-block j of row r
        int32_t scales[8][kRows];     // row r's scale of sub-block j
        int32_t min_pairs[4][kRows];  // row r's mins 2i and 2i+1 as int16 (low, high)
        float d[kRows];
        float dmin[kRows];
    };

    static void interleave(const uint8_t* w, size_t w_stride, int n_rows, int64_t b0, int64_t count, Group* out) {
        for (int64_t i = 0; i < count; ++i) {
            Group& ib = out[i];
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
                    const Block& b = row_as<Block>(w, w_stride, r)[b0 + i];
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

    template <int T>
    static void accumulate(const Group* groups, int64_t count, const BlockQ8_K* const (&x)[kTokens], float* acc,
                           float* acc_min) {
        for (int64_t i = 0; i < count; ++i) {
            const Group& ib = groups[i];
            __m512i sumi[T];
            for (int t = 0; t < T; ++t) sumi[t] = _mm512_setzero_si512();
            for (int j = 0; j < 8; ++j) {
                __m512i quads[8];
                for (int k = 0; k < 8; ++k) quads[k] = _mm512_loadu_si512(ib.quads[j][k]);
                const __m512i scale = _mm512_loadu_si512(ib.scales[j]);
                for (int t = 0; t < T; ++t) {
                    const int8_t* q = x[t][i].qs + 32 * j;
                    // Two chains of four (exact integers: any order), as Q6 has: one chain of
                    // eight dpbusd latencies per (sub-block, token) left the unit idle. Zen 5,
                    // bench_kernels Q4_K 576 x 1536 x 128 tokens 461 -> 343 us; Qwen3-0.6B
                    // shape Q4_K_M pp512 515-535 -> 627 t/s.
                    __m512i lo = _mm512_setzero_si512(), hi = _mm512_setzero_si512();
                    for (int k = 0; k < 4; ++k) {
                        lo = _mm512_dpbusd_epi32(lo, quads[k], _mm512_set1_epi32(static_cast<int32_t>(load_u32(q + 4 * k))));
                        hi = _mm512_dpbusd_epi32(hi, quads[k + 4],
                                                 _mm512_set1_epi32(static_cast<int32_t>(load_u32(q + 16 + 4 * k))));
                    }
                    sumi[t] = _mm512_add_epi32(sumi[t], _mm512_mullo_epi32(_mm512_add_epi32(lo, hi), scale));
                }
            }
            const __m512 dw = _mm512_loadu_ps(ib.d), dmin = _mm512_loadu_ps(ib.dmin);
            for (int t = 0; t < T; ++t) {
                const BlockQ8_K& xb = x[t][i];
                int32_t pair_words[4];
                sub_block_sum_pairs(xb.bsums, pair_words);
                __m512i summ = _mm512_setzero_si512();
                for (int p = 0; p < 4; ++p)
                    summ = _mm512_dpwssd_epi32(summ, _mm512_loadu_si512(ib.min_pairs[p]), _mm512_set1_epi32(pair_words[p]));
                const __m512 dx = _mm512_set1_ps(xb.d);
                float* a = acc + static_cast<size_t>(t) * kRows;
                float* am = acc_min + static_cast<size_t>(t) * kRows;
                _mm512_storeu_ps(a, _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi[t]), _mm512_mul_ps(dx, dw), _mm512_loadu_ps(a)));
                _mm512_storeu_ps(am, _mm512_fmadd_ps(_mm512_cvtepi32_ps(summ), _mm512_mul_ps(dx, dmin),
                                                     _mm512_loadu_ps(am)));
            }
        }
    }
};

// Q6_K: sixteen sub-blocks of 16, levels 0..63 stored +32, signed 8-bit scales.
struct Q6 : Lanes16 {
    static constexpr bool kHasMin = false;
    struct Group {
        int32_t quads[8][8][kRows];    // quads[v][k][r]: levels 32v + 4k..32v + 4k + 3 of row r
        int32_t scales[16][kRows];     // row r's scale of sub-block s
        int32_t scale_pairs[8][kRows]; // row r's scales 2i and 2i+1 as int16 (low, high)
        float d[kRows];
    };

    static void interleave(const uint8_t* w, size_t w_stride, int n_rows, int64_t b0, int64_t count, Group* out) {
        for (int64_t i = 0; i < count; ++i) {
            Group& ib = out[i];
            alignas(32) int8_t sc[kRows][16] = {};
            alignas(32) uint16_t d16[kRows] = {};
            for (int half = 0; half < 2; ++half) {
                __m256i levels[8][8];  // [32 values v][row of the half]
                for (int j = 0; j < 8; ++j) {
                    const int r = 8 * half + j;
                    if (r >= n_rows) {
                        for (auto& v : levels) v[j] = _mm256_setzero_si256();
                        continue;
                    }
                    const BlockQ6_K& b = row_as<BlockQ6_K>(w, w_stride, r)[b0 + i];
                    std::memcpy(sc[r], b.scales, sizeof b.scales);
                    d16[r] = b.d;
                    __m256i q[4];
                    for (int h = 0; h < 2; ++h) {
                        q6_levels(b, h, q);
                        for (int k = 0; k < 4; ++k) levels[4 * h + k][j] = q[k];
                    }
                }
                for (int v = 0; v < 8; ++v) {
                    __m256i quads[8];
                    transpose8x32(levels[v], quads);
                    for (int k = 0; k < 8; ++k)
                        _mm256_storeu_si256(reinterpret_cast<__m256i*>(&ib.quads[v][k][8 * half]), quads[k]);
                }
            }
            for (int r = 0; r < kRows; ++r) {
                for (int s = 0; s < 16; ++s) ib.scales[s][r] = sc[r][s];
                for (int p = 0; p < 8; ++p)
                    ib.scale_pairs[p][r] = static_cast<int32_t>(static_cast<uint16_t>(sc[r][2 * p]) |
                                                                (static_cast<uint32_t>(static_cast<uint16_t>(sc[r][2 * p + 1])) << 16));
            }
            _mm512_storeu_ps(ib.d, _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(d16))));
        }
    }

    template <int T>
    static void accumulate(const Group* groups, int64_t count, const BlockQ8_K* const (&x)[kTokens], float* acc,
                           float*) {
        for (int64_t i = 0; i < count; ++i) {
            const Group& ib = groups[i];
            __m512i sumi[T];
            // Levels are stored with +32: start from -32 * sum_s scale_s * bsum_s.
            for (int t = 0; t < T; ++t) {
                const int16_t* bsums = x[t][i].bsums;
                __m512i bias = _mm512_setzero_si512();
                for (int p = 0; p < 8; ++p)
                    bias = _mm512_dpwssd_epi32(bias, _mm512_loadu_si512(ib.scale_pairs[p]),
                                               _mm512_set1_epi32(static_cast<int32_t>(load_u32(bsums + 2 * p))));
                sumi[t] = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(bias, 5));
            }
            for (int v = 0; v < 8; ++v) {
                __m512i quads[8];
                for (int k = 0; k < 8; ++k) quads[k] = _mm512_loadu_si512(ib.quads[v][k]);
                const __m512i scale_lo = _mm512_loadu_si512(ib.scales[2 * v]);
                const __m512i scale_hi = _mm512_loadu_si512(ib.scales[2 * v + 1]);
                for (int t = 0; t < T; ++t) {
                    const int8_t* q = x[t][i].qs + 32 * v;
                    __m512i lo = _mm512_setzero_si512(), hi = _mm512_setzero_si512();
                    for (int k = 0; k < 4; ++k) {
                        lo = _mm512_dpbusd_epi32(lo, quads[k], _mm512_set1_epi32(static_cast<int32_t>(load_u32(q + 4 * k))));
                        hi = _mm512_dpbusd_epi32(hi, quads[k + 4],
                                                 _mm512_set1_epi32(static_cast<int32_t>(load_u32(q + 16 + 4 * k))));
                    }
                    sumi[t] = _mm512_add_epi32(sumi[t], _mm512_add_epi32(_mm512_mullo_epi32(lo, scale_lo),
                                                                         _mm512_mullo_epi32(hi, scale_hi)));
                }
            }
            const __m512 dw = _mm512_loadu_ps(ib.d);
            for (int t = 0; t < T; ++t) {
                float* a = acc + static_cast<size_t>(t) * kRows;
                _mm512_storeu_ps(a, _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi[t]), _mm512_mul_ps(_mm512_set1_ps(x[t][i].d), dw),
                                                    _mm512_loadu_ps(a)));
            }
        }
    }
};

// f.template operator()<I>() for I = 0 .. N - 1.
template <int N, class F>
inline void for_each_index(F&& f) {
    [&]<int... I>(std::integer_sequence<int, I...>) { (f.template operator()<I>(), ...); }(std::make_integer_sequence<int, N>{});
}

// The row-per-lane tiles' drivers address row r at w + r * w_stride: with w_stride the
// stored row's bytes (a record holds sixteen stored blocks' bytes), row 16g lands on
// group g of the records, and super-block b of that group on its record b.
template <bool Q5>
struct AffineRecords : Affine<Q5> {
    using Group = typename Affine<Q5>::Group;
    static constexpr DType kType = Q5 ? DType::Q5_K : DType::Q4_K;
    static void interleave(const uint8_t* w, size_t, int, int64_t b0, int64_t count, Group* out) {
        for (int64_t i = 0; i < count; ++i) {
            const uint8_t* rec = w + static_cast<size_t>(b0 + i) * interleaved::record_bytes(kType);
            Group& ib = out[i];
            __m512i sc[2], m[2];
            interleaved::affine_scales(rec, sc, m);
            for_each_index<4>([&]<int C>() {
                __m512i lo[8], hi[8];
                interleaved::affine_levels<Q5, C>(rec, lo, hi);
                for (int k = 0; k < 8; ++k) {
                    _mm512_storeu_si512(ib.quads[2 * C][k], lo[k]);
                    _mm512_storeu_si512(ib.quads[2 * C + 1][k], hi[k]);
                }
            });
            for_each_index<8>([&]<int J>() {
                _mm512_storeu_si512(ib.scales[J], interleaved::byte_lanes<J % 4>(sc[J / 4]));
            });
            __m512i min_pairs[4];
            interleaved::affine_min_pairs(m, min_pairs);
            for (int p = 0; p < 4; ++p) _mm512_storeu_si512(ib.min_pairs[p], min_pairs[p]);
            _mm512_storeu_ps(ib.d, interleaved::record_scales(rec));
            _mm512_storeu_ps(ib.dmin, interleaved::record_scales(rec + interleaved::kAffineDmin));
        }
    }
};

struct Q6Records : Q6 {
    static void interleave(const uint8_t* w, size_t, int, int64_t b0, int64_t count, Group* out) {
        for (int64_t i = 0; i < count; ++i) {
            const uint8_t* rec = w + static_cast<size_t>(b0 + i) * interleaved::record_bytes(DType::Q6_K);
            Group& ib = out[i];
            // ql quad K of half H: its low nibbles are elements 128H + 4K.. (32 values v =
            // 4H + K / 8, quad K % 8), its high nibbles 128H + 64 + 4K.. (v = 4H + 2 + K / 8).
            for_each_index<32>([&]<int I>() {
                constexpr int H = I / 16, K = I % 16;
                __m512i lo, hi;
                interleaved::q6_levels<H, K>(rec, lo, hi);
                _mm512_storeu_si512(ib.quads[4 * H + K / 8][K % 8], lo);
                _mm512_storeu_si512(ib.quads[4 * H + 2 + K / 8][K % 8], hi);
            });
            for (int s = 0; s < 16; ++s) _mm512_storeu_si512(ib.scales[s], interleaved::q6_scale_lanes(rec, s));
            for (int p = 0; p < 8; ++p) {
                const __m512i pair = _mm512_or_si512(
                    _mm512_and_si512(interleaved::q6_scale_lanes(rec, 2 * p), _mm512_set1_epi32(0xffff)),
                    _mm512_slli_epi32(interleaved::q6_scale_lanes(rec, 2 * p + 1), 16));
                _mm512_storeu_si512(ib.scale_pairs[p], pair);
            }
            _mm512_storeu_ps(ib.d, interleaved::record_scales(rec));
        }
    }
};

template <class Records, DType W>
void record_tiles(int64_t n, int64_t n_rows, int64_t n_tokens, float* result, size_t result_stride, const void* w16,
                  size_t, const void* x, size_t x_stride) {
    const size_t row_bytes = static_cast<size_t>(n / kQK_K) * interleaved::record_bytes(W) / interleaved::kRows;
    lanes::kquant_tiles<Records>(n, n_rows, n_tokens, result, result_stride, w16, row_bytes, x, x_stride);
}

}  // namespace

VecDotTileFn avx512_rows16_kquant_interleaved_kernel(DType weight) {
    switch (weight) {
        case DType::Q4_K: return record_tiles<AffineRecords<false>, DType::Q4_K>;
        case DType::Q5_K: return record_tiles<AffineRecords<true>, DType::Q5_K>;
        case DType::Q6_K: return record_tiles<Q6Records, DType::Q6_K>;
        default: return nullptr;
    }
}

VecDotTileFn avx512_rows16_kquant_tile_kernel(DType weight) {
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
VecDotTileFn avx512_rows16_kquant_tile_kernel(DType) { return nullptr; }
VecDotTileFn avx512_rows16_kquant_interleaved_kernel(DType) { return nullptr; }
}  // namespace inlay::quant::detail

#endif
