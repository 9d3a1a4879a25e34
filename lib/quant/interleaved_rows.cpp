// The interleaved layout (interleaved_rows.h): the Q8_0 / Q4_0 / Q5_0 / Q1_0 repacking and kernels
// (AVX-512 VNNI builds), the stored rows rebuilt from the records, and the entry points
// that hand the K-quants to interleaved_kquants.cpp.
#include "quant/interleaved_rows.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "quant/blocks.h"
#include "quant/kernels.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__) && \
    defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define INLAY_INTERLEAVED_ROWS 1
#include <immintrin.h>

#include "quant/gcc_avx512_warnings.h"
#include "quant/simd_avx2.h"
#else
#define INLAY_INTERLEAVED_ROWS 0
#endif
#include "quant/interleaved_records.h"

namespace inlay::quant {
namespace {

using namespace detail::interleaved;

bool interleavable(DType weight) {
    return weight == DType::Q8_0 || weight == DType::Q4_0 || weight == DType::Q5_0 || weight == DType::Q1_0 ||
           is_kquant(weight);
}

// The K-quants' kernels also take AVX512DQ (every CPU with VNNI has it).
#if defined(__AVX512DQ__)
constexpr bool kKquantsBuilt = true;
#else
constexpr bool kKquantsBuilt = false;
#endif

#if INLAY_INTERLEAVED_ROWS

template <DType W, class Block>
void interleave_group(const uint8_t* w, size_t w_stride, int64_t n_blocks, uint8_t* out) {
    constexpr size_t kRecord = record_bytes(W);
    for (int64_t b = 0; b < n_blocks; ++b) {
        uint8_t* rec = out + static_cast<size_t>(b) * kRecord;
        auto block = [&](int r) -> const Block& { return reinterpret_cast<const Block*>(w + static_cast<size_t>(r) * w_stride)[b]; };
        for (int r = 0; r < kRows; ++r) std::memcpy(rec + r * sizeof(uint16_t), &block(r).d, sizeof(uint16_t));
        if constexpr (W == DType::Q8_0) {
            // Eight rows' 32 values at a time, transposed in 32-bit lanes: quads[k] of rows
            // 8h..8h+7, + 128 by flipping the sign bits. (One 4-byte store per row and k
            // made the repacking most of a Q8_0 model's load time.)
            for (int h = 0; h < 2; ++h) {
                __m256i rows[8], quads[8];
                for (int j = 0; j < 8; ++j) rows[j] = simd::load32(block(8 * h + j).qs);
                simd::transpose8x32(rows, quads);
                for (int k = 0; k < 8; ++k)
                    _mm256_storeu_si256(reinterpret_cast<__m256i*>(rec + kScaleBytes + 64 * k + 32 * h),
                                        _mm256_xor_si256(quads[k], _mm256_set1_epi8(-128)));
            }
        } else {
            for (int r = 0; r < kRows; ++r)
                for (int k = 0; k < 4; ++k) std::memcpy(rec + kScaleBytes + (k * kRows + r) * 4, block(r).qs + 4 * k, 4);
        }
        if constexpr (W == DType::Q5_0) {
            uint64_t high[8] = {};
            for (int r = 0; r < kRows; ++r) {
                const uint32_t qh = simd::load_u32(block(r).qh);
                for (int k = 0; k < 8; ++k) high[k] |= uint64_t{(qh >> high_first(k)) & 0xFu} << (4 * r);
            }
            std::memcpy(rec + kScaleBytes + quad_bytes(W), high, sizeof high);
        }
    }
}

// Q1_0: each record's masks[k] gathers nibble k of the sixteen rows' sign bits (elements
// 4k..4k+3), row r's at bits 4r..4r+3. By vectors (a nibble at a time made the repacking
// a third of the load): each row's 32 nibbles widened to bytes, rows 2i and 2i+1 paired in
// each byte (pairs[i]), then the 8 x 32 byte matrix transposed, so that mask k is byte k
// of the eight pairs.
void interleave_q1_group(const uint8_t* w, size_t w_stride, int64_t n_blocks, uint8_t* out) {
    constexpr size_t kRecord = record_bytes(DType::Q1_0);
    const __m128i low4 = _mm_set1_epi8(15);
    // Within each 128-bit lane: byte m of dwords 0..3 to dword m.
    const __m256i gather = _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15,  //
                                            0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    for (int64_t b = 0; b < n_blocks; ++b) {
        uint8_t* rec = out + static_cast<size_t>(b) * kRecord;
        __m256i nibbles[kRows];  // byte e: row r's nibble e
        for (int r = 0; r < kRows; ++r) {
            const BlockQ1_0& block = reinterpret_cast<const BlockQ1_0*>(w + static_cast<size_t>(r) * w_stride)[b];
            std::memcpy(rec + r * sizeof(uint16_t), &block.d, sizeof(uint16_t));
            const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block.qs));
            const __m128i lo = _mm_and_si128(v, low4), hi = _mm_and_si128(_mm_srli_epi16(v, 4), low4);
            nibbles[r] = _mm256_set_m128i(_mm_unpackhi_epi8(lo, hi), _mm_unpacklo_epi8(lo, hi));
        }
        __m256i pairs[8], columns[8];  // pairs[i] byte e: row 2i's nibble e | row 2i+1's << 4
        for (int i = 0; i < 8; ++i)
            pairs[i] = _mm256_or_si256(nibbles[2 * i], _mm256_slli_epi16(nibbles[2 * i + 1], 4));
        simd::transpose8x32(pairs, columns);  // columns[k] dword i: bytes 4k..4k+3 of pairs[i]
        for (int k = 0; k < 8; ++k) {
            const __m256i g = _mm256_shuffle_epi8(columns[k], gather);  // lane h dword m: byte 4k+m of pairs 4h..4h+3
            const __m128i l0 = _mm256_castsi256_si128(g), l1 = _mm256_extracti128_si256(g, 1);
            uint8_t* masks = rec + kScaleBytes + sizeof(uint64_t) * static_cast<size_t>(4 * k);
            _mm_storeu_si128(reinterpret_cast<__m128i*>(masks), _mm_unpacklo_epi32(l0, l1));       // masks 4k, 4k+1
            _mm_storeu_si128(reinterpret_cast<__m128i*>(masks + 16), _mm_unpackhi_epi32(l0, l1));  // 4k+2, 4k+3
        }
    }
}

