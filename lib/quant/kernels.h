// Internal: the per-type dot kernels and activation quantizers behind vec_dot.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "quant/vec_dot.h"

namespace inlay::quant::detail {

// Scalar kernel of `weight`, or nullptr for a type without one (Q8_1, Q8_K).
VecDotFn reference_kernel(DType weight);

// Kernel using AVX2/FMA/F16C, or nullptr when the build does not target them.
VecDotFn avx2_kernel(DType weight);

// Multi-row AVX2 kernel: result[r] = dot(w + r*stride, x) for r < n_rows; nullptr when
// the build lacks AVX2 or the type has no multi-row variant.
using VecDotRowsFn = void (*)(int64_t n, int64_t n_rows, float* result, const void* w, size_t w_stride,
                              const void* x_row);
VecDotRowsFn avx2_rows_kernel(DType weight);

// AVX2 K-quant kernels (Q4_K, Q5_K, Q6_K; nullptr for other types or without AVX2).
VecDotFn avx2_kquant_kernel(DType weight);
VecDotRowsFn avx2_kquant_rows_kernel(DType weight);

// Kernels written as row groups: GroupFn<R>(n, result, w, w_stride, x) computes rows
// 0..R-1 (row r at w + r*w_stride) with per-row arithmetic that does not depend on R,
// so grouped and single-row results are bitwise equal.
using GroupFn = void (*)(int64_t n, float* result, const uint8_t* w, size_t w_stride, const void* x);

template <GroupFn K1>
void single_row(int64_t n, float* result, const void* w, const void* x) {
    K1(n, result, static_cast<const uint8_t*>(w), 0, x);
}

template <int G, GroupFn KG, GroupFn K1>
void row_groups(int64_t n, int64_t n_rows, float* result, const void* w, size_t w_stride, const void* x) {
    const auto* base = static_cast<const uint8_t*>(w);
    int64_t r = 0;
    for (; r + G <= n_rows; r += G) KG(n, result + r, base + static_cast<size_t>(r) * w_stride, w_stride, x);
    for (; r < n_rows; ++r) K1(n, result + r, base + static_cast<size_t>(r) * w_stride, w_stride, x);
}

// AVX2 activation quantizer writing the same bytes as quantize_activations_reference;
// returns false when the build lacks AVX2 or the type has no fast path (the caller
// falls back).
bool quantize_activations_avx2(DType act_type, const float* x, void* out, int64_t n);

}  // namespace inlay::quant::detail
