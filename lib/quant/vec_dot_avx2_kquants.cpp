// AVX2 dot kernels of the K-quants against Q8_K activations. Per super-block and row:
// integer dot products of each sub-block (maddubs), weighted by the sub-block scales
// (madd), summed across the lanes into the super-block's exact total, which goes into a
// float accumulator with one FMA by d_w * d_x (the reference's order, which the AMX tiles
// also keep, so all of them agree bitwise); the Q4_K / Q5_K mins and the Q6_K +32 offset
// are applied through the activations' block sums (bsums), so they cost one madd per
// super-block instead of work per weight.
//
// Row-group templates as in vec_dot_avx2.cpp: R rows share the activation loads, and a
// row's arithmetic does not depend on R.
#include "quant/kernels.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <type_traits>

#include "core/half.h"
#include "quant/blocks.h"
#include "quant/avx2_blocks.h"
#include "quant/avx2_kquant_levels.h"

namespace inlay::quant::detail {
namespace {

using namespace avx2;

// Q4_K (Q5 = false) and Q5_K (Q5 = true).
template <bool Q5, int R>
void dot_affine_k(int64_t n, float* result, const uint8_t* w, size_t stride, const void* x_row) {
    using Block = std::conditional_t<Q5, BlockQ5_K, BlockQ4_K>;
    const auto* x = static_cast<const BlockQ8_K*>(x_row);
    const Block* wr[R];
    __m128 acc[R];  // lane 0 the sumi accumulator, lane 1 the mins' (fuse_totals)
    __m256i mins[R];
    for (int r = 0; r < R; ++r) {
        wr[r] = row_as<Block>(w, stride, r);
        acc[r] = _mm_setzero_ps();
    }
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        const BlockQ8_K& xb = x[b];
        const __m256i bsums = load32(xb.bsums);
        __m256i scales16[R];  // sc0..sc7 as int16, in both 128-bit lanes
        __m256i sumi[R];
        __m256i qh[R];
        prefetch_rows<R>(w, stride, static_cast<size_t>(b) * sizeof(Block), sizeof(Block));
        for (int r = 0; r < R; ++r) {
            const Block& wb = wr[r][b];
            const __m128i sm = unpack_k_scales(wb.scales);
            const __m128i sc16 = _mm_cvtepu8_epi16(sm);
            scales16[r] = _mm256_set_m128i(sc16, sc16);
            mins[r] = k_min_products(sm, bsums);
            sumi[r] = _mm256_setzero_si256();
            if constexpr (Q5) qh[r] = load32(wb.qh);
        }
        auto chunk = [&]<int C>() {
            const __m256i xl = load32(xb.qs + 64 * C);
            const __m256i xh = load32(xb.qs + 64 * C + 32);
            for (int r = 0; r < R; ++r) {
                __m256i lo, hi;
                affine_levels<Q5, C>(wr[r][b], qh[r], lo, hi);
                const __m256i pl = scaled_pairs(lo, xl, _mm256_shuffle_epi8(scales16[r], broadcast16_pick(2 * C)));
                const __m256i ph = scaled_pairs(hi, xh, _mm256_shuffle_epi8(scales16[r], broadcast16_pick(2 * C + 1)));
                sumi[r] = _mm256_add_epi32(sumi[r], _mm256_add_epi32(pl, ph));
            }
        };
        chunk.template operator()<0>();
        chunk.template operator()<1>();
        chunk.template operator()<2>();
        chunk.template operator()<3>();
        for (int r = 0; r < R; ++r)
            acc[r] = fuse_totals(lane_totals(sumi[r], mins[r]), xb.d * f16_to_f32(wr[r][b].d),
                                 xb.d * f16_to_f32(wr[r][b].dmin), acc[r]);
    }
    for (int r = 0; r < R; ++r) result[r] = affine_result(acc[r]);
}

// Q4_K / Q5_K token tiles: dot_affine_k's arithmetic per (row, token) pair (the same
// integer sums, the same two float accumulators updated in the same order), with a
// row's levels and per-chunk scales unpacked once per chunk for all T tokens.
template <bool Q5>
struct AffineKTile {
    template <int R, int T>
    static void run(int64_t n, float* result, size_t result_stride, const uint8_t* w, size_t w_stride,
                    const uint8_t* x, size_t x_stride) {
        using Block = std::conditional_t<Q5, BlockQ5_K, BlockQ4_K>;
        const Block* wr[R];
        const BlockQ8_K* xr[T];
        for (int r = 0; r < R; ++r) wr[r] = row_as<Block>(w, w_stride, r);
        for (int t = 0; t < T; ++t) xr[t] = row_as<BlockQ8_K>(x, x_stride, t);
        __m128 acc[R][T];  // fuse_totals accumulators
        for (int r = 0; r < R; ++r)
            for (int t = 0; t < T; ++t) acc[r][t] = _mm_setzero_ps();
        for (int64_t b = 0; b < n / kQK_K; ++b) {
            prefetch_rows<R>(w, w_stride, static_cast<size_t>(b) * sizeof(Block), sizeof(Block));
            __m256i scales16[R];
            __m256i qh[R];
            __m256i sumi[R][T], mins[R][T];
            for (int r = 0; r < R; ++r) {
                const Block& wb = wr[r][b];
                const __m128i sm = unpack_k_scales(wb.scales);
                const __m128i sc16 = _mm_cvtepu8_epi16(sm);
                scales16[r] = _mm256_set_m128i(sc16, sc16);
                for (int t = 0; t < T; ++t) {
                    mins[r][t] = k_min_products(sm, load32(xr[t][b].bsums));
                    sumi[r][t] = _mm256_setzero_si256();
                }
                if constexpr (Q5) qh[r] = load32(wb.qh);
            }
            auto chunk = [&]<int C>() {
                for (int r = 0; r < R; ++r) {
                    __m256i lo, hi;
                    affine_levels<Q5, C>(wr[r][b], qh[r], lo, hi);
                    const __m256i scale_lo = _mm256_shuffle_epi8(scales16[r], broadcast16_pick(2 * C));
                    const __m256i scale_hi = _mm256_shuffle_epi8(scales16[r], broadcast16_pick(2 * C + 1));
                    for (int t = 0; t < T; ++t) {
                        const __m256i pl = scaled_pairs(lo, load32(xr[t][b].qs + 64 * C), scale_lo);
                        const __m256i ph = scaled_pairs(hi, load32(xr[t][b].qs + 64 * C + 32), scale_hi);
                        sumi[r][t] = _mm256_add_epi32(sumi[r][t], _mm256_add_epi32(pl, ph));
                    }
                }
            };
            chunk.template operator()<0>();
            chunk.template operator()<1>();
            chunk.template operator()<2>();
            chunk.template operator()<3>();
            for (int r = 0; r < R; ++r)
                for (int t = 0; t < T; ++t)
                    acc[r][t] = fuse_totals(lane_totals(sumi[r][t], mins[r][t]), xr[t][b].d * f16_to_f32(wr[r][b].d),
                                            xr[t][b].d * f16_to_f32(wr[r][b].dmin), acc[r][t]);
        }
        for (int r = 0; r < R; ++r)
            for (int t = 0; t < T; ++t)
                result[static_cast<size_t>(t) * result_stride + static_cast<size_t>(r)] = affine_result(acc[r][t]);
    }
};

template <int R>
void dot_q6_k(int64_t n, float* result, const uint8_t* w, size_t stride, const void* x_row) {
    const auto* x = static_cast<const BlockQ8_K*>(x_row);
    const BlockQ6_K* wr[R];
    __m128 acc[R];  // lane 0: fma(float(sumi), d_x * d_w, acc) per super-block
    for (int r = 0; r < R; ++r) {
        wr[r] = row_as<BlockQ6_K>(w, stride, r);
        acc[r] = _mm_setzero_ps();
    }
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        const BlockQ8_K& xb = x[b];
        const __m256i bsums = load32(xb.bsums);
        __m256i sumi[R];
        __m256i scales16[R][2];  // int16 scales 8h..8h+7 of half h, in both 128-bit lanes
        prefetch_rows<R>(w, stride, static_cast<size_t>(b) * sizeof(BlockQ6_K), sizeof(BlockQ6_K));
        for (int r = 0; r < R; ++r) {
            const __m256i sc16 = _mm256_cvtepi8_epi16(load16(wr[r][b].scales));
            scales16[r][0] = _mm256_permute2x128_si256(sc16, sc16, 0x00);
            scales16[r][1] = _mm256_permute2x128_si256(sc16, sc16, 0x11);
            // Levels are stored with +32: start from -32 * sum_s scale_s * bsum_s.
            const __m256i bias = _mm256_madd_epi16(bsums, sc16);
            sumi[r] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(bias, 5));
        }
        for (int h = 0; h < 2; ++h) {
            const __m256i x0 = load32(xb.qs + 128 * h);
            const __m256i x1 = load32(xb.qs + 128 * h + 32);
            const __m256i x2 = load32(xb.qs + 128 * h + 64);
            const __m256i x3 = load32(xb.qs + 128 * h + 96);
            for (int r = 0; r < R; ++r) {
                __m256i q[4];
                q6_levels(wr[r][b], h, q);
                // 32 values k of this half use scale 8h+2k (values 0-15) and 8h+2k+1 (16-31).
                auto sc = [&](int k) { return _mm256_shuffle_epi8(scales16[r][h], pair_pick16(2 * k)); };
                const __m256i p01 = _mm256_add_epi32(scaled_pairs(q[0], x0, sc(0)), scaled_pairs(q[1], x1, sc(1)));
                const __m256i p23 = _mm256_add_epi32(scaled_pairs(q[2], x2, sc(2)), scaled_pairs(q[3], x3, sc(3)));
                sumi[r] = _mm256_add_epi32(sumi[r], _mm256_add_epi32(p01, p23));
            }
        }
        for (int r = 0; r < R; ++r)
            acc[r] = fuse_totals(lane_totals(sumi[r], sumi[r]), xb.d * f16_to_f32(wr[r][b].d), 0.0f, acc[r]);
    }
    for (int r = 0; r < R; ++r) result[r] = _mm_cvtss_f32(acc[r]);
}

