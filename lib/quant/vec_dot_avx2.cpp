// AVX2/FMA/F16C dot kernels of the float types, the 32-element block types and Q1_0 (the
// K-quants are in vec_dot_avx2_kquants.cpp). Quantized types multiply 8-bit integers
// (maddubs/madd, or VNNI's dpbusd when the build has AVX512-VNNI) and apply the float
// scales once per block in the order of the scalar reference kernels (llama.cpp's x86
// kernels' order, except Q8_0: see vec_dot_reference.cpp), so they equal those bitwise.
// Float types keep one or two
// accumulators per row and differ from the reference in the order of the additions.
//
// Every kernel is a row-group template: R weight rows share each activation load. A
// row's arithmetic is the same whatever R is, so vec_dot_rows equals single-row calls
// bitwise.
#include "quant/kernels.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <cmath>
#include <cstring>
#include <type_traits>

#include "core/half.h"
#include "quant/avx2_blocks.h"
#include "quant/cpu_tuning.h"
#include "quant/gcc_avx512_warnings.h"  // GCC 12's false positives in its own AVX-512 intrinsics
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
#include "quant/avx512_block_pairs.h"
#endif

namespace inlay::quant::detail {
namespace {

using namespace avx2;

// ---------------------------------------------------------------- float types

template <DType T, int R>
void dot_float(int64_t n, float* result, const uint8_t* w, size_t stride, const void* x_row) {
    using E = FloatElem<T>;
    using Elem = typename E::type;
    // F32 keeps one 8-lane accumulator per row, as llama.cpp's tinyBLAS does for f32
    // weights (batch and single token alike), so our sums round like the reference; the
    // 16-bit types keep two (elements 16k..16k+7 and 16k+8..16k+15): one 16-lane
    // accumulator per (row, token) pair in the 512-bit tile kernels, which is what lets
    // those keep 24 pairs in registers.
    constexpr int U = T == DType::F32 ? 1 : 2;
    const auto* x = static_cast<const Elem*>(x_row);
    const Elem* wr[R];
    __m256 acc[R][U];
    for (int r = 0; r < R; ++r) {
        wr[r] = row_as<Elem>(w, stride, r);
        for (int u = 0; u < U; ++u) acc[r][u] = _mm256_setzero_ps();
    }
    int64_t i = 0;
    for (; i + 8 * U <= n; i += 8 * U) {
        prefetch_rows<R, kPrefetchL2>(w, stride, static_cast<size_t>(i) * sizeof(Elem), 8 * U * sizeof(Elem));
        for (int u = 0; u < U; ++u) {
            const __m256 xv = E::load(x + i + 8 * u);
            for (int r = 0; r < R; ++r) acc[r][u] = _mm256_fmadd_ps(E::load(wr[r] + i + 8 * u), xv, acc[r][u]);
        }
    }
    for (; i + 8 <= n; i += 8) {
        const __m256 xv = E::load(x + i);
        for (int r = 0; r < R; ++r) acc[r][0] = _mm256_fmadd_ps(E::load(wr[r] + i), xv, acc[r][0]);
    }
    for (int r = 0; r < R; ++r) {
        __m256 total = acc[r][0];
        if constexpr (U == 2) total = _mm256_add_ps(acc[r][0], acc[r][1]);
        float sum = hsum(total);
        for (int64_t j = i; j < n; ++j) sum += E::scalar(wr[r][j]) * E::scalar(x[j]);
        result[r] = sum;
    }
}

// ---------------------------------------------------------------- 32-element blocks

// Q4_1 and Q5_1 (against Q8_1 activations) in the order of
// ggml's x86 kernels (see vec_dot_reference.cpp): one lane accumulator per row, fused
// with each block's scale; the mins' m * s in a fused scalar sum added at the end.
// Rows are independent chains, so R rows hide the FMA latency.
template <class Block, int R>
void dot_block32(int64_t n, float* result, const uint8_t* w, size_t stride, const void* x_row) {
    using T = Block32<Block>;
    const auto* x = static_cast<const typename T::Act*>(x_row);
    const Block* wr[R];
    __m256 acc[R];
    float mins[R];
    for (int r = 0; r < R; ++r) {
        wr[r] = row_as<Block>(w, stride, r);
        acc[r] = _mm256_setzero_ps();
        mins[r] = 0.0f;
    }
    for (int64_t b = 0; b < n / 32; ++b) {
        const __m256i xq = load32(x[b].qs);
        const __m256i start = offset_start<Block>(xq);
        const float dx = f16_to_f32(x[b].d);
        for (int r = 0; r < R; ++r) {
            prefetch_ahead<sizeof(Block)>(wr[r] + b);
            const __m256i p = T::dot(wr[r][b], xq, start);
            acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(f16_to_f32(wr[r][b].d) * dx), _mm256_cvtepi32_ps(p), acc[r]);
            if constexpr (T::kMin) mins[r] = std::fma(f16_to_f32(wr[r][b].m), f16_to_f32(x[b].s), mins[r]);
        }
    }
    for (int r = 0; r < R; ++r) result[r] = hsum(acc[r]) + mins[r];
}

// Q4_0, Q5_0 and Q8_0 against Q8_0 in block-sum order (see vec_dot_reference.cpp): per row one
// float, fused with each block's whole integer dot and scale. Eight rows keep their
// floats in the lanes of one vector; one or two rows (dot_block_sums_rows) use the scalar
// fma, which rounds the same way.
// One or two rows: the same fused scalar sum, with the horizontal sums of eight
// consecutive blocks done together (sum_lanes8) and their eight scales in one multiply;
// the eight fmas then run in block order, so the result is bitwise the R == 8 kernel's
// for its row. Two rows interleave two such chains of dependent fmas, which a single
// row waits on.
template <class Block, int R = 1>
void dot_block_sums_rows(int64_t n, float* result, const uint8_t* w, size_t stride, const void* x_row) {
    const auto* x = static_cast<const BlockQ8_0*>(x_row);
    const Block* wr[R];
    for (int r = 0; r < R; ++r) wr[r] = row_as<Block>(w, stride, r);
    const int64_t n_blocks = n / kQK8_0;
    float acc[R];
    for (int r = 0; r < R; ++r) acc[r] = 0.0f;
    const auto d16 = [](const auto* blocks) {
        return _mm256_cvtph_ps(_mm_setr_epi16(
            static_cast<int16_t>(blocks[0].d), static_cast<int16_t>(blocks[1].d), static_cast<int16_t>(blocks[2].d),
            static_cast<int16_t>(blocks[3].d), static_cast<int16_t>(blocks[4].d), static_cast<int16_t>(blocks[5].d),
            static_cast<int16_t>(blocks[6].d), static_cast<int16_t>(blocks[7].d)));
    };
    int64_t b = 0;
    for (; b + 8 <= n_blocks; b += 8) {
        prefetch_rows<R>(w, stride, static_cast<size_t>(b) * sizeof(Block), 8 * sizeof(Block));
        alignas(32) float sums[R][8], scales[R][8];
        const __m256 dx = d16(x + b);
        for (int r = 0; r < R; ++r) {
            __m256i p[8];
            for (int k = 0; k < 8; ++k) {
                const __m256i xq = load32(x[b + k].qs);
                p[k] = Block32<Block>::dot(wr[r][b + k], xq, offset_start<Block>(xq));
            }
            _mm256_store_ps(sums[r], _mm256_cvtepi32_ps(sum_lanes8(p)));
            _mm256_store_ps(scales[r], _mm256_mul_ps(d16(wr[r] + b), dx));
        }
        for (int k = 0; k < 8; ++k)
            for (int r = 0; r < R; ++r) acc[r] = std::fma(sums[r][k], scales[r][k], acc[r]);
    }
    for (; b < n_blocks; ++b) {
        const __m256i xq = load32(x[b].qs);
        for (int r = 0; r < R; ++r) {
            const int32_t sumi = hsum(Block32<Block>::dot(wr[r][b], xq, offset_start<Block>(xq)));
            acc[r] = std::fma(static_cast<float>(sumi), f16_to_f32(wr[r][b].d) * f16_to_f32(x[b].d), acc[r]);
        }
    }
    for (int r = 0; r < R; ++r) result[r] = acc[r];
}

template <class Block, int R>
void dot_block_sums(int64_t n, float* result, const uint8_t* w, size_t stride, const void* x_row) {
    static_assert(R == 1 || R == 8);
    if constexpr (R == 1) {
        dot_block_sums_rows<Block>(n, result, w, stride, x_row);
    } else {
        const auto* x = static_cast<const BlockQ8_0*>(x_row);
        const Block* wr[8];
        for (int r = 0; r < 8; ++r) wr[r] = row_as<Block>(w, stride, r);
        __m256 acc8 = _mm256_setzero_ps();
        for (int64_t b = 0; b < n / kQK8_0; ++b) {
            const __m256i xq = load32(x[b].qs);
            const __m256i start = offset_start<Block>(xq);
            const float dx = f16_to_f32(x[b].d);
            prefetch_rows<8>(w, stride, static_cast<size_t>(b) * sizeof(Block), sizeof(Block));
            __m256i p[8];
            for (int r = 0; r < 8; ++r) p[r] = Block32<Block>::dot(wr[r][b], xq, start);
            const __m256 scale = _mm256_mul_ps(row_scales8(wr, b), _mm256_set1_ps(dx));
            acc8 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum_lanes8(p)), scale, acc8);
        }
        _mm256_storeu_ps(result, acc8);
    }
}

