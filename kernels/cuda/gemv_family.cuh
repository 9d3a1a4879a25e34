// Launching gemv_kernel<F, NT> with NT the smallest of 1, 2, 4, 8 >= n_tokens; included
// by the per-family .cu files, which instantiate it for their formats.
#pragma once

#include "gemv.cuh"
#include "launch_util.h"

namespace inlay::cuda::detail {

template <class F>
cudaError_t launch_gemv(const dev::GemvArgs& a, cudaStream_t stream) {
    const dim3 grid(blocks_for(a.n_rows, dev::kGemvWarps));
    const dim3 block(dev::kGemvThreads);
    if (a.n_tokens <= 1)
        dev::gemv_kernel<F, 1><<<grid, block, 0, stream>>>(a);
    else if (a.n_tokens <= 2)
        dev::gemv_kernel<F, 2><<<grid, block, 0, stream>>>(a);
    else if (a.n_tokens <= 4)
        dev::gemv_kernel<F, 4><<<grid, block, 0, stream>>>(a);
    else
        dev::gemv_kernel<F, 8><<<grid, block, 0, stream>>>(a);
    return launch_status();
}

}  // namespace inlay::cuda::detail
