// Dot products of one weight row with one activation row, the inner loop of every
// matrix-vector product on the CPU.
//
// As in llama.cpp, a quantized weight type is multiplied with activations quantized to
// a partner type (vec_dot_type), so the inner loop runs on integers: Q8_0, Q4_0 and
// Q1_0 pair with Q8_0; Q4_K, Q5_K and Q6_K with Q8_K. Float types pair with themselves.
//
// All functions are thread-safe (no shared state); pointers are borrowed for the call.
// Rows need the alignment of their block type (2 bytes; 4 for Q8_K, F32 and float rows).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace inlay::quant {

// The activation type a weight of `weight` type is multiplied with. Throws
// INLAY_ERR_UNSUPPORTED for Q8_K (an activation type only).
DType vec_dot_type(DType weight);

// Converts one activation row of n floats to `act_type` (one of the vec_dot_type
// results); writes row_bytes(act_type, n) bytes. The output is byte-identical to
// quantize_row(act_type, ...): Q8_0 and Q8_K quants lie in -127..127. Uses AVX2 when
// the build targets it. Throws INLAY_ERR_INVALID_ARGUMENT for a bad n or null pointer.
void quantize_activations(DType act_type, const float* x, void* out, int64_t n);

// *result = dot(w_row, x_row) over n elements, x_row in vec_dot_type(weight).
// Preconditions (unchecked, for speed): n > 0 is a multiple of the block size, the
// activation quants are in -127..127 (as quantize_activations writes them).
using VecDotFn = void (*)(int64_t n, float* result, const void* w_row, const void* x_row);

// The fastest kernel this build has (AVX2+FMA+F16C when compiled for it). Throws
// INLAY_ERR_UNSUPPORTED for Q8_K.
VecDotFn vec_dot_kernel(DType weight);
// Plain scalar C++ kernels (the same integer arithmetic, no intrinsics): for tests.
VecDotFn vec_dot_kernel_reference(DType weight);

// result[r] = dot(w + r * w_stride bytes, x_row) for r < n_rows; x_row in
// vec_dot_type(weight). Several rows are processed together where that saves loads;
// each result is bitwise equal to vec_dot_kernel(weight)'s for that row, so results do
// not depend on how callers split rows (e.g. across threads).
// Throws INLAY_ERR_INVALID_ARGUMENT if n is not a positive multiple of the block size,
// n_rows is negative, or a pointer is null while n_rows > 0.
void vec_dot_rows(DType weight, int64_t n, int64_t n_rows, float* result, const void* w, size_t w_stride,
                  const void* x_row);

}  // namespace inlay::quant