// The 32 bytes {0, 2} of sub-block K of a Q1_0 block's sign bits. With AVX512BW the
// 32 bits are a byte mask (bit i selects byte i): a mask load and one masked move,
// instead of a shuffle, two ands and a compare per row and sub-block.
#if defined(__AVX512BW__) && defined(__AVX512VL__)
struct Q1Bits {
    const uint8_t* qs = nullptr;
    void load(const BlockQ1_0& b) { qs = b.qs; }
    template <int K>
    __m256i twos() const {
        uint32_t word;
        std::memcpy(&word, qs + 4 * K, sizeof word);
        return _mm256_maskz_mov_epi8(_cvtu32_mask32(word), _mm256_set1_epi8(2));
    }
};
#else
constexpr int kQ1Rows = 4;
struct Q1Bits {
    __m256i bits;
    void load(const BlockQ1_0& b) { bits = _mm256_broadcastsi128_si256(load16(b.qs)); }
    template <int K>
    __m256i twos() const {
        return bits_to_twos<K>(bits);
    }
};
#endif

// Q1_0 against Q8_0: each 128-weight block meets four activation blocks. With b_i the
// weight bits, sum (b_i ? x_i : -x_i) = sum 2*b_i*x_i - sum x_i: an unsigned-by-signed
// dot of bytes {0, 2} with x, started from -sum(x) (computed once per activation block
// and shared by all rows). Float order of dot_q1_0 (vec_dot_reference.cpp): each
// sub-block's exact total times its d (the first multiplied, the others fused), then the
// block fused with the weight scale; the R rows' totals side by side in the lanes of one
// vector (sum_lanes8), so a row's arithmetic does not depend on R.
template <int R>
void dot_q1_0(int64_t n, float* result, const uint8_t* w, size_t stride, const void* x_row) {
    static_assert(R >= 1 && R <= 8);
    constexpr int K = kQK1_0 / kQK8_0;
    const auto* x = static_cast<const BlockQ8_0*>(x_row);
    const BlockQ1_0* wr[R];
    for (int r = 0; r < R; ++r) wr[r] = row_as<BlockQ1_0>(w, stride, r);
    __m256 acc = _mm256_setzero_ps();  // lane r: row r
    const __m256i ones = _mm256_set1_epi8(1);
    for (int64_t b = 0; b < n / kQK1_0; ++b) {
        Q1Bits bits[R];
        alignas(16) uint16_t dw[8] = {};
        for (int r = 0; r < R; ++r) {
            prefetch_ahead<sizeof(BlockQ1_0)>(wr[r] + b);
            bits[r].load(wr[r][b]);
            dw[r] = wr[r][b].d;
        }
        __m256 block = _mm256_setzero_ps();
        auto sub_block = [&]<int k>() {
            const BlockQ8_0& xb = x[b * K + k];
            const __m256i xq = load32(xb.qs);
            const __m256i neg_sum = _mm256_sub_epi32(_mm256_setzero_si256(), dot_u8_i8(ones, xq));
            __m256i p[8];
            for (int r = 0; r < 8; ++r)
                p[r] = r < R ? dot_u8_i8_add(neg_sum, bits[r].template twos<k>(), xq) : _mm256_setzero_si256();
            const __m256 totals = _mm256_cvtepi32_ps(sum_lanes8(p));
            const __m256 dx = _mm256_set1_ps(f16_to_f32(xb.d));
            block = k == 0 ? _mm256_mul_ps(totals, dx) : _mm256_fmadd_ps(totals, dx, block);
        };
        sub_block.template operator()<0>();
        sub_block.template operator()<1>();
        sub_block.template operator()<2>();
        sub_block.template operator()<3>();
        acc = _mm256_fmadd_ps(block, _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(dw))), acc);
    }
    alignas(32) float out[8];
    _mm256_store_ps(out, acc);
    for (int r = 0; r < R; ++r) result[r] = out[r];
}

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
// dot_q1_0<8> in 512-bit vectors: a row's 128 bits are two 64-bit byte masks, each
// covering two sub-blocks in one zmm (activation blocks 2j and 2j+1 side by side), so a
// row costs two masked moves and two dpbusd per block where the 256-bit kernel spends
// four of each; the 8 rows x 4 sub-blocks of lane sums are then reduced together by
// 32-bit and 64-bit interleaves and one qword permute (dot_q1_0<8>'s eight hadd trees
// were its bottleneck). Integer totals are exact and the float steps are dot_q1_0's in
// its order, so the results are bitwise the same.
void dot_q1_0_zmm8(int64_t n, float* result, const uint8_t* w, size_t stride, const void* x_row) {
    constexpr int K = kQK1_0 / kQK8_0;
    const auto* x = static_cast<const BlockQ8_0*>(x_row);
    const BlockQ1_0* wr[8];
    for (int r = 0; r < 8; ++r) wr[r] = row_as<BlockQ1_0>(w, stride, r);
    const __m512i twos = _mm512_set1_epi8(2), ones = _mm512_set1_epi8(1);
    __m256 acc = _mm256_setzero_ps();  // lane r: row r
    for (int64_t b = 0; b < n / kQK1_0; ++b) {
        const BlockQ8_0* xb = x + b * K;
        alignas(16) uint16_t dw[8];
        // per half h (sub-blocks 2h, 2h+1): the 8 rows' totals, [rows 0-3, 4-7] per sub-block
        __m256i totals[K];
        for (int h = 0; h < 2; ++h) {
            const __m512i xq = avx512::halves(load32(xb[2 * h].qs), load32(xb[2 * h + 1].qs));
            const __m512i neg_sum = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, xq));
            __m512i p[8];
            for (int r = 0; r < 8; ++r) {
                if (h == 0) {
                    prefetch_ahead<sizeof(BlockQ1_0)>(wr[r] + b);
                    dw[r] = wr[r][b].d;
                }
                uint64_t bits;
                std::memcpy(&bits, wr[r][b].qs + 8 * h, sizeof bits);
                p[r] = _mm512_dpbusd_epi32(neg_sum, _mm512_maskz_mov_epi8(_cvtu64_mask64(bits), twos), xq);
            }
            // p[r]'s quarters 0-1: sub-block 2h, 2-3: sub-block 2h+1.
            const __m512i sums = avx512::sum_lanes8_parts(p);
            totals[2 * h] = _mm512_castsi512_si256(sums);
            totals[2 * h + 1] = _mm512_extracti64x4_epi64(sums, 1);
        }
        __m256 block = _mm256_setzero_ps();
        for (int k = 0; k < K; ++k) {
            const __m256 t = _mm256_cvtepi32_ps(totals[k]);
            const __m256 dx = _mm256_set1_ps(f16_to_f32(xb[k].d));
            block = k == 0 ? _mm256_mul_ps(t, dx) : _mm256_fmadd_ps(t, dx, block);
        }
        acc = _mm256_fmadd_ps(block, _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(dw))), acc);
    }
    _mm256_storeu_ps(result, acc);
}

