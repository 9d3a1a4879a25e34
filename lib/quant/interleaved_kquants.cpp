// The interleaved layout of Q4_K, Q5_K and Q6_K (interleaved_rows.h, interleaved_records.h):
// the repacking, the stored rows rebuilt from the records, and the decode kernel.
//
// Per super-block of sixteen rows the record's lanes give each row's sub-block dots
// directly: eight dpbusd per 32-element sub-block (four per Q6_K sub-block of 16), times
// the rows' scales (vpmulld), summed into the super-block's exact integer totals, which
// the stored rows' kernels reduce from lane sums instead (vec_dot_avx512_kquants.cpp: about
// half their operations). Each (row, token)'s floats are updated as those kernels update
// them, in block order, so the results are the stored rows' bits:
//   Q4_K / Q5_K: acc += float(sumi) * (d_x * d), acc_min += float(summ) * (d_x * dmin),
//                result acc - acc_min; summ = sum_j min_j * (the token's sum over sub-block j)
//   Q6_K:        acc += float(sumi) * (d_x * d), each sub-block's dot started at -32 * its
//                activations' sum (the levels are stored +32)
#include "quant/interleaved_rows.h"

#include <cstring>
#include <type_traits>

#include "quant/blocks.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__) && \
    defined(__AVX512DQ__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define INLAY_INTERLEAVED_KQUANTS 1
#include <immintrin.h>

#include "quant/avx2_blocks.h"
#include "quant/avx2_kquant_levels.h"
#include "quant/gcc_avx512_warnings.h"
#else
#define INLAY_INTERLEAVED_KQUANTS 0
#endif
#include "quant/interleaved_records.h"

namespace inlay::quant::detail {
namespace {

using namespace interleaved;

#if INLAY_INTERLEAVED_KQUANTS

using avx2::row_as;

// `bytes` (32 per row, at `offset` of each row's block b) of rows 0..15 as 32-bit lanes:
// quads k = 0..7 to out + 64k (rows 0..7 in the low half, 8..15 in the high half).
template <class Block>
void transpose_quads(const uint8_t* w, size_t w_stride, int64_t b, size_t offset, uint8_t* out) {
    for (int h = 0; h < 2; ++h) {
        __m256i rows[8], quads[8];
        for (int j = 0; j < 8; ++j)
            rows[j] = simd::load32(reinterpret_cast<const uint8_t*>(row_as<Block>(w, w_stride, 8 * h + j) + b) + offset);
        simd::transpose8x32(rows, quads);
        for (int k = 0; k < 8; ++k) _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 64 * k + 32 * h), quads[k]);
    }
}

template <DType W>
void interleave_group(const uint8_t* w, size_t w_stride, int64_t n_blocks, uint8_t* out) {
    constexpr size_t kRecord = record_bytes(W);
    for (int64_t b = 0; b < n_blocks; ++b) {
        uint8_t* rec = out + static_cast<size_t>(b) * kRecord;
        if constexpr (W == DType::Q6_K) {
            for (int r = 0; r < kRows; ++r) {
                const BlockQ6_K& blk = row_as<BlockQ6_K>(w, w_stride, r)[b];
                std::memcpy(rec + 2 * r, &blk.d, 2);
                for (int s = 0; s < 16; ++s) rec[kQ6Scales + 16 * s + r] = static_cast<uint8_t>(blk.scales[s]);
            }
            for (int q = 0; q < 4; ++q)  // ql: 128 bytes, four runs of 32
                transpose_quads<BlockQ6_K>(w, w_stride, b, offsetof(BlockQ6_K, ql) + 32 * q, rec + kQ6Low + 512 * q);
            for (int q = 0; q < 2; ++q)
                transpose_quads<BlockQ6_K>(w, w_stride, b, offsetof(BlockQ6_K, qh) + 32 * q, rec + kQ6High + 512 * q);
        } else {
            using Block = std::conditional_t<W == DType::Q5_K, BlockQ5_K, BlockQ4_K>;
            for (int r = 0; r < kRows; ++r) {
                const Block& blk = row_as<Block>(w, w_stride, r)[b];
                std::memcpy(rec + 2 * r, &blk.d, 2);
                std::memcpy(rec + kAffineDmin + 2 * r, &blk.dmin, 2);
                for (int j = 0; j < kKScaleBytes; ++j) rec[kAffineScales + 16 * j + r] = blk.scales[j];
            }
            for (int c = 0; c < 4; ++c)
                transpose_quads<Block>(w, w_stride, b, offsetof(Block, qs) + 32 * c, rec + kAffineQuads + 512 * c);
            if constexpr (W == DType::Q5_K) transpose_quads<Block>(w, w_stride, b, offsetof(Block, qh), rec + kAffineHigh);
        }
    }
}

// Bytes of records asked for ahead (rounded up to whole records). Zen 5, bench_kernels
// 151936 x 1024 from DRAM, one token, two processes at once (the host's ~50 GB/s shared):
// none 18-20 GB/s each, 2 KiB 22.5-23, 4 KiB 23.7-25, 8 KiB 25.3-26.3, 12 KiB 23.7-25,
// 20 KiB 23-25.6, 64 KiB 21-24; the stored rows' kernels 23.5-25.
constexpr size_t kAheadBytes = 8 << 10;

template <size_t Record>
inline void prefetch_ahead(const uint8_t* rec, const uint8_t* end) {
    prefetch_record<Record, (kAheadBytes + Record - 1) / Record * Record>(rec, end);
}

// One group of sixteen Q4_K / Q5_K rows against T tokens (x[t]: a token's super-blocks).
template <bool Q5, int T>
void affine_group(const uint8_t* group, int64_t n_blocks, const uint8_t* end, const BlockQ8_K* const* x,
                  float* const* result) {
    constexpr size_t kRecord = record_bytes(Q5 ? DType::Q5_K : DType::Q4_K);
    __m512 acc[T], acc_min[T];
    for (int t = 0; t < T; ++t) acc[t] = acc_min[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < n_blocks; ++b) {
        const uint8_t* rec = group + static_cast<size_t>(b) * kRecord;
        prefetch_ahead<kRecord>(rec, end);
        __m512i sc[2], m[2];
        affine_scales(rec, sc, m);
        __m512i sumi[T];
        for (int t = 0; t < T; ++t) sumi[t] = _mm512_setzero_si512();
        auto chunk = [&]<int C>() {
            __m512i lo[8], hi[8];
            affine_levels<Q5, C>(rec, lo, hi);
            const __m512i scale_lo = byte_lanes<(2 * C) % 4>(sc[C / 2]), scale_hi = byte_lanes<(2 * C + 1) % 4>(sc[C / 2]);
            for (int t = 0; t < T; ++t) {
                const int8_t* q = x[t][b].qs + 64 * C;
                __m512i dot_lo = _mm512_setzero_si512(), dot_hi = _mm512_setzero_si512();
                for (int k = 0; k < 8; ++k) {
                    dot_lo = _mm512_dpbusd_epi32(dot_lo, lo[k], broadcast_quad(q + 4 * k));
                    dot_hi = _mm512_dpbusd_epi32(dot_hi, hi[k], broadcast_quad(q + 32 + 4 * k));
                }
                sumi[t] = _mm512_add_epi32(sumi[t], _mm512_add_epi32(_mm512_mullo_epi32(dot_lo, scale_lo),
                                                                     _mm512_mullo_epi32(dot_hi, scale_hi)));
            }
        };
        chunk.template operator()<0>();
        chunk.template operator()<1>();
        chunk.template operator()<2>();
        chunk.template operator()<3>();
        __m512i min_pairs[4];
        affine_min_pairs(m, min_pairs);
        const __m512 dw = record_scales(rec), dmin = record_scales(rec + kAffineDmin);
        for (int t = 0; t < T; ++t) {
            int32_t words[4];
            avx2::sub_block_sum_pairs(x[t][b].bsums, words);
            __m512i summ = _mm512_setzero_si512();
            for (int p = 0; p < 4; ++p) summ = _mm512_dpwssd_epi32(summ, min_pairs[p], _mm512_set1_epi32(words[p]));
            const __m512 dx = _mm512_set1_ps(x[t][b].d);
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi[t]), _mm512_mul_ps(dx, dw), acc[t]);
            acc_min[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(summ), _mm512_mul_ps(dx, dmin), acc_min[t]);
        }
    }
    for (int t = 0; t < T; ++t) _mm512_storeu_ps(result[t], _mm512_sub_ps(acc[t], acc_min[t]));
}

