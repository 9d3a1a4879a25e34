// Q8_0, Q4_0, Q5_0 and Q1_0 token tiles over sixteen weight rows at once (AVX-512 VNNI), for
// prompts: a vector's sixteen 32-bit lanes are sixteen rows, so a block's integer dots
// come out one row per lane and no lane sums are reduced.
//
// The 512-bit block-sum tile (vec_dot_tile_avx512.cpp) holds two tokens' eight partial
// sums of one row per vector and reduces them to one total per (row, token) for every
// block of 32: on Zen 4 that reduction and the block's scales took three operations for
// every dpbusd. Here the rows are regrouped once per call (`interleave_rows`): for each
// block, vector k holds bytes 4k..4k+3 of every row (the weights as signed values), so
// `dpbusd(acc, broadcast(x bytes 4k..4k+3), vector k)` adds each row's four products to
// its own lane, and eight of them make the block's dots. The activations are the
// unsigned operand: TilePack stores them as x + 128 (`rows16_pack`), and each lane
// starts from -128 * sum(w) of its row's block, so it ends at exactly sum(w x). Each
// total then goes into its row's float with dot_block_sums' fma(float(total), d_w * d_x,
// acc): the same bits as vec_dot_kernel.
#include "quant/kernels.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__) && \
    defined(__AVX512VNNI__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <algorithm>
#include <type_traits>

#include "core/half.h"
#include "quant/avx2_blocks.h"
#include "quant/gcc_avx512_warnings.h"
#include "quant/interleaved_records.h"
#include "quant/row_lane_tiles.h"

namespace inlay::quant::detail {
namespace {

using namespace avx2;

// The tiles' shape (row_lane_tiles.h's block_tiles runs them).
struct Lanes16 {
    static constexpr int kRows = 16;
    static constexpr int64_t kMaxBlocks = 48;  // blocks of 32 regrouped at a time (whole Q1_0 blocks): 48 x 640 bytes
    static constexpr int kTokens = 8;          // tokens whose accumulators stay in registers
};
constexpr int kRows = Lanes16::kRows;
constexpr int kTokens = Lanes16::kTokens;

// One block of the sixteen rows, regrouped.
struct InterleavedBlock {
    int32_t quads[8][kRows];  // quads[k][r]: bytes 4k..4k+3 of row r's block, signed weights
    int32_t start[kRows];     // -128 * the sum of row r's weights in the block
    float d[kRows];           // row r's block scale
};

// One block of one token's activations as rows16_pack writes them.
struct PackedBlock {
    float d;
    uint8_t q[kQK8_0];  // x + 128
};

// Sub-blocks [b0, b0 + count) of n_rows (<= 16) rows into `out`; missing rows are zeros.
template <class Block>
void interleave_rows(const uint8_t* w, size_t w_stride, int n_rows, int64_t b0, int64_t count, InterleavedBlock* out) {
    for (int64_t i = 0; i < count; ++i) {
        InterleavedBlock& ib = out[i];
        alignas(32) uint16_t d16[kRows] = {};
        for (int half = 0; half < 2; ++half) {
            __m256i rows[8], quads[8];
            for (int j = 0; j < 8; ++j) {
                const int r = 8 * half + j;
                if (r < n_rows) {
                    rows[j] = block_weights<Block>(w + static_cast<size_t>(r) * w_stride, b0 + i, d16[r]);
                } else {
                    rows[j] = _mm256_setzero_si256();
                }
            }
            transpose8x32(rows, quads);
            for (int k = 0; k < 8; ++k)
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(&ib.quads[k][8 * half]), quads[k]);
        }
        __m512i sum = _mm512_setzero_si512();
        const __m512i ones = _mm512_set1_epi8(1);
        for (int k = 0; k < 8; ++k) sum = _mm512_dpbusd_epi32(sum, ones, _mm512_loadu_si512(ib.quads[k]));
        _mm512_storeu_si512(ib.start, _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(sum, 7)));
        _mm512_storeu_ps(ib.d, _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(d16))));
    }
}

// Every row's exact dot with one packed activation block, one row per lane.
// Two chains of four dpbusd (exact integers: any order) where a (block, token) would
// otherwise be one chain of eight latencies: Q8_0 / Q4_0 / Q5_0 tiles 4-10% faster (Zen 5,
// bench_kernels, 128 tokens). Q1_0's four sub-blocks already give four chains, and the
// extra add made it 14% slower, so it keeps one.
template <bool kTwoChains>
inline __m512i block_dots(const __m512i (&quads)[8], __m512i start, const PackedBlock& xb) {
    if constexpr (!kTwoChains) {
        __m512i s = start;
        for (int k = 0; k < 8; ++k)
            s = _mm512_dpbusd_epi32(s, _mm512_set1_epi32(static_cast<int32_t>(load_u32(xb.q + 4 * k))), quads[k]);
        return s;
    }
    __m512i lo = start, hi = _mm512_setzero_si512();
    for (int k = 0; k < 4; ++k) {
        lo = _mm512_dpbusd_epi32(lo, _mm512_set1_epi32(static_cast<int32_t>(load_u32(xb.q + 4 * k))), quads[k]);
        hi = _mm512_dpbusd_epi32(hi, _mm512_set1_epi32(static_cast<int32_t>(load_u32(xb.q + 16 + 4 * k))), quads[k + 4]);
    }
    return _mm512_add_epi32(lo, hi);
}

