// Dot products of one weight row with one activation row, the inner loop of every
// matrix-vector product on the CPU.
//
// As in llama.cpp, a quantized weight type is multiplied with activations quantized to
// a partner type (vec_dot_type), so the inner loop runs on integers: Q8_0, Q4_0, Q5_0
// and Q1_0 pair with Q8_0; Q4_1 and Q5_1 with Q8_1; Q4_K, Q5_K and Q6_K with Q8_K. Float
// types pair with themselves.
//
// All functions are thread-safe (no shared state); pointers are borrowed for the call.
// Rows need the alignment of their block type (2 bytes; 4 for Q8_K, F32 and float rows).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/dtype.h"

namespace inlay::quant {

// The activation type a weight of `weight` type is multiplied with. Throws
// INLAY_ERR_UNSUPPORTED for Q8_1 and Q8_K (activation types only).
DType vec_dot_type(DType weight);

// Converts one activation row of n floats to `act_type` (one of the vec_dot_type
// results); writes row_bytes(act_type, n) bytes, exactly the bytes llama.cpp's x86 CPU
// backend computes at run time (with or without AVX2 in this build):
//   Q8_0, Q8_1: d = amax / 127 (f16), quants round_half_even(x * (127 / amax)), where
//     quantize_row (llama-quantize's reference) computes round_half_away(x * (1 / d))
//     with d unrounded. A quant therefore differs from quantize_row's by at most 1, and
//     only where x * 127 / amax is within a few ulps of a half-integer. Q8_1's
//     s = f16(d * sum of quants) follows its quants.
//   Q8_K, F16, BF16, F32: the same bytes as quantize_row (llama.cpp uses its reference
//     Q8_K quantizer at run time, and round-to-nearest-even f16 / bf16 conversions).
// Quants lie in -127..127 for finite input. Uses AVX2 when the build targets it.
// Throws INLAY_ERR_INVALID_ARGUMENT for a bad n or null pointer.
void quantize_activations(DType act_type, const float* x, void* out, int64_t n);
// The same bytes from plain scalar C++ (the specification of the SIMD path): for tests.
void quantize_activations_reference(DType act_type, const float* x, void* out, int64_t n);

// *result = dot(w_row, x_row) over n elements, x_row in vec_dot_type(weight).
// Preconditions (unchecked, for speed): n > 0 is a multiple of the block size, the
// activation quants are in -127..127 (as quantize_activations writes them).
using VecDotFn = void (*)(int64_t n, float* result, const void* w_row, const void* x_row);

// The fastest kernel this build has (AVX2+FMA+F16C when compiled for it). Throws
// INLAY_ERR_UNSUPPORTED for Q8_1 and Q8_K.
VecDotFn vec_dot_kernel(DType weight);
// Plain scalar C++ kernels (the same integer arithmetic, no intrinsics): for tests. For
// Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and Q1_0 both kernels follow one float order, so their
// results equal each other bitwise; other types differ in the order of float additions.
// The order is llama.cpp's x86 kernels' (Q4_0: its repacked ones), so those results also
// equal llama.cpp's bitwise, except Q8_0's: Q8_0 sums like Q4_0 (one float fused with
// each block's whole integer dot), which matrix units (AMX) compute natively.
VecDotFn vec_dot_kernel_reference(DType weight);

// result[r] = dot(w + r * w_stride bytes, x_row) for r < n_rows; x_row in
// vec_dot_type(weight). Several rows are processed together where that saves loads;
// each result is bitwise equal to vec_dot_kernel(weight)'s for that row, so results do
// not depend on how callers split rows (e.g. across threads).
// Throws INLAY_ERR_INVALID_ARGUMENT if n is not a positive multiple of the block size,
// n_rows is negative, or a pointer is null while n_rows > 0.
void vec_dot_rows(DType weight, int64_t n, int64_t n_rows, float* result, const void* w, size_t w_stride,
                  const void* x_row);

// Activations of a matrix product prepared once for the matrix-unit tile kernels (AMX on
// x86, for Q8_0 and K-quant weights): the tokens' quants regrouped into the layout a tile load
// reads; for F16 / BF16 weights with AVX-512, the activations widened to f32; for Q8_0,
// Q4_0, Q5_0 and Q1_0 weights with AVX-512 VNNI and enough tokens, the quants made
// unsigned for the sixteen-row tiles (which vec_dot_tile chooses by the same rule). Empty where this CPU, the weight type or a single token has no
// use for it.
// Holds its own copy: x may change or go away afterwards.
class TilePack {
public:
    TilePack() = default;
    // x: n_tokens rows of vec_dot_type(weight), x_stride bytes apart.
    TilePack(DType weight, int64_t n, int64_t n_tokens, const void* x, size_t x_stride);
    // The same for other activations, reusing this pack's memory (a workspace keeps one
    // pack for every matmul, so the step path does not allocate once it has grown).
    void assign(DType weight, int64_t n, int64_t n_tokens, const void* x, size_t x_stride);
    [[nodiscard]] bool empty() const { return bytes_.empty(); }

private:
    friend void vec_dot_tile(DType, int64_t, int64_t, int64_t, float*, size_t, const void*, size_t, const void*, size_t,
                             const TilePack*);
    friend void vec_dot_interleaved(DType, int64_t, int64_t, int64_t, float*, size_t, const void*, const void*, size_t,
                                    const TilePack*);
    // Throws INLAY_ERR_INVALID_ARGUMENT (naming `caller`) unless this pack was made for
    // n_tokens tokens of n `weight` activations.
    void require_made_for(DType weight, int64_t n, int64_t n_tokens, const char* caller) const;
    DType weight_ = DType::F32;
    int64_t n_ = 0;
    int64_t n_tokens_ = 0;
    bool widened_ = false;  // bytes_ holds f32 activations (16-bit float weights)
    std::vector<std::byte> bytes_;
};

// Products of up to this many tokens (a few sequences decoding, a verification of a few
// proposals) are bound by reading the weights, as one token's is: callers stream the
// matrix in long runs of rows (CpuBackend::matmul), and vec_dot_tile takes the tiles that
// prefetch their rows (kernels.h). Larger batches are bound by arithmetic.
inline constexpr int64_t kStreamedTokens = 8;

// Several tokens at once: result[t * result_stride + r] = dot(w + r * w_stride bytes,
// x + t * x_stride bytes) for r < n_rows and t < n_tokens; activation rows in
// vec_dot_type(weight). Where the type has a tile kernel, each weight block is loaded
// and unpacked once for several tokens (and each activation block once for several
// rows), which is what makes a batch of tokens cheaper than its tokens one by one. Each
// result is bitwise equal to vec_dot_kernel(weight)'s for its row and token, so a
// token's result does not depend on the other tokens of its batch.
// `pack`, when given, must be TilePack(weight, n, n_tokens, x, x_stride) of these
// activations: callers that run many row blocks over one batch build it once. Without
// it a matrix-unit kernel packs the activations itself on every call.
// Throws INLAY_ERR_INVALID_ARGUMENT as vec_dot_rows does, for a negative n_tokens, or
// for a pack made for another type, length or token count.
void vec_dot_tile(DType weight, int64_t n, int64_t n_rows, int64_t n_tokens, float* result, size_t result_stride,
                  const void* w, size_t w_stride, const void* x, size_t x_stride, const TilePack* pack = nullptr);

}  // namespace inlay::quant