// One group of sixteen Q6_K rows against T tokens.
template <int T>
void q6_group(const uint8_t* group, int64_t n_blocks, const uint8_t* end, const BlockQ8_K* const* x, float* const* result) {
    constexpr size_t kRecord = record_bytes(DType::Q6_K);
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < n_blocks; ++b) {
        const uint8_t* rec = group + static_cast<size_t>(b) * kRecord;
        prefetch_ahead<kRecord>(rec, end);
        __m512i sumi[T];
        for (int t = 0; t < T; ++t) sumi[t] = _mm512_setzero_si512();
        // Sub-blocks 8H + Q (low nibbles of ql quads 4Q..4Q + 3) and 8H + 4 + Q (high nibbles).
        auto quarter = [&]<int H, int Q>() {
            __m512i lo[4], hi[4];
            q6_levels<H, 4 * Q>(rec, lo[0], hi[0]);
            q6_levels<H, 4 * Q + 1>(rec, lo[1], hi[1]);
            q6_levels<H, 4 * Q + 2>(rec, lo[2], hi[2]);
            q6_levels<H, 4 * Q + 3>(rec, lo[3], hi[3]);
            const __m512i scale_lo = q6_scale_lanes(rec, 8 * H + Q), scale_hi = q6_scale_lanes(rec, 8 * H + 4 + Q);
            for (int t = 0; t < T; ++t) {
                const BlockQ8_K& xb = x[t][b];
                const int8_t* q = xb.qs + 128 * H + 16 * Q;
                __m512i dot_lo = _mm512_set1_epi32(-32 * xb.bsums[8 * H + Q]);
                __m512i dot_hi = _mm512_set1_epi32(-32 * xb.bsums[8 * H + 4 + Q]);
                for (int k = 0; k < 4; ++k) {
                    dot_lo = _mm512_dpbusd_epi32(dot_lo, lo[k], broadcast_quad(q + 4 * k));
                    dot_hi = _mm512_dpbusd_epi32(dot_hi, hi[k], broadcast_quad(q + 64 + 4 * k));
                }
                sumi[t] = _mm512_add_epi32(sumi[t], _mm512_add_epi32(_mm512_mullo_epi32(dot_lo, scale_lo),
                                                                     _mm512_mullo_epi32(dot_hi, scale_hi)));
            }
        };
        quarter.template operator()<0, 0>();
        quarter.template operator()<0, 1>();
        quarter.template operator()<0, 2>();
        quarter.template operator()<0, 3>();
        quarter.template operator()<1, 0>();
        quarter.template operator()<1, 1>();
        quarter.template operator()<1, 2>();
        quarter.template operator()<1, 3>();
        const __m512 dw = record_scales(rec);
        for (int t = 0; t < T; ++t)
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi[t]), _mm512_mul_ps(_mm512_set1_ps(x[t][b].d), dw), acc[t]);
    }
    for (int t = 0; t < T; ++t) _mm512_storeu_ps(result[t], acc[t]);
}

