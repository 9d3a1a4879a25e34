// AVX2/FMA/F16C dot kernels of the float types and the 32-element block types (the
// K-quants are in vec_dot_avx2_kquants.cpp). Quantized types multiply 8-bit integers
// (maddubs/madd, or VNNI's dpbusd when the build has AVX512-VNNI) and apply the float
// scales once per block, like the scalar reference kernels; only the order of the float
// additions differs.
//
// Every kernel is a row-group template: R weight rows share each activation load, and
// each row keeps two or four independent accumulators (hiding FMA latency). A row's
// arithmetic is the same whatever R is, so vec_dot_rows equals single-row calls bitwise.
#include "quant/kernels.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <type_traits>

#include "core/half.h"
#include "quant/blocks.h"
#include "quant/simd_avx2.h"

namespace inlay::quant::detail {
namespace {

using namespace simd;

template <class T>
const T* row_as(const uint8_t* w, size_t stride, int r) {
    return static_cast<const T*>(static_cast<const void*>(w + static_cast<size_t>(r) * stride));
}

// ---------------------------------------------------------------- float types

// Eight elements of a float type widened to f32, and one element for the tail.
template <DType T>
struct FloatElem;
template <>
struct FloatElem<DType::F32> {
    using type = float;
    static __m256 load(const float* p) { return _mm256_loadu_ps(p); }
    static float scalar(float v) { return v; }
};
template <>
struct FloatElem<DType::F16> {
    using type = uint16_t;
    static __m256 load(const uint16_t* p) { return _mm256_cvtph_ps(load16(p)); }
    static float scalar(uint16_t v) { return f16_to_f32(v); }
};
template <>
struct FloatElem<DType::BF16> {
    using type = uint16_t;
    static __m256 load(const uint16_t* p) {
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(load16(p)), 16));
    }
    static float scalar(uint16_t v) { return bf16_to_f32(v); }
};

template <DType T, int R>
void dot_float(int64_t n, float* result, const uint8_t* w, size_t stride, const void* x_row) {
    using E = FloatElem<T>;
    using Elem = typename E::type;
    constexpr int U = 4;  // accumulators per row
    const auto* x = static_cast<const Elem*>(x_row);
    const Elem* wr[R];
    __m256 acc[R][U];
    for (int r = 0; r < R; ++r) {
        wr[r] = row_as<Elem>(w, stride, r);
        for (int u = 0; u < U; ++u) acc[r][u] = _mm256_setzero_ps();
    }
    int64_t i = 0;
    for (; i + 8 * U <= n; i += 8 * U) {
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
        float sum = hsum(_mm256_add_ps(_mm256_add_ps(acc[r][0], acc[r][1]), _mm256_add_ps(acc[r][2], acc[r][3])));
        for (int64_t j = i; j < n; ++j) sum += E::scalar(wr[r][j]) * E::scalar(x[j]);
        result[r] = sum;
    }
}

// ---------------------------------------------------------------- Q8_0, Q4_0, Q1_0

// The 32 levels of a Q4_0 block in element order, as stored (0..15; the value is level - 8).
inline __m256i q4_0_nibbles(const uint8_t* qs) {
    const __m128i raw = load16(qs);
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(15));
}

// Integer dot of one weight block with activation quants xq: Q8_0 multiplies signed
// bytes; Q4_0 multiplies its unsigned nibbles and starts from -8 * sum(x) (`offset`,
// computed once per activation block and shared by all rows).
inline __m256i block_dot(const BlockQ8_0& b, __m256i xq, __m256i) { return dot_i8_i8(load32(b.qs), xq); }
inline __m256i block_dot(const BlockQ4_0& b, __m256i xq, __m256i offset) {
    return dot_u8_i8_add(offset, q4_0_nibbles(b.qs), xq);
}

// Q8_0 and Q4_0 (both against Q8_0 activations): block b goes to accumulator b % 2.
template <class Block, int R>
void dot_block32(int64_t n, float* result, const uint8_t* w, size_t stride, const void* x_row) {
    constexpr int A = 2;
    constexpr bool kOffset = std::is_same_v<Block, BlockQ4_0>;
    const auto* x = static_cast<const BlockQ8_0*>(x_row);
    const Block* wr[R];
    __m256 acc[R][A];
    for (int r = 0; r < R; ++r) {
        wr[r] = row_as<Block>(w, stride, r);
        for (int a = 0; a < A; ++a) acc[r][a] = _mm256_setzero_ps();
    }
    const int64_t nb = n / kQK8_0;
    auto step = [&](int64_t b, int a) {
        const __m256i xq = load32(x[b].qs);
        __m256i offset = _mm256_setzero_si256();
        if constexpr (kOffset) offset = _mm256_sub_epi32(offset, dot_u8_i8(_mm256_set1_epi8(8), xq));
        const float dx = f16_to_f32(x[b].d);
        for (int r = 0; r < R; ++r) {
            const __m256i p = block_dot(wr[r][b], xq, offset);
            acc[r][a] = _mm256_fmadd_ps(_mm256_set1_ps(f16_to_f32(wr[r][b].d) * dx), _mm256_cvtepi32_ps(p), acc[r][a]);
        }
    };
    int64_t b = 0;
    for (; b + A <= nb; b += A) {
        step(b, 0);
        step(b + 1, 1);
    }
    if (b < nb) step(b, 0);
    for (int r = 0; r < R; ++r) result[r] = hsum(_mm256_add_ps(acc[r][0], acc[r][1]));
}

