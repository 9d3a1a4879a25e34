// Q8_0 and Q8_1 activation quantizers as llama.cpp's x86 CPU backend runs them
// (quantize_row_q8_0 / quantize_row_q8_1 in ggml-cpu/arch/x86/quants.c, and the 4-row
// variant its repacked Q4_0 matmul uses), written in plain C++. They differ from the
// reference quantizers that write model files (codec_basic.cpp, codec_legacy.cpp) in two
// ways that change bytes:
//   - the multiplier is 127 / amax, not 1 / (amax / 127): the two floats differ by an
//     ulp for some amax;
//   - x * multiplier is rounded half to even (vroundps), not half away from zero (roundf).
// Everything else is the same: d = amax / 127 stored as f16 and, for Q8_1,
// s = f16(d * sum of the quants).
//
// The emulation is exact for every input, non-finite included: the block maximum is
// reduced in the SIMD code's lane order with maxps semantics (which decide what a NaN
// does), and the conversion to int8 saturates as cvtps2dq + packs do (NaN -> INT32_MIN
// -> -128).
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/half.h"
#include "quant/row_codecs.h"

namespace inlay::quant::detail {
namespace {

// maxps / maxss: the first operand if it is greater, else the second (so a NaN in
// either operand gives the second).
inline float max_ps(float a, float b) { return a > b ? a : b; }

// max |x[i]| over 32 elements, reduced as the AVX code does: four vectors of eight lanes
// folded lane-wise, then the high half onto the low half, then pairs.
float block_amax(const float* x) {
    float lane[8];
    for (int j = 0; j < 8; ++j) lane[j] = std::fabs(x[j]);
    for (int k = 1; k < 4; ++k) {
        for (int j = 0; j < 8; ++j) lane[j] = max_ps(lane[j], std::fabs(x[8 * k + j]));
    }
    float quad[4];
    for (int j = 0; j < 4; ++j) quad[j] = max_ps(lane[j + 4], lane[j]);
    const float pair0 = max_ps(quad[0], quad[2]);
    const float pair1 = max_ps(quad[1], quad[3]);
    return max_ps(pair0, pair1);
}

// vroundps (nearest even) then vcvtps2dq: INT32_MIN for NaN and out-of-range values.
inline int32_t round_to_i32(float v) {
    const float r = std::nearbyint(v);
    if (!(r >= -2147483648.0f && r < 2147483648.0f)) return std::numeric_limits<int32_t>::min();
    return static_cast<int32_t>(r);
}

// packssdw + packsswb: signed saturation to int8.
inline int8_t saturate_i8(int32_t v) {
    if (v < -128) return -128;
    if (v > 127) return 127;
    return static_cast<int8_t>(v);
}

// The quants of one 32-element block and the (wrapping) int32 sum of the unsaturated
// values, which is what the Q8_1 code sums.
int32_t quantize_block(const float* x, float amax, int8_t* qs) {
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    uint32_t sum = 0;
    for (int i = 0; i < 32; ++i) {
        const int32_t v = round_to_i32(x[i] * id);
        sum += static_cast<uint32_t>(v);
        qs[i] = saturate_i8(v);
    }
    return static_cast<int32_t>(sum);
}

}  // namespace

void quantize_activations_q8_0(const float* x, BlockQ8_0* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK8_0; ++b, x += kQK8_0) {
        const float amax = block_amax(x);
        y[b].d = f32_to_f16(amax / 127.0f);
        quantize_block(x, amax, y[b].qs);
    }
}

void quantize_activations_q8_1(const float* x, BlockQ8_1* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK8_1; ++b, x += kQK8_1) {
        const float amax = block_amax(x);
        const float d = amax / 127.0f;
        y[b].d = f32_to_f16(d);
        const int32_t sum = quantize_block(x, amax, y[b].qs);
        y[b].s = f32_to_f16(d * static_cast<float>(sum));
    }
}

}  // namespace inlay::quant::detail