template <DType W, int T>
void group_tail(int tokens, const uint8_t* group, int64_t n_blocks, const uint8_t* end, const BlockQ8_K* const* x,
                float* const* result) {
    if constexpr (T > 0) {
        if (tokens != T) return group_tail<W, T - 1>(tokens, group, n_blocks, end, x, result);
        if constexpr (W == DType::Q6_K) q6_group<T>(group, n_blocks, end, x, result);
        else affine_group<W == DType::Q5_K, T>(group, n_blocks, end, x, result);
    }
}

template <DType W>
void run_groups(int64_t n, int64_t n_rows, int64_t n_tokens, float* result, size_t result_stride, const uint8_t* w16,
                const uint8_t* x, size_t x_stride) {
    const int64_t n_blocks = n / kQK_K;
    walk_groups(w16, n_rows, static_cast<size_t>(n_blocks) * record_bytes(W), n_tokens, result, result_stride,
                [&](const uint8_t* group, const uint8_t* end, int64_t t0, int tokens, float* const* out) {
                    const BlockQ8_K* xr[kPassTokens];
                    for (int t = 0; t < tokens; ++t)
                        xr[t] = reinterpret_cast<const BlockQ8_K*>(x + static_cast<size_t>(t0 + t) * x_stride);
                    group_tail<W, kPassTokens>(tokens, group, n_blocks, end, xr, out);
                });
}

