// argmax_rows: the index of each row's largest value (greedy sampling on the device, so
// only token ids cross to the host).
#include "block_argmax.cuh"
#include "inlay_cuda_kernels.h"
#include "launch_util.h"

namespace inlay::cuda {
namespace {

constexpr int kThreads = 512;

// One CTA per row.
__global__ void __launch_bounds__(kThreads) argmax_kernel(const float* x, long long n_cols, long long x_stride,
                                                          int* ids) {
    const int at = dev::block_argmax<kThreads>(x + static_cast<long long>(blockIdx.x) * x_stride, n_cols);
    if (threadIdx.x == 0) ids[blockIdx.x] = at;
}

}  // namespace

cudaError_t argmax_rows(const float* x, int64_t n_rows, int64_t n_cols, int64_t x_stride, int32_t* ids,
                        cudaStream_t stream) {
    if (!x || !ids || n_rows < 0 || n_cols < 0 || x_stride < n_cols || n_cols >= dev::kArgmaxNone ||
        n_rows > detail::kMaxGridX)
        return cudaErrorInvalidValue;
    if (n_rows == 0) return cudaSuccess;
    argmax_kernel<<<static_cast<unsigned>(n_rows), kThreads, 0, stream>>>(x, n_cols, x_stride, ids);
    return detail::launch_status();
}

}  // namespace inlay::cuda