// Tokens [0, T) of the pack against `count` interleaved sub-blocks; acc holds the rows'
// running floats (one vector per token). Q8_0 / Q4_0 / Q5_0: dot_block_sums' order;
// Q1_0: dot_q1_0's (its four sub-blocks' dots times their d_x into the block's float,
// then times d_w into the row's).
template <class Block, int T>
void tokens_over_blocks(const InterleavedBlock* blocks, int64_t count, const PackedBlock* const (&x)[kTokens],
                        __m512 (&acc)[kTokens]) {
    if constexpr (std::is_same_v<Block, BlockQ1_0>) {
        for (int64_t i = 0; i < count; i += 4) {
            __m512 block[T];  // set at p == 0 (a product, not a sum): zero only for the compiler's sake
            for (int t = 0; t < T; ++t) block[t] = _mm512_setzero_ps();
            for (int p = 0; p < 4; ++p) {
                const InterleavedBlock& ib = blocks[i + p];
                __m512i quads[8];
                for (int k = 0; k < 8; ++k) quads[k] = _mm512_loadu_si512(ib.quads[k]);
                const __m512i start = _mm512_loadu_si512(ib.start);
                for (int t = 0; t < T; ++t) {
                    const PackedBlock& xb = x[t][i + p];
                    const __m512 s = _mm512_cvtepi32_ps(block_dots<false>(quads, start, xb));
                    const __m512 dx = _mm512_set1_ps(xb.d);
                    block[t] = p == 0 ? _mm512_mul_ps(s, dx) : _mm512_fmadd_ps(s, dx, block[t]);
                }
            }
            const __m512 dw = _mm512_loadu_ps(blocks[i].d);
            for (int t = 0; t < T; ++t) acc[t] = _mm512_fmadd_ps(block[t], dw, acc[t]);
        }
    } else {
        for (int64_t i = 0; i < count; ++i) {
            const InterleavedBlock& ib = blocks[i];
            __m512i quads[8];
            for (int k = 0; k < 8; ++k) quads[k] = _mm512_loadu_si512(ib.quads[k]);
            const __m512i start = _mm512_loadu_si512(ib.start);
            const __m512 dw = _mm512_loadu_ps(ib.d);
            for (int t = 0; t < T; ++t) {
                const PackedBlock& xb = x[t][i];
                acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(block_dots<true>(quads, start, xb)), _mm512_mul_ps(dw, _mm512_set1_ps(xb.d)),
                                         acc[t]);
            }
        }
    }
}

// The tiles of one weight type, for block_tiles.
template <class Block>
struct Rows16 : Lanes16 {
    using Group = InterleavedBlock;
    static void interleave(const uint8_t* w, size_t w_stride, int n_rows, int64_t b0, int64_t count, Group* out) {
        interleave_rows<Block>(w, w_stride, n_rows, b0, count, out);
    }
    template <int T>
    static void token_group(const Group* blocks, int64_t b0, int64_t count, const uint8_t* x0, size_t x_stride,
                            int n_rows, float* result, size_t result_stride) {
        const PackedBlock* x[kTokens];
        __m512 acc[kTokens];
        const __mmask16 rows = static_cast<__mmask16>((1u << n_rows) - 1);
        for (int t = 0; t < T; ++t) {
            x[t] = reinterpret_cast<const PackedBlock*>(x0 + static_cast<size_t>(t) * x_stride) + b0;
            // The rows' floats carry over from the previous blocks through the result.
            acc[t] = b0 == 0 ? _mm512_setzero_ps()
                             : _mm512_maskz_loadu_ps(rows, result + static_cast<size_t>(t) * result_stride);
        }
        tokens_over_blocks<Block, T>(blocks, count, x, acc);
        for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(result + static_cast<size_t>(t) * result_stride, rows, acc[t]);
    }
};