// Q6_K token tiles: dot_q6_k's arithmetic per (row, token) pair, a row's levels and
// scales unpacked once per half super-block for all T tokens.
struct Q6KTile {
    template <int R, int T>
    static void run(int64_t n, float* result, size_t result_stride, const uint8_t* w, size_t w_stride,
                    const uint8_t* x, size_t x_stride) {
        static_assert(R == 1);
        const BlockQ6_K* wr = row_as<BlockQ6_K>(w, w_stride, 0);
        const BlockQ8_K* xr[T];
        for (int t = 0; t < T; ++t) xr[t] = row_as<BlockQ8_K>(x, x_stride, t);
        __m128 acc[T];
        for (int t = 0; t < T; ++t) acc[t] = _mm_setzero_ps();
        for (int64_t b = 0; b < n / kQK_K; ++b) {
            prefetch_rows<1>(w, w_stride, static_cast<size_t>(b) * sizeof(BlockQ6_K), sizeof(BlockQ6_K));
            const BlockQ6_K& wb = wr[b];
            const __m256i sc16 = _mm256_cvtepi8_epi16(load16(wb.scales));
            const __m256i scales16[2] = {_mm256_permute2x128_si256(sc16, sc16, 0x00),
                                         _mm256_permute2x128_si256(sc16, sc16, 0x11)};
            __m256i sumi[T];
            for (int t = 0; t < T; ++t) {
                const __m256i bias = _mm256_madd_epi16(load32(xr[t][b].bsums), sc16);
                sumi[t] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(bias, 5));
            }
            for (int h = 0; h < 2; ++h) {
                __m256i q[4];
                q6_levels(wb, h, q);
                const __m256i s0 = _mm256_shuffle_epi8(scales16[h], pair_pick16(0));
                const __m256i s1 = _mm256_shuffle_epi8(scales16[h], pair_pick16(2));
                const __m256i s2 = _mm256_shuffle_epi8(scales16[h], pair_pick16(4));
                const __m256i s3 = _mm256_shuffle_epi8(scales16[h], pair_pick16(6));
                for (int t = 0; t < T; ++t) {
                    const int8_t* xq = xr[t][b].qs + 128 * h;
                    const __m256i p01 =
                        _mm256_add_epi32(scaled_pairs(q[0], load32(xq), s0), scaled_pairs(q[1], load32(xq + 32), s1));
                    const __m256i p23 =
                        _mm256_add_epi32(scaled_pairs(q[2], load32(xq + 64), s2), scaled_pairs(q[3], load32(xq + 96), s3));
                    sumi[t] = _mm256_add_epi32(sumi[t], _mm256_add_epi32(p01, p23));
                }
            }
            for (int t = 0; t < T; ++t)
                acc[t] = fuse_totals(lane_totals(sumi[t], sumi[t]), xr[t][b].d * f16_to_f32(wb.d), 0.0f, acc[t]);
        }
        for (int t = 0; t < T; ++t) result[static_cast<size_t>(t) * result_stride] = _mm_cvtss_f32(acc[t]);
    }
};

}  // namespace