// -kOffset * sum(x) of every block of `n_tokens` activation rows, the dpbusd start that
// turns sums of level * x into sums of (level - kOffset) * x.
void offset_starts(int offset, int64_t n_blocks, int64_t n_tokens, const uint8_t* x, size_t x_stride,
                   std::vector<int32_t>& out) {
    out.resize(static_cast<size_t>(n_blocks * n_tokens));
    const __m256i ones = _mm256_set1_epi8(1);
    for (int64_t t = 0; t < n_tokens; ++t) {
        const auto* xb = reinterpret_cast<const BlockQ8_0*>(x + static_cast<size_t>(t) * x_stride);
        for (int64_t b = 0; b < n_blocks; ++b)
            out[static_cast<size_t>(t * n_blocks + b)] = -offset * simd::hsum(simd::dot_u8_i8(ones, simd::load32(xb[b].qs)));
    }
}

// The sixteen rows' exact dots of one block of 32 with one token's activations xq, from
// the block's offset start: two chains of four dpbusd (exact integers: any order), so that
// one token's block is not one chain of eight latencies.
inline __m512i block_dots(const __m512i (&levels)[8], const int8_t* xq, int32_t start) {
    __m512i lo = _mm512_set1_epi32(start), hi = _mm512_setzero_si512();
    for (int k = 0; k < 4; ++k) {
        lo = _mm512_dpbusd_epi32(lo, levels[k], broadcast_quad(xq + 4 * k));
        hi = _mm512_dpbusd_epi32(hi, levels[k + 4], broadcast_quad(xq + 16 + 4 * k));
    }
    return _mm512_add_epi32(lo, hi);
}