// The same tiles over Q8_0 / Q4_0 / Q5_0 / Q1_0 weights already interleaved at load time
// (interleaved_rows.h): a group of sixteen rows is one run of records, so the regrouping
// only turns each record's levels into signed weights (Q1_0: each record's four
// sub-blocks in turn, all four with its block's d). block_tiles addresses row r at
// w + r * w_stride; with w_stride the stored row's bytes (a record is sixteen stored
// blocks' bytes), row 16g lands on group g.
template <DType W>
struct Rows16Interleaved : Lanes16 {
    using Group = InterleavedBlock;
    static void interleave(const uint8_t* w, size_t, int, int64_t b0, int64_t count, Group* out) {
        const __m512i ones = _mm512_set1_epi8(1), offset = _mm512_set1_epi8(static_cast<char>(interleaved::level_offset(W)));
        constexpr int64_t kSub = interleaved::record_elems(W) / kQK8_0;  // blocks of 32 a record
        for (int64_t i = 0; i < count; ++i) {
            const uint8_t* rec = w + static_cast<size_t>((b0 + i) / kSub) * interleaved::record_bytes(W);
            InterleavedBlock& ib = out[i];
            __m512i levels[8], sum = _mm512_setzero_si512();
            if constexpr (W == DType::Q1_0) interleaved::q1_levels(rec, static_cast<int>((b0 + i) % kSub), levels);
            else interleaved::record_levels<W>(rec, levels);
            for (int k = 0; k < 8; ++k) {
                const __m512i weights = _mm512_sub_epi8(levels[k], offset);  // signed: level - offset
                _mm512_storeu_si512(ib.quads[k], weights);
                sum = _mm512_dpbusd_epi32(sum, ones, weights);
            }
            _mm512_storeu_si512(ib.start, _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(sum, 7)));
            _mm512_storeu_ps(ib.d, interleaved::record_scales(rec));
        }
    }
    template <int T>
    static void token_group(const Group* blocks, int64_t b0, int64_t count, const uint8_t* x0, size_t x_stride,
                            int n_rows, float* result, size_t result_stride) {
        // dot_q1_0's float order, or the block sums'
        using Order = std::conditional_t<W == DType::Q1_0, BlockQ1_0, BlockQ8_0>;
        Rows16<Order>::template token_group<T>(blocks, b0, count, x0, x_stride, n_rows, result, result_stride);
    }
};

template <DType W, class Block>
void rows16_interleaved_tiles(int64_t n, int64_t n_rows, int64_t n_tokens, float* result, size_t result_stride,
                              const void* w, size_t, const std::byte* packed) {
    const size_t row_bytes = static_cast<size_t>(n / interleaved::record_elems(W)) * sizeof(Block);
    lanes::block_tiles<Rows16Interleaved<W>>(n, n_rows, n_tokens, result, result_stride, w, row_bytes, packed,
                                             static_cast<size_t>(n / kQK8_0) * sizeof(PackedBlock));
}

template <class Block>
void rows16_tiles(int64_t n, int64_t n_rows, int64_t n_tokens, float* result, size_t result_stride, const void* w,
                  size_t w_stride, const std::byte* packed) {
    lanes::block_tiles<Rows16<Block>>(n, n_rows, n_tokens, result, result_stride, w, w_stride, packed,
                                      static_cast<size_t>(n / kQK8_0) * sizeof(PackedBlock));
}

}  // namespace

size_t rows16_pack_bytes(int64_t n, int64_t n_tokens) {
    return static_cast<size_t>(n_tokens) * static_cast<size_t>(n / kQK8_0) * sizeof(PackedBlock);
}

void rows16_pack(int64_t n, int64_t n_tokens, const void* x, size_t x_stride, std::byte* out) {
    const int64_t nb = n / kQK8_0;
    auto* dst = reinterpret_cast<PackedBlock*>(out);
    const auto* xb = static_cast<const uint8_t*>(x);
    for (int64_t t = 0; t < n_tokens; ++t) {
        const auto* src = row_as<BlockQ8_0>(xb, x_stride, static_cast<int>(t));
        for (int64_t b = 0; b < nb; ++b, ++dst) {
            dst->d = f16_to_f32(src[b].d);
            const __m256i q = _mm256_xor_si256(load32(src[b].qs), _mm256_set1_epi8(-128));  // x + 128
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst->q), q);
        }
    }
}

Rows16TileFn avx512_rows16_interleaved_kernel(DType weight) {
    switch (weight) {
        case DType::Q8_0: return rows16_interleaved_tiles<DType::Q8_0, BlockQ8_0>;
        case DType::Q4_0: return rows16_interleaved_tiles<DType::Q4_0, BlockQ4_0>;
        case DType::Q5_0: return rows16_interleaved_tiles<DType::Q5_0, BlockQ5_0>;
        case DType::Q1_0: return rows16_interleaved_tiles<DType::Q1_0, BlockQ1_0>;
        default: return nullptr;
    }
}

Rows16TileFn avx512_rows16_tile_kernel(DType weight) {
    switch (weight) {
        case DType::Q8_0: return rows16_tiles<BlockQ8_0>;
        case DType::Q4_0: return rows16_tiles<BlockQ4_0>;
        case DType::Q5_0: return rows16_tiles<BlockQ5_0>;
        case DType::Q1_0: return rows16_tiles<BlockQ1_0>;
        default: return nullptr;
    }
}

}  // namespace inlay::quant::detail

#else

namespace inlay::quant::detail {
size_t rows16_pack_bytes(int64_t, int64_t) { return 0; }
void rows16_pack(int64_t, int64_t, const void*, size_t, std::byte*) {}
Rows16TileFn avx512_rows16_tile_kernel(DType) { return nullptr; }
Rows16TileFn avx512_rows16_interleaved_kernel(DType) { return nullptr; }
}  // namespace inlay::quant::detail

#endif