VecDotFn avx2_kquant_kernel(DType weight) {
    if (VecDotFn wide = avx512_kquant_kernel(weight)) return wide;  // the same bits, faster
    switch (weight) {
        case DType::Q4_K: return single_row<dot_affine_k<false, 1>>;
        case DType::Q5_K: return single_row<dot_affine_k<true, 1>>;
        case DType::Q6_K: return single_row<dot_q6_k<1>>;
        default: return nullptr;
    }
}

constexpr int kKTileTokens = kWideRegisters ? 4 : 2;

VecDotTileFn avx2_kquant_tile_kernel(DType weight) {
    switch (weight) {
        case DType::Q4_K: return tiles<AffineKTile<false>, 1, kKTileTokens>;
        case DType::Q5_K: return tiles<AffineKTile<true>, 1, kKTileTokens>;
        case DType::Q6_K: return tiles<Q6KTile, 1, kKTileTokens>;
        default: return nullptr;
    }
}

// With each row prefetching its own bytes, one row at a time beat pairs from DRAM (Q5_K
// 7.2 -> 11-13 GB/s, Q6_K 5.9-6.6 -> 11.5-14.4). Rows in pairs with the pair's span
// prefetched linearly (prefetch_rows; two independent chains) beat single rows: Zen 4,
// bench_kernels vec_dot_rows, one thread: Q4_K 14.6-16.4 -> 17.1-18.5 GB/s, Q5_K
// 15.0-16.8 -> 17.3-18.2, Q6_K 18.4-21.9 -> 20.0-24.9, from L2 and from DRAM; fours were
// slower (Q6_K rows of 4096 from DRAM 13 GB/s).
VecDotRowsFn avx2_kquant_rows_kernel(DType weight) {
    if (VecDotRowsFn wide = avx512_kquant_rows_kernel(weight)) return wide;
    switch (weight) {
        case DType::Q4_K: return row_groups<2, dot_affine_k<false, 2>, dot_affine_k<false, 1>>;
        case DType::Q5_K: return row_groups<2, dot_affine_k<true, 2>, dot_affine_k<true, 1>>;
        case DType::Q6_K: return row_groups<2, dot_q6_k<2>, dot_q6_k<1>>;
        default: return nullptr;
    }
}

}  // namespace inlay::quant::detail

#endif
