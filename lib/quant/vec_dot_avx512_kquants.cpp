// Decode (row) kernels of Q4_K, Q5_K and Q6_K against Q8_K activations with 512-bit
// vectors, for CPUs with AVX-512 (BW, VNNI). The 256-bit kernels (vec_dot_avx2_kquants.cpp)
// spend about eleven vector operations on each 64 weights of a row and bound a decode
// token wherever memory delivers more than ~22 GB/s a core (Zen 5). Here Q4_K / Q5_K take
// six: a chunk's 32 level bytes are broadcast to both halves of a vector, the low half
// keeps the low nibbles (sub-block 2c) and the high half the high ones (2c+1), so the
// activations are multiplied as they lie (64 consecutive quants), and dpwssd folds the
// sub-block scales into the sum. Rows go in pairs that share the scale unpacking, the
// reduction of the totals and the float step. Bits move inside bytes by GFNI's affine
// transform where the CPU has it (avx512_bits.h; Q4_K +4-8%, Q6_K +7% in cache).
//
// The super-block totals are exact integers however they are added, and each row's
// floats get the 256-bit kernels' FMAs in the same order: the results are the same bits
// as dot_affine_k's and dot_q6_k's (and so as every tile's).
//
// Measured on a 2-core Zen 5 (EPYC family 1Ah) under KVM, bench_kernels vec_dot_rows, one
// thread, against the 256-bit kernels: Q4_K 22.5 -> 34-35 GB/s in cache (576 x 1536,
// 4096 x 4096), 21.8 -> 29-31 from DRAM (151936 x 1024); Q5_K the same; Q6_K 32 -> 54-56
// in cache, 30 -> 37-40 from DRAM (one thread's bandwidth there is ~42). Qwen3-0.6B-shape
// Q4_K_M decode with 2 threads, 4 alternations: 101-114 -> 120-140 tokens/s. The first
// version (one row at a time, each row's totals reduced and fused by itself) gave 1.15x:
// the shared per-super-block steps were most of the work.
#include "quant/kernels.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__) && \
    defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <type_traits>

#include "core/half.h"
#include "quant/avx2_blocks.h"
#include "quant/avx2_kquant_levels.h"
#include "quant/avx512_bits.h"
#include "quant/gcc_avx512_warnings.h"