#endif

}  // namespace

void interleave_kquant_group(DType weight, const uint8_t* w, size_t w_stride, int64_t n_blocks, uint8_t* out) {
#if INLAY_INTERLEAVED_KQUANTS
    if (weight == DType::Q4_K) interleave_group<DType::Q4_K>(w, w_stride, n_blocks, out);
    else if (weight == DType::Q5_K) interleave_group<DType::Q5_K>(w, w_stride, n_blocks, out);
    else interleave_group<DType::Q6_K>(w, w_stride, n_blocks, out);
#else
    (void)weight, (void)w, (void)w_stride, (void)n_blocks, (void)out;
#endif
}

namespace {

// Lane `lane`'s 4-byte quads of a record part of `count` quads, in stored order.
void lane_quads(const uint8_t* part, int count, int lane, uint8_t* dst) {
    for (int k = 0; k < count; ++k) std::memcpy(dst + 4 * k, part + (k * kRows + lane) * 4, 4);
}

template <class Block>
void stored_row(int64_t n_blocks, const uint8_t* group, int lane, uint8_t* out) {
    constexpr size_t kRecord = kRows * sizeof(Block);
    for (int64_t b = 0; b < n_blocks; ++b) {
        const uint8_t* rec = group + static_cast<size_t>(b) * kRecord;
        Block blk;
        std::memcpy(&blk.d, rec + 2 * lane, 2);
        if constexpr (std::is_same_v<Block, BlockQ6_K>) {
            for (int s = 0; s < 16; ++s) blk.scales[s] = static_cast<int8_t>(rec[kQ6Scales + 16 * s + lane]);
            lane_quads(rec + kQ6Low, 32, lane, blk.ql);
            lane_quads(rec + kQ6High, 16, lane, blk.qh);
        } else {
            std::memcpy(&blk.dmin, rec + kAffineDmin + 2 * lane, 2);
            for (int j = 0; j < kKScaleBytes; ++j) blk.scales[j] = rec[kAffineScales + 16 * j + lane];
            lane_quads(rec + kAffineQuads, 32, lane, blk.qs);
            if constexpr (std::is_same_v<Block, BlockQ5_K>) lane_quads(rec + kAffineHigh, 8, lane, blk.qh);
        }
        std::memcpy(out + static_cast<size_t>(b) * sizeof blk, &blk, sizeof blk);
    }
}

}  // namespace

void kquant_stored_row(DType weight, int64_t n_blocks, const uint8_t* group, int lane, uint8_t* out) {
    if (weight == DType::Q4_K) stored_row<BlockQ4_K>(n_blocks, group, lane, out);
    else if (weight == DType::Q5_K) stored_row<BlockQ5_K>(n_blocks, group, lane, out);
    else stored_row<BlockQ6_K>(n_blocks, group, lane, out);
}

void kquant_interleaved_tiles(DType weight, int64_t n, int64_t n_rows, int64_t n_tokens, float* result,
                              size_t result_stride, const void* w16, const void* x, size_t x_stride) {
#if INLAY_INTERLEAVED_KQUANTS
    const auto* wb = static_cast<const uint8_t*>(w16);
    const auto* xb = static_cast<const uint8_t*>(x);
    if (weight == DType::Q4_K) run_groups<DType::Q4_K>(n, n_rows, n_tokens, result, result_stride, wb, xb, x_stride);
    else if (weight == DType::Q5_K) run_groups<DType::Q5_K>(n, n_rows, n_tokens, result, result_stride, wb, xb, x_stride);
    else run_groups<DType::Q6_K>(n, n_rows, n_tokens, result, result_stride, wb, xb, x_stride);
#else
    (void)weight, (void)n, (void)n_rows, (void)n_tokens, (void)result, (void)result_stride, (void)w16, (void)x,
        (void)x_stride;
#endif
}

}  // namespace inlay::quant::detail