// dot_block_sums<Block, 8> for Q4_0 and Q5_0 in 512-bit vectors: a row's blocks b and
// b + 1 in one vector (their activation blocks side by side), so a row costs one dpbusd
// per two blocks, and the eight rows' lane sums of both blocks are reduced together as
// by sum_lanes8_parts (sum_lanes8's hadd trees, once per block, were a quarter of
// the work). Integer totals are exact and each block's float step is dot_block_sums<Block,
// 8>'s in block order, so the results are bitwise the same. Zen 5, bench_kernels
// vec_dot_rows, one thread, against dot_block_sums<Block, 8>: Q4_0 30 -> 39-40 GB/s in
// cache, 24-29 -> 33-35 from DRAM; Q5_0 27-28 -> 39-40 and 25-27 -> 32-34. Q8_0 the same
// way (its signed values plus 128, against a -128 * sum x start) ran 1.2-1.4x in cache
// but 0.8-0.9x from DRAM (151936 x 1024 and 16384 x 4096, either prefetch level), so
// Q8_0 keeps dot_block_sums.
template <class Block>
void dot_block_sums_zmm8(int64_t n, float* result, const uint8_t* w, size_t stride, const void* x_row) {
    const auto* x = static_cast<const BlockQ8_0*>(x_row);
    const Block* wr[8];
    for (int r = 0; r < 8; ++r) wr[r] = row_as<Block>(w, stride, r);
    const int64_t n_blocks = n / kQK8_0;
    __m256 acc8 = _mm256_setzero_ps();
    auto fuse = [&](int64_t b, __m256i totals) {
        const __m256 scale = _mm256_mul_ps(row_scales8(wr, b), _mm256_set1_ps(f16_to_f32(x[b].d)));
        acc8 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(totals), scale, acc8);
    };
    int64_t b = 0;
    for (; b + 2 <= n_blocks; b += 2) {
        const __m512i xq = avx512::halves(load32(x[b].qs), load32(x[b + 1].qs));
        const __m512i start = avx512::pair_start<Block>(xq);
        prefetch_rows<8>(w, stride, static_cast<size_t>(b) * sizeof(Block), 2 * sizeof(Block));
        __m512i p[8];
        for (int r = 0; r < 8; ++r) p[r] = _mm512_dpbusd_epi32(start, avx512::PairLevels<Block>::load(wr[r][b], wr[r][b + 1]), xq);
        const __m512i sums = avx512::sum_lanes8_parts(p);  // p[r]'s quarters 0-1: block b, 2-3: block b + 1
        fuse(b, _mm512_castsi512_si256(sums));
        fuse(b + 1, _mm512_extracti64x4_epi64(sums, 1));
    }
    if (b < n_blocks) {  // an odd last block: dot_block_sums<Block, 8>'s own step
        const __m256i xq = load32(x[b].qs);
        const __m256i start = offset_start<Block>(xq);
        __m256i p[8];
        for (int r = 0; r < 8; ++r) p[r] = Block32<Block>::dot(wr[r][b], xq, start);
        fuse(b, sum_lanes8(p));
    }
    _mm256_storeu_ps(result, acc8);
}
constexpr VecDotRowsFn kQ1RowGroup = row_groups<8, dot_q1_0_zmm8, dot_q1_0<1>>;
constexpr VecDotRowsFn kQ4RowGroup = row_groups<8, dot_block_sums_zmm8<BlockQ4_0>, dot_block_sums<BlockQ4_0, 1>>;
constexpr VecDotRowsFn kQ5RowGroup = row_groups<8, dot_block_sums_zmm8<BlockQ5_0>, dot_block_sums<BlockQ5_0, 1>>;
#else
constexpr VecDotRowsFn kQ1RowGroup = row_groups<kQ1Rows, dot_q1_0<kQ1Rows>, dot_q1_0<1>>;
constexpr VecDotRowsFn kQ4RowGroup = row_groups<8, dot_block_sums<BlockQ4_0, 8>, dot_block_sums<BlockQ4_0, 1>>;
constexpr VecDotRowsFn kQ5RowGroup = row_groups<8, dot_block_sums<BlockQ5_0, 8>, dot_block_sums<BlockQ5_0, 1>>;
#endif

}  // namespace

