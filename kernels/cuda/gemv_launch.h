// The gemv launchers of each format family (gemv_float.cu, gemv_block32.cu,
// gemv_kquant.cu); gemv.cpp validates the arguments and dispatches to them.
#pragma once

#include <cuda_runtime.h>

#include "gemv_args.h"
#include "inlay_cuda_kernels.h"

namespace inlay::cuda::detail {

// f32, f16, bf16
cudaError_t gemv_float(WeightFormat format, const dev::GemvArgs& args, cudaStream_t stream);
// q8_0, q4_0, q1_0
cudaError_t gemv_block32(WeightFormat format, const dev::GemvArgs& args, cudaStream_t stream);
// q4_k, q5_k, q6_k
cudaError_t gemv_kquant(WeightFormat format, const dev::GemvArgs& args, cudaStream_t stream);

}  // namespace inlay::cuda::detail