// Q1_0 against Q8_0: each 128-weight block meets four activation blocks. With b_i the
// weight bits, sum (b_i ? x_i : -x_i) = sum 2*b_i*x_i - sum x_i: an unsigned-by-signed
// dot of bytes {0, 2} with x, started from -sum(x) (computed once per activation block
// and shared by all rows). Sub-block k goes to accumulator k % 2.
template <int R>
void dot_q1_0(int64_t n, float* result, const uint8_t* w, size_t stride, const void* x_row) {
    constexpr int A = 2;
    constexpr int K = kQK1_0 / kQK8_0;
    const auto* x = static_cast<const BlockQ8_0*>(x_row);
    const BlockQ1_0* wr[R];
    __m256 acc[R][A];
    for (int r = 0; r < R; ++r) {
        wr[r] = row_as<BlockQ1_0>(w, stride, r);
        for (int a = 0; a < A; ++a) acc[r][a] = _mm256_setzero_ps();
    }
    const __m256i ones = _mm256_set1_epi8(1);
    for (int64_t b = 0; b < n / kQK1_0; ++b) {
        __m256i bits[R];
        float dw[R];
        for (int r = 0; r < R; ++r) {
            bits[r] = _mm256_broadcastsi128_si256(load16(wr[r][b].qs));
            dw[r] = f16_to_f32(wr[r][b].d);
        }
        auto sub_block = [&]<int k>() {
            const BlockQ8_0& xb = x[b * K + k];
            const __m256i xq = load32(xb.qs);
            const __m256i neg_sum = _mm256_sub_epi32(_mm256_setzero_si256(), dot_u8_i8(ones, xq));
            const float dx = f16_to_f32(xb.d);
            for (int r = 0; r < R; ++r) {
                const __m256i p = dot_u8_i8_add(neg_sum, bits_to_twos<k>(bits[r]), xq);
                acc[r][k % A] = _mm256_fmadd_ps(_mm256_set1_ps(dw[r] * dx), _mm256_cvtepi32_ps(p), acc[r][k % A]);
            }
        };
        sub_block.template operator()<0>();
        sub_block.template operator()<1>();
        sub_block.template operator()<2>();
        sub_block.template operator()<3>();
    }
    for (int r = 0; r < R; ++r) result[r] = hsum(_mm256_add_ps(acc[r][0], acc[r][1]));
}

}  // namespace

VecDotFn avx2_kernel(DType weight) {
    switch (weight) {
        case DType::F32: return single_row<dot_float<DType::F32, 1>>;
        case DType::F16: return single_row<dot_float<DType::F16, 1>>;
        case DType::BF16: return single_row<dot_float<DType::BF16, 1>>;
        case DType::Q8_0: return single_row<dot_block32<BlockQ8_0, 1>>;
        case DType::Q4_0: return single_row<dot_block32<BlockQ4_0, 1>>;
        case DType::Q1_0: return single_row<dot_q1_0<1>>;
        default: return avx2_kquant_kernel(weight);
    }
}

VecDotRowsFn avx2_rows_kernel(DType weight) {
    switch (weight) {
        case DType::F32: return row_groups<2, dot_float<DType::F32, 2>, dot_float<DType::F32, 1>>;
        case DType::F16: return row_groups<2, dot_float<DType::F16, 2>, dot_float<DType::F16, 1>>;
        case DType::BF16: return row_groups<2, dot_float<DType::BF16, 2>, dot_float<DType::BF16, 1>>;
        case DType::Q8_0: return row_groups<4, dot_block32<BlockQ8_0, 4>, dot_block32<BlockQ8_0, 1>>;
        case DType::Q4_0: return row_groups<4, dot_block32<BlockQ4_0, 4>, dot_block32<BlockQ4_0, 1>>;
        case DType::Q1_0: return row_groups<4, dot_q1_0<4>, dot_q1_0<1>>;
        default: return avx2_kquant_rows_kernel(weight);
    }
}

}  // namespace inlay::quant::detail

#else  // no AVX2: the dispatcher falls back to the reference kernels

namespace inlay::quant::detail {
VecDotFn avx2_kernel(DType) { return nullptr; }
VecDotRowsFn avx2_rows_kernel(DType) { return nullptr; }
VecDotFn avx2_kquant_kernel(DType) { return nullptr; }
VecDotRowsFn avx2_kquant_rows_kernel(DType) { return nullptr; }
}  // namespace inlay::quant::detail

#endif
