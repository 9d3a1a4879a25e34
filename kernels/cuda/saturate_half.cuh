// Float to IEEE binary16 for GEMM operands: nearest even, finite values beyond the range
// saturate at +-65504 (an infinity would poison a whole GEMM row), NaN stays NaN.
#pragma once

#include <cuda_fp16.h>

namespace inlay::cuda::dev {

__device__ __forceinline__ __half saturate_to_f16(float v) {
    if (v != v) return __float2half_rn(v);  // fminf/fmaxf would turn NaN into a bound
    return __float2half_rn(fminf(fmaxf(v, -65504.0f), 65504.0f));
}

}  // namespace inlay::cuda::dev