// One group of sixteen rows against T tokens: x[t] the tokens' activation rows, starts[t]
// their offset_starts, result[t] where their sixteen results go; end: the end of the
// call's records.
template <DType W, int T>
void group_tokens(const uint8_t* group, int64_t n_blocks, const uint8_t* end, const BlockQ8_0* const* x,
                  const int32_t* const* starts, float* const* result) {
    constexpr size_t kRecord = record_bytes(W);
    // Records asked for ahead (18-22 KiB of Q4_0 / Q5_0): a group's records and the next
    // group's are one stream. Zen 5, bench_kernels from DRAM, one thread, one token: 8
    // records ahead 2.2 / 0.90 ms (Q4_0 151936 x 1024 / 16384 x 4096), 32 ahead 1.8 /
    // 0.66, 64 ahead 1.9 / 0.55, 128 ahead 1.8 / 0.69. Not past the call's rows: another
    // thread reads those, and a small matrix's run is only a few times this long.
    constexpr size_t kAhead = 64;
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < n_blocks; ++b) {
        const uint8_t* rec = group + static_cast<size_t>(b) * kRecord;
        prefetch_record<kRecord, kAhead * kRecord>(rec, end);
        __m512i levels[8];
        record_levels<W>(rec, levels);
        const __m512 dw = record_scales(rec);
        for (int t = 0; t < T; ++t) {
            const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(f16_to_f32(x[t][b].d)));
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(block_dots(levels, x[t][b].qs, starts[t][b])), scale, acc[t]);
        }
    }
    for (int t = 0; t < T; ++t) _mm512_storeu_ps(result[t], acc[t]);
}

// Q1_0's records against T tokens, with group_tokens' arguments (n_blocks: records of 128).
// Each sub-block's levels are unpacked once for all T tokens; every (row, token) is fused
// as dot_q1_0 fuses it (the four sub-blocks' totals times their d_x into the block's
// float, the first multiplied, then that times d_w into the row's), so the results are
// the stored rows' bits. The levels (0 or 2) against x with a -sum(x) start give
// sum((2b - 1) x), the sign-bit dot.
template <int T>
void q1_group_tokens(const uint8_t* group, int64_t n_blocks, const uint8_t* end, const BlockQ8_0* const* x,
                     const int32_t* const* starts, float* const* result) {
    constexpr size_t kRecord = record_bytes(DType::Q1_0);
    constexpr size_t kAhead = 32;  // records asked for ahead (9 KiB)
    constexpr int kSub = kQK1_0 / kQK8_0;
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < n_blocks; ++b) {
        const uint8_t* rec = group + static_cast<size_t>(b) * kRecord;
        prefetch_record<kRecord, kAhead * kRecord>(rec, end);
        __m512 block[T];  // set at s == 0 (a product, not a sum): zero only for the compiler's sake
        for (int t = 0; t < T; ++t) block[t] = _mm512_setzero_ps();
        for (int s = 0; s < kSub; ++s) {
            __m512i levels[8];
            q1_levels(rec, s, levels);
            for (int t = 0; t < T; ++t) {
                const BlockQ8_0& xb = x[t][b * kSub + s];
                const __m512 total = _mm512_cvtepi32_ps(block_dots(levels, xb.qs, starts[t][b * kSub + s]));
                const __m512 dx = _mm512_set1_ps(f16_to_f32(xb.d));
                block[t] = s == 0 ? _mm512_mul_ps(total, dx) : _mm512_fmadd_ps(total, dx, block[t]);
            }
        }
        const __m512 dw = record_scales(rec);
        for (int t = 0; t < T; ++t) acc[t] = _mm512_fmadd_ps(block[t], dw, acc[t]);
    }
    for (int t = 0; t < T; ++t) _mm512_storeu_ps(result[t], acc[t]);
}

template <DType W, int T>
void group_tail(int tokens, const uint8_t* group, int64_t n_blocks, const uint8_t* end, const BlockQ8_0* const* x,
                const int32_t* const* starts, float* const* result) {
    if constexpr (T > 0) {
        if (tokens != T) group_tail<W, T - 1>(tokens, group, n_blocks, end, x, starts, result);
        else if constexpr (W == DType::Q1_0) q1_group_tokens<T>(group, n_blocks, end, x, starts, result);
        else group_tokens<W, T>(group, n_blocks, end, x, starts, result);
    }
}

