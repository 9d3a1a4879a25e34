// Internal: the per-type dot kernels and activation quantizers behind vec_dot.h.
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "quant/vec_dot.h"

namespace inlay::quant::detail {

// Scalar kernel of `weight`, or nullptr for a type without one (Q8_K).
VecDotFn reference_kernel(DType weight);

// Kernel using AVX2/FMA/F16C, or nullptr when the build does not target them.
VecDotFn avx2_kernel(DType weight);

// Multi-row AVX2 kernel: result[r] = dot(w + r*stride, x) for r < n_rows; nullptr when
// the build lacks AVX2 or the type has no multi-row variant.
using VecDotRowsFn = void (*)(int64_t n, int64_t n_rows, float* result, const void* w, size_t w_stride,
                              const void* x_row);
VecDotRowsFn avx2_rows_kernel(DType weight);

// AVX2 activation quantizer writing the same bytes as quantize_row; returns false when
// the build lacks AVX2 or the type has no fast path (the caller falls back).
bool quantize_activations_avx2(DType act_type, const float* x, void* out, int64_t n);

}  // namespace inlay::quant::detail
