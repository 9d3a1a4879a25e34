// Internal: per-type row codecs behind quantize_row / dequantize_row. n is already
// validated (a non-negative multiple of the block size); pointers are non-null.
#pragma once

#include <cmath>
#include <cstdint>

#include "quant/blocks.h"

namespace inlay::quant::detail {

// Round to nearest, ties to even (the default FP environment), as llama.cpp's
// nearest_int does for |v| < 2^22.
inline int round_even(float v) { return static_cast<int>(std::nearbyint(v)); }

// Clamps v to [lo, hi]; NaN becomes lo (so that the int conversion is defined). Plain
// comparisons (not fmin / fmax, which GCC leaves as libm calls) keep the row loops fast.
inline float clamp_nan_low(float v, float lo, float hi) { return v >= lo ? (v <= hi ? v : hi) : lo; }

void quantize_q8_0(const float* x, BlockQ8_0* y, int64_t n);
void quantize_q8_1(const float* x, BlockQ8_1* y, int64_t n);
void quantize_q4_0(const float* x, BlockQ4_0* y, int64_t n);
void quantize_q4_1(const float* x, BlockQ4_1* y, int64_t n);
void quantize_q5_0(const float* x, BlockQ5_0* y, int64_t n);
void quantize_q5_1(const float* x, BlockQ5_1* y, int64_t n);
void quantize_q1_0(const float* x, BlockQ1_0* y, int64_t n);
void quantize_q8_k(const float* x, BlockQ8_K* y, int64_t n);
void quantize_q4_k(const float* x, BlockQ4_K* y, int64_t n);
void quantize_q5_k(const float* x, BlockQ5_K* y, int64_t n);
void quantize_q6_k(const float* x, BlockQ6_K* y, int64_t n);

void dequantize_q8_0(const BlockQ8_0* x, float* y, int64_t n);
void dequantize_q8_1(const BlockQ8_1* x, float* y, int64_t n);
void dequantize_q4_0(const BlockQ4_0* x, float* y, int64_t n);
void dequantize_q4_1(const BlockQ4_1* x, float* y, int64_t n);
void dequantize_q5_0(const BlockQ5_0* x, float* y, int64_t n);
void dequantize_q5_1(const BlockQ5_1* x, float* y, int64_t n);
void dequantize_q1_0(const BlockQ1_0* x, float* y, int64_t n);
void dequantize_q8_k(const BlockQ8_K* x, float* y, int64_t n);
void dequantize_q4_k(const BlockQ4_K* x, float* y, int64_t n);
void dequantize_q5_k(const BlockQ5_K* x, float* y, int64_t n);
void dequantize_q6_k(const BlockQ6_K* x, float* y, int64_t n);

// Activation quantizers with the arithmetic of llama.cpp's x86 CPU backend at run time
// (see quantize_activations in vec_dot.h), in plain C++: the specification of the AVX2
// versions, and the fallback of builds without AVX2.
void quantize_activations_q8_0(const float* x, BlockQ8_0* y, int64_t n);
void quantize_activations_q8_1(const float* x, BlockQ8_1* y, int64_t n);

}  // namespace inlay::quant::detail
