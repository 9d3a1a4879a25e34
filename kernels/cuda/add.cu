// x += y elementwise (the residual add of the last layer): one rounding per element, as
// x[i] + y[i] in f32.
#include <algorithm>

#include "inlay_cuda_kernels.h"
#include "launch_util.h"

namespace inlay::cuda {
namespace {

constexpr int kThreads = 256;
constexpr long long kMaxBlocks = 65536;  // grid-stride beyond

__global__ void __launch_bounds__(kThreads) add_kernel(float* x, const float* y, long long n) {
    const long long stride = static_cast<long long>(gridDim.x) * kThreads;
    for (long long i = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride)
        x[i] = x[i] + __ldg(y + i);
}

}  // namespace

cudaError_t add(float* x, const float* y, int64_t n, cudaStream_t stream) {
    if (n < 0 || (n > 0 && (!x || !y))) return cudaErrorInvalidValue;
    if (n == 0) return cudaSuccess;
    const long long blocks = std::min<long long>((n + kThreads - 1) / kThreads, kMaxBlocks);
    add_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(x, y, n);
    return detail::launch_status();
}

}  // namespace inlay::cuda
