// Reference (scalar) conversions between f32 rows and every element type of dtype.h.
//
// Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and Q1_0 follow llama.cpp's reference quantizers
// exactly, so their output is byte-identical to llama-quantize's (without an importance
// matrix), as do those of the activation types Q8_1 and Q8_K. Q4_K, Q5_K and Q6_K use inlay's
// own least-squares search of the scales and mins (comparable quality, not identical
// bytes). quantize_activations (vec_dot.h) is the run-time path for activations: for
// Q8_0 and Q8_1 its bytes differ from these (llama.cpp's CPU backend rounds differently).
//
// Thread-safe (no shared state). Non-finite inputs never crash but give unspecified
// blocks.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace inlay::quant {

// Writes the row_bytes(type, n) bytes of one row of n elements from src[0..n).
// Throws INLAY_ERR_INVALID_ARGUMENT if n is negative or not a multiple of the block
// size, or a pointer is null while n > 0.
void quantize_row(DType type, const float* src, void* dst, int64_t n);

// Decodes one row of n elements of `type` into dst[0..n). Same errors as quantize_row.
void dequantize_row(DType type, const void* src, float* dst, int64_t n);

}  // namespace inlay::quant