VecDotFn avx2_kernel(DType weight) {
    switch (weight) {
        case DType::F32: return single_row<dot_float<DType::F32, 1>>;
        case DType::F16: return single_row<dot_float<DType::F16, 1>>;
        case DType::BF16: return single_row<dot_float<DType::BF16, 1>>;
        case DType::Q8_0: return single_row<dot_block_sums<BlockQ8_0, 1>>;
        case DType::Q4_0: return single_row<dot_block_sums<BlockQ4_0, 1>>;
        case DType::Q4_1: return single_row<dot_block32<BlockQ4_1, 1>>;
        case DType::Q5_0: return single_row<dot_block_sums<BlockQ5_0, 1>>;
        case DType::Q5_1: return single_row<dot_block32<BlockQ5_1, 1>>;
        case DType::Q1_0: return single_row<dot_q1_0<1>>;
        default: return avx2_kquant_kernel(weight);
    }
}

// Row counts per group. Decoding streams every weight once from DRAM, and there one row
// at a time beats groups that read several rows side by side: measured on the 2-core
// EPYC (bench_kernels vec_dot_rows, 151936 x 1024, one thread), F16 8.4 -> 15 GB/s,
// BF16 7.0 -> 13.7, Q8_0 7.2 -> 13.2-13.7 (its single row sums eight blocks' lanes at
// once), Q5_0 7.1 -> 9.5-10, and end to end SmolLM2-135M F16 decode 21 -> 47-78 tokens/s.
// Q4_0 and Q1_0 keep their groups: their single-row kernels are bound by arithmetic
// (nibble unpacking; 1-bit expansion) and lose more than the memory side gains. F32 takes
// groups of four, its prefetches walking the group's span (prefetch_rows) as the other
// groups' do: each row asking for its own bytes held F32 from DRAM at 13.5-14.8 GB/s (Zen 4,
// one thread, 4096 x 4096, 151936 x 1024, 16384 x 4096); linear with pairs 15.5-20.4,
// with fours 16.0-21.5.
// Q5_0 is bound by arithmetic as Q4_0 is: groups of eight rows share each activation
// block and its offset term (with AVX-512 its levels are one masked add, avx2_blocks.h).
// Measured on the 2-core Sapphire Rapids (bench_kernels vec_dot_rows, one thread):
// 576 x 1536 4.6 -> 10.0 GB/s, 4096 x 4096 4.9 -> 8.6, 151936 x 1024 4.7 -> 7.1 (the
// new levels and the groups together; the new levels with single rows: 7.2, 5.4, 6.1).
// Rechecked on a 2-core Zen 5 EPYC (2026-12-04, same benchmark): groups of eight 26.9,
// 25.6, 19.5 GB/s against single rows 16.2, 15.7, 15.5, so the groups stay. Q8_0 groups
// of eight measured there: 2x in L2, equal from DRAM (single rows were kept then).
// Groups prefetch their rows' span linearly (prefetch_rows): with per-row prefetches a
// Zen 4 held groups of short rows from DRAM to half the single-row rate (151936 x 1024:
// Q4_0 9.5 -> 20.1 GB/s, Q5_0 9.4 -> 18.3; 16384 x 4096: Q4_0 11-12.5 -> 15-16). Q8_0's
// groups there, even so: 37 GB/s in L2 against 21, but 15-18 from DRAM against 19-20;
// pairs 23.7 / 21.7-22.5 (short rows) / 18.5-20.2 (long rows) against 21 / 18-19 / 18-19,
// fours 26 in L2 but 13.5-15 for long rows from DRAM: Q8_0 takes pairs.
// Without AVX-512 (levels by shuffle and or) Q5_0 is bound by arithmetic all the more:
// x86-64-v3 build on the Zen 4 (2026-12-05), one thread, groups of eight against single
// rows: 576 x 1536 13.8 against 8.1 GB/s, 4096 x 4096 13.7 / 8.0, 151936 x 1024 12.9 /
// 7.8, 16384 x 4096 12.1 / 8.3.
// Q8_0 on Intel (cpu_tuning.h) in groups of eight, with the L2 prefetches: decode with 2
// threads on a 2-core AMX Xeon under KVM, three alternations, against pairs with L1
// prefetches (the AMD tuning) and pairs with L2: Qwen3-0.6B shape 18.6-19.3 tokens/s
// against 15.9-16.3 and 16.6-16.9, SmolLM2-135M shape 138-155 against 127-139 and
// 115-123, stories15M 1867-2114 against 1730-1799 and 1335-1942.
constexpr VecDotRowsFn kQ8Eights = row_groups<8, dot_block_sums<BlockQ8_0, 8>, dot_block_sums<BlockQ8_0, 1>>;