namespace inlay::quant::detail {
namespace {

using namespace avx2;
using namespace avx512;

// A 256-bit value in both halves of a vector.
inline __m512i both_halves(const void* p) { return _mm512_broadcast_i64x4(load32(p)); }

// The shuffle giving every int16 lane of the low half the scale of sub-block 2c and of
// the high half that of 2c+1, from the eight scales in each 128-bit lane.
inline __m512i chunk_scale_pick(int c) { return halves(broadcast16_pick(2 * c), broadcast16_pick(2 * c + 1)); }

// Q5_K's fifth bits of chunk c at bit 4 of each byte (the other bits arbitrary): bit 2c
// of qh[l] for the low half, bit 2c+1 for the high half. Shifting a 16-bit word by s
// moves bit k of each of its bytes to bit k +- s of the same byte as long as the moved
// bit stays inside it, which the counts below (at most 4 up, 3 down) keep.
template <int C>
inline __m512i fifth_bits(__m512i qh) {
    if constexpr (C < 2) {  // bits 0..3 up to 4
        return _mm512_sllv_epi16(qh, halves(_mm256_set1_epi16(4 - 2 * C), _mm256_set1_epi16(3 - 2 * C)));
    } else {  // bits 4..7 down to 4
        return _mm512_srlv_epi16(qh, halves(_mm256_set1_epi16(2 * C - 4), _mm256_set1_epi16(2 * C - 3)));
    }
}

// unpack_k_scales for two rows at once, one per 128-bit lane: `raw` holds each row's 12
// packed bytes (and 4 bytes that are not read) in its lane.
inline __m256i unpack_k_scales_pair(__m256i raw) {
    const __m256i low6 = _mm256_and_si256(raw, _mm256_set1_epi32(0x3f3f3f3f));
    const __m256i top2 = _mm256_and_si256(_mm256_srli_epi32(raw, 2), _mm256_set1_epi32(0x30303030));
    const __m256i c = _mm256_shuffle_epi32(raw, _MM_SHUFFLE(2, 2, 2, 2));
    const __m256i nib =
        _mm256_and_si256(_mm256_srlv_epi32(c, _mm256_setr_epi32(0, 0, 4, 4, 0, 0, 4, 4)), _mm256_set1_epi32(0x0f0f0f0f));
    const __m256i lo = _mm256_shuffle_epi32(low6, _MM_SHUFFLE(1, 1, 0, 0));
    const __m256i hi = _mm256_or_si256(_mm256_shuffle_epi32(top2, _MM_SHUFFLE(1, 1, 0, 0)), nib);
    return _mm256_blend_epi32(lo, hi, 0b10101010);
}

// [S0, M0, S1, M1]: the sums of the int32 lanes of s0 and s1 (the two rows' sub-block
// products) and of m's two 128-bit lanes (their mins' products), by integer additions in
// any order (exact).
inline __m128i pair_totals(__m512i s0, __m512i s1, __m256i m) {
    // 128-bit lanes [row 0, row 0, row 1, row 1] of eight-lane halves added.
    const __m512i t = _mm512_add_epi32(_mm512_shuffle_i64x2(s0, s1, 0x44), _mm512_shuffle_i64x2(s0, s1, 0xEE));
    // Row 0's mins in lane 0, row 1's in lane 2, zeros elsewhere.
    const __m512i mz = _mm512_maskz_permutexvar_epi32(
        0x0f0f, _mm512_setr_epi32(0, 1, 2, 3, 0, 0, 0, 0, 4, 5, 6, 7, 0, 0, 0, 0), _mm512_castsi256_si512(m));
    // Per 128-bit lane: [t0 + t2, m0 + m2, t1 + t3, m1 + m3], then [t, m, t, m] totals.
    const __m512i u = _mm512_add_epi32(_mm512_unpacklo_epi32(t, mz), _mm512_unpackhi_epi32(t, mz));
    const __m512i v = _mm512_add_epi32(u, _mm512_shuffle_epi32(u, _MM_PERM_BADC));
    // Lanes 0 and 2 of the pairs of 128-bit lanes added: row 0's (S, M) at dwords 0-1, row 1's at 8-9.
    const __m512i wsum = _mm512_add_epi32(v, _mm512_shuffle_i32x4(v, v, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm512_castsi512_si128(
        _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 1, 8, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), wsum));
}

// Rows 0 and 1 (One: row 0 alone, computed as both rows of the pair) of Q4_K (Q5 =
// false) or Q5_K against x. Each row's arithmetic is dot_affine_k's: the same exact
// totals, lane 0 and 1 of a row's floats updated by fuse_totals' FMAs, acc - acc_min.
template <bool Q5, bool One>
void dot_affine_k512(int64_t n, float* result, const uint8_t* w, size_t stride, const void* x_row) {
    using Block = std::conditional_t<Q5, BlockQ5_K, BlockQ4_K>;
    constexpr int R = One ? 1 : 2;
    const auto* x = static_cast<const BlockQ8_K*>(x_row);
    const Block* wr[2] = {row_as<Block>(w, stride, 0), row_as<Block>(w, stride, R - 1)};
    __m128 acc = _mm_setzero_ps();  // [acc, acc_min] of row 0, then of row 1
    const __m512i bit4 = _mm512_set1_epi8(16);
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        const BlockQ8_K& xb = x[b];
        prefetch_rows<R>(w, stride, static_cast<size_t>(b) * sizeof(Block), sizeof(Block));
        __m512i xq[4];
        for (int c = 0; c < 4; ++c) xq[c] = _mm512_loadu_si512(xb.qs + 64 * c);
        // The activations' 32-value sub-block sums as int16 (at most 32 * 128), in both lanes.
        const __m256i sub_sums32 = _mm256_madd_epi16(load32(xb.bsums), _mm256_set1_epi16(1));
        const __m128i sub_sums =
            _mm_packs_epi32(_mm256_castsi256_si128(sub_sums32), _mm256_extracti128_si256(sub_sums32, 1));
        // Both rows' scales and mins: [sc0..sc7, m0..m7] bytes per 128-bit lane. The
        // 16-byte loads read 4 bytes of levels past the packed scales, unused.
        const __m256i sm = unpack_k_scales_pair(
            _mm256_inserti128_si256(_mm256_castsi128_si256(load16(wr[0][b].scales)), load16(wr[1][b].scales), 1));
        const __m256i sc16 = _mm256_unpacklo_epi8(sm, _mm256_setzero_si256());
        const __m256i mins = _mm256_madd_epi16(_mm256_unpackhi_epi8(sm, _mm256_setzero_si256()),
                                               _mm256_broadcastsi128_si256(sub_sums));
        __m512i sumi[2][2];  // [row][chain]
        for (int r = 0; r < 2; ++r) {
            const Block& wb = wr[r][b];
            // sc0..sc7 as int16 in each 128-bit lane.
            const __m512i scales16 = _mm512_broadcast_i32x4(r == 0 ? _mm256_castsi256_si128(sc16)
                                                                   : _mm256_extracti128_si256(sc16, 1));
            __m512i qh = _mm512_setzero_si512();
            if constexpr (Q5) qh = both_halves(wb.qh);
            sumi[r][0] = sumi[r][1] = _mm512_setzero_si512();
            auto chunk = [&]<int C>() {
                __m512i levels = nibbles_by_half(both_halves(wb.qs + 32 * C));
                if constexpr (Q5) levels = _mm512_ternarylogic_epi32(levels, fifth_bits<C>(qh), bit4, 0xF8);  // a | (b & c)
                const __m512i pairs = _mm512_maddubs_epi16(levels, xq[C]);
                sumi[r][C & 1] =
                    _mm512_dpwssd_epi32(sumi[r][C & 1], pairs, _mm512_shuffle_epi8(scales16, chunk_scale_pick(C)));
            };
            if (One && r == 1) {
                sumi[1][0] = sumi[0][0];
                sumi[1][1] = sumi[0][1];
                continue;
            }
            chunk.template operator()<0>();
            chunk.template operator()<1>();
            chunk.template operator()<2>();
            chunk.template operator()<3>();
        }
        const __m128i totals = pair_totals(_mm512_add_epi32(sumi[0][0], sumi[0][1]),
                                           _mm512_add_epi32(sumi[1][0], sumi[1][1]), mins);
        // [d, dmin] of each row, times d_x: fuse_totals' scales.
        const __m128 d = _mm_cvtph_ps(_mm_setr_epi32(static_cast<int32_t>(load_u32(&wr[0][b].d)),
                                                     static_cast<int32_t>(load_u32(&wr[1][b].d)), 0, 0));
        acc = _mm_fmadd_ps(_mm_cvtepi32_ps(totals), _mm_mul_ps(_mm_set1_ps(xb.d), d), acc);
    }
    alignas(16) float lanes[4];
    _mm_store_ps(lanes, acc);
    result[0] = lanes[0] - lanes[1];
    if constexpr (!One) result[1] = lanes[2] - lanes[3];
}

// Rows 0 and 1 (One: row 0 alone) of Q6_K against x, with dot_q6_k's arithmetic per
// row: the exact total sum_s scale_s * (q - 32) . x over the super-block, then one FMA
// by d_x * d_w. A vector holds 64 levels of a half super-block (four sub-blocks of 16:
// one per 128-bit lane, so each lane's int16 pairs take its sub-block's scale), the low
// four bits from ql and the top two from the broadcast qh; the -32 offset is taken out
// once through the activations' sub-block sums.
template <bool One>
void dot_q6_k512(int64_t n, float* result, const uint8_t* w, size_t stride, const void* x_row) {
    constexpr int R = One ? 1 : 2;
    const auto* x = static_cast<const BlockQ8_K*>(x_row);
    const BlockQ6_K* wr[2] = {row_as<BlockQ6_K>(w, stride, 0), row_as<BlockQ6_K>(w, stride, R - 1)};
    __m128 acc = _mm_setzero_ps();  // row 0 in lane 0, row 1 in lane 2
    const __m512i low4 = _mm512_set1_epi8(15);
    // Scale of vector v (sub-blocks 4v..4v+3) in every int16 lane of 128-bit lane k: 4v + k.
    auto scale_pick = [](int v) {
        return _mm512_add_epi16(_mm512_set1_epi16(static_cast<int16_t>(4 * v)),
                                halves(_mm256_setr_m128i(_mm_setzero_si128(), _mm_set1_epi16(1)),
                                       _mm256_setr_m128i(_mm_set1_epi16(2), _mm_set1_epi16(3))));
    };
    for (int64_t b = 0; b < n / kQK_K; ++b) {
        const BlockQ8_K& xb = x[b];
        prefetch_rows<R>(w, stride, static_cast<size_t>(b) * sizeof(BlockQ6_K), sizeof(BlockQ6_K));
        const __m256i bsums = load32(xb.bsums);
        __m512i xq[4];
        for (int c = 0; c < 4; ++c) xq[c] = _mm512_loadu_si512(xb.qs + 64 * c);
        __m512i sumi[2][2];  // [row][chain]
        for (int r = 0; r < 2; ++r) {
            if (One && r == 1) {
                sumi[1][0] = sumi[0][0];
                sumi[1][1] = sumi[0][1];
                continue;
            }
            const BlockQ6_K& wb = wr[r][b];
            const __m256i sc16 = _mm256_cvtepi8_epi16(load16(wb.scales));
            const __m512i sc = _mm512_castsi256_si512(sc16);
            // Levels are stored with +32: start from -32 * sum_s scale_s * bsum_s.
            const __m256i bias = _mm256_slli_epi32(_mm256_madd_epi16(bsums, sc16), 5);
            sumi[r][0] = _mm512_zextsi256_si512(_mm256_sub_epi32(_mm256_setzero_si256(), bias));
            sumi[r][1] = _mm512_setzero_si512();
            for (int h = 0; h < 2; ++h) {
                const __m512i ql = _mm512_loadu_si512(wb.ql + 64 * h);
                const __m512i qh = both_halves(wb.qh + 32 * h);
#if defined(__GFNI__)
                const __m512i top_lo = move_bits<ByteBits{{-1, -1, -1, -1, 0, 1, -1, -1}}, ByteBits{{-1, -1, -1, -1, 2, 3, -1, -1}}>(qh);
                const __m512i top_hi = move_bits<ByteBits{{-1, -1, -1, -1, 4, 5, -1, -1}}, ByteBits{{-1, -1, -1, -1, 6, 7, -1, -1}}>(qh);
#else
                // Top bits of values 0..31 (qh bits 0-1) and 32..63 (bits 2-3) moved to bits
                // 4-5, of values 64..95 (bits 4-5) and 96..127 (bits 6-7).
                const __m512i bits45 = _mm512_set1_epi8(0x30);
                const __m512i top_lo = _mm512_and_si512(
                    _mm512_sllv_epi16(qh, halves(_mm256_set1_epi16(4), _mm256_set1_epi16(2))), bits45);
                const __m512i top_hi = _mm512_and_si512(
                    _mm512_srlv_epi16(qh, halves(_mm256_setzero_si256(), _mm256_set1_epi16(2))), bits45);
#endif
                const __m512i ql_hi = _mm512_srli_epi16(ql, 4);
                const __m512i lo = _mm512_ternarylogic_epi32(ql, top_lo, low4, 0xEC);  // (a & c) | b
                const __m512i hi = _mm512_ternarylogic_epi32(ql_hi, top_hi, low4, 0xEC);
                const __m512i p_lo = _mm512_maddubs_epi16(lo, xq[2 * h]);
                const __m512i p_hi = _mm512_maddubs_epi16(hi, xq[2 * h + 1]);
                sumi[r][0] = _mm512_dpwssd_epi32(sumi[r][0], p_lo, _mm512_permutexvar_epi16(scale_pick(2 * h), sc));
                sumi[r][1] = _mm512_dpwssd_epi32(sumi[r][1], p_hi, _mm512_permutexvar_epi16(scale_pick(2 * h + 1), sc));
            }
        }
        const __m128i totals = pair_totals(_mm512_add_epi32(sumi[0][0], sumi[0][1]),
                                           _mm512_add_epi32(sumi[1][0], sumi[1][1]), _mm256_setzero_si256());
        // Halves [d of row 0, 0, d of row 1, 0].
        const __m128 d = _mm_cvtph_ps(_mm_setr_epi32(wr[0][b].d, wr[1][b].d, 0, 0));
        acc = _mm_fmadd_ps(_mm_cvtepi32_ps(totals), _mm_mul_ps(_mm_set1_ps(xb.d), d), acc);
    }
    alignas(16) float lanes[4];
    _mm_store_ps(lanes, acc);
    result[0] = lanes[0];
    if constexpr (!One) result[1] = lanes[2];
}

}  // namespace

VecDotFn avx512_kquant_kernel(DType weight) {
    switch (weight) {
        case DType::Q4_K: return single_row<dot_affine_k512<false, true>>;
        case DType::Q5_K: return single_row<dot_affine_k512<true, true>>;
        case DType::Q6_K: return single_row<dot_q6_k512<true>>;
        default: return nullptr;
    }
}

VecDotRowsFn avx512_kquant_rows_kernel(DType weight) {
    switch (weight) {
        case DType::Q4_K: return row_groups<2, dot_affine_k512<false, false>, dot_affine_k512<false, true>>;
        case DType::Q5_K: return row_groups<2, dot_affine_k512<true, false>, dot_affine_k512<true, true>>;
        case DType::Q6_K: return row_groups<2, dot_q6_k512<false>, dot_q6_k512<true>>;
        default: return nullptr;
    }
}

}  // namespace inlay::quant::detail

#else  // without AVX-512 VNNI the 256-bit kernels serve

namespace inlay::quant::detail {
VecDotFn avx512_kquant_kernel(DType) { return nullptr; }
VecDotRowsFn avx512_kquant_rows_kernel(DType) { return nullptr; }
}  // namespace inlay::quant::detail

#endif