template <DType W>
void run_groups(int64_t n, int64_t n_rows, int64_t n_tokens, float* result, size_t result_stride, const uint8_t* w16,
                const uint8_t* x, size_t x_stride) {
    const int64_t n_blocks = n / kQK8_0, n_records = n / record_elems(W);
    thread_local std::vector<int32_t> start_store;
    offset_starts(level_offset(W), n_blocks, n_tokens, x, x_stride, start_store);
    walk_groups(w16, n_rows, static_cast<size_t>(n_records) * record_bytes(W), n_tokens, result, result_stride,
                [&](const uint8_t* group, const uint8_t* end, int64_t t0, int tokens, float* const* out) {
                    const BlockQ8_0* xr[kPassTokens];
                    const int32_t* st[kPassTokens];
                    for (int t = 0; t < tokens; ++t) {
                        xr[t] = reinterpret_cast<const BlockQ8_0*>(x + static_cast<size_t>(t0 + t) * x_stride);
                        st[t] = start_store.data() + static_cast<size_t>((t0 + t) * n_blocks);
                    }
                    group_tail<W, kPassTokens>(tokens, group, n_records, end, xr, st, out);
                });
}

#endif

}  // namespace

bool interleaved_rows_supported(DType weight, int64_t n, int64_t n_rows) {
#if INLAY_INTERLEAVED_ROWS
    return interleavable(weight) && (kKquantsBuilt || !is_kquant(weight)) && n > 0 && n % record_elems(weight) == 0 &&
           n_rows > 0 && n_rows % kRows == 0 && !detail::amx_usable();
#else
    (void)interleavable, (void)kKquantsBuilt, (void)weight, (void)n, (void)n_rows;
    return false;
#endif
}

size_t interleaved_group_bytes(DType weight, int64_t n) {
    return static_cast<size_t>(n / record_elems(weight)) * record_bytes(weight);
}

size_t interleaved_bytes(DType weight, int64_t n, int64_t n_rows) {
    return static_cast<size_t>(n_rows / kRows) * interleaved_group_bytes(weight, n);
}

void interleave_rows(DType weight, int64_t n, int64_t n_rows, const void* w, size_t w_stride, void* out) {
    if (!interleaved_rows_supported(weight, n, n_rows) || w == nullptr || out == nullptr)
        fail(INLAY_ERR_INVALID_ARGUMENT, "interleave_rows: {} rows of {} {} cannot be interleaved here", n_rows, n,
             dtype_name(weight));
#if INLAY_INTERLEAVED_ROWS
    const auto* src = static_cast<const uint8_t*>(w);
    auto* dst = static_cast<uint8_t*>(out);
    const size_t group_bytes = interleaved_group_bytes(weight, n);
    for (int64_t g = 0; g < n_rows / kRows; ++g) {
        const uint8_t* rows = src + static_cast<size_t>(g * kRows) * w_stride;
        uint8_t* group = dst + static_cast<size_t>(g) * group_bytes;
        if (is_kquant(weight)) detail::interleave_kquant_group(weight, rows, w_stride, n / kQK_K, group);
        else if (weight == DType::Q8_0) interleave_group<DType::Q8_0, BlockQ8_0>(rows, w_stride, n / kQK8_0, group);
        else if (weight == DType::Q4_0) interleave_group<DType::Q4_0, BlockQ4_0>(rows, w_stride, n / kQK8_0, group);
        else if (weight == DType::Q1_0) interleave_q1_group(rows, w_stride, n / kQK1_0, group);
        else interleave_group<DType::Q5_0, BlockQ5_0>(rows, w_stride, n / kQK8_0, group);
    }
#else
    (void)w_stride;  // refused above: no build without AVX-512 VNNI takes the layout
#endif
}