VecDotRowsFn avx2_rows_kernel(DType weight) {
    switch (weight) {
        case DType::F32: return row_groups<4, dot_float<DType::F32, 4>, dot_float<DType::F32, 1>>;
        case DType::F16: return row_groups<1, dot_float<DType::F16, 1>, dot_float<DType::F16, 1>>;
        case DType::BF16: return row_groups<1, dot_float<DType::BF16, 1>, dot_float<DType::BF16, 1>>;
        case DType::Q8_0:
            if (cpu_tuning().q8_0_rows_in_eights) return kQ8Eights;
            return row_groups<2, dot_block_sums_rows<BlockQ8_0, 2>, dot_block_sums<BlockQ8_0, 1>>;
        case DType::Q4_0: return kQ4RowGroup;
        case DType::Q4_1: return row_groups<1, dot_block32<BlockQ4_1, 1>, dot_block32<BlockQ4_1, 1>>;
        case DType::Q5_0: return kQ5RowGroup;
        case DType::Q5_1: return row_groups<1, dot_block32<BlockQ5_1, 1>, dot_block32<BlockQ5_1, 1>>;
        case DType::Q1_0: return kQ1RowGroup;
        default: return avx2_kquant_rows_kernel(weight);
    }
}

}  // namespace inlay::quant::detail

#else  // no AVX2: the dispatcher falls back to the reference kernels

namespace inlay::quant::detail {
VecDotFn avx2_kernel(DType) { return nullptr; }
VecDotRowsFn avx2_rows_kernel(DType) { return nullptr; }
VecDotFn avx2_kquant_kernel(DType) { return nullptr; }
VecDotTileFn avx2_kquant_tile_kernel(DType) { return nullptr; }
VecDotRowsFn avx2_kquant_rows_kernel(DType) { return nullptr; }
}  // namespace inlay::quant::detail

#endif