void interleaved_stored_row(DType weight, int64_t n, const void* w16, int64_t r, void* out) {
    if (!interleavable(weight) || n <= 0 || n % record_elems(weight) != 0 || r < 0 || w16 == nullptr || out == nullptr)
        fail(INLAY_ERR_INVALID_ARGUMENT, "interleaved_stored_row: row {} of {} {}", r, n, dtype_name(weight));
    const int64_t n_blocks = n / record_elems(weight);
    const size_t record = record_bytes(weight);
    const auto* group = static_cast<const uint8_t*>(w16) + static_cast<size_t>(r / kRows) * interleaved_group_bytes(weight, n);
    const int lane = static_cast<int>(r % kRows);
    if (is_kquant(weight)) return detail::kquant_stored_row(weight, n_blocks, group, lane, static_cast<uint8_t*>(out));
    const size_t block = dtype_traits(weight).block_bytes;
    auto* dst = static_cast<uint8_t*>(out);
    for (int64_t b = 0; b < n_blocks; ++b) {
        const uint8_t* rec = group + static_cast<size_t>(b) * record;
        uint8_t* blk = dst + static_cast<size_t>(b) * block;
        std::memcpy(blk, rec + lane * sizeof(uint16_t), sizeof(uint16_t));  // d
        uint8_t* qs = blk + sizeof(uint16_t);
        if (weight == DType::Q1_0) {
            std::memset(qs, 0, kQK1_0 / 8);
            for (int k = 0; k < kQ1Masks; ++k) {
                uint64_t mask;
                std::memcpy(&mask, rec + kScaleBytes + sizeof(uint64_t) * static_cast<size_t>(k), sizeof mask);
                const auto nibble = static_cast<uint8_t>((mask >> (4 * lane)) & 0xFu);
                qs[k / 2] = static_cast<uint8_t>(qs[k / 2] | (nibble << (4 * (k % 2))));
            }
            continue;
        }
        if (weight == DType::Q5_0) {
            uint32_t qh = 0;
            for (int k = 0; k < 8; ++k) {
                uint64_t high;
                std::memcpy(&high, rec + kScaleBytes + quad_bytes(weight) + 8 * k, sizeof high);
                qh |= static_cast<uint32_t>((high >> (4 * lane)) & 0xFu) << high_first(k);
            }
            std::memcpy(qs, &qh, sizeof qh);
            qs += sizeof qh;
        }
        if (weight == DType::Q8_0) {
            for (int k = 0; k < 8; ++k)
                for (int j = 0; j < 4; ++j) qs[4 * k + j] = static_cast<uint8_t>(rec[kScaleBytes + (k * kRows + lane) * 4 + j] ^ 0x80);
        } else {
            for (int k = 0; k < 4; ++k) std::memcpy(qs + 4 * k, rec + kScaleBytes + (k * kRows + lane) * 4, 4);
        }
    }
}

namespace detail {
void interleaved_tiles(DType weight, int64_t n, int64_t n_rows, int64_t n_tokens, float* result, size_t result_stride,
                       const void* w16, const void* x, size_t x_stride) {
#if INLAY_INTERLEAVED_ROWS
    const auto* wb = static_cast<const uint8_t*>(w16);
    const auto* xb = static_cast<const uint8_t*>(x);
    if (is_kquant(weight)) kquant_interleaved_tiles(weight, n, n_rows, n_tokens, result, result_stride, w16, x, x_stride);
    else if (weight == DType::Q8_0) run_groups<DType::Q8_0>(n, n_rows, n_tokens, result, result_stride, wb, xb, x_stride);
    else if (weight == DType::Q4_0) run_groups<DType::Q4_0>(n, n_rows, n_tokens, result, result_stride, wb, xb, x_stride);
    else if (weight == DType::Q1_0) run_groups<DType::Q1_0>(n, n_rows, n_tokens, result, result_stride, wb, xb, x_stride);
    else run_groups<DType::Q5_0>(n, n_rows, n_tokens, result, result_stride, wb, xb, x_stride);
#else
    (void)weight, (void)n, (void)n_rows, (void)n_tokens, (void)result, (void)result_stride, (void)w16, (void)x,
        (void)x_stride;
#endif
}
}  // namespace detail

}  // namespace inlay::quant
