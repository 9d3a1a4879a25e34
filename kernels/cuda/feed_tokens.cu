// A pipelined step's tokens that the step before chose on the device (argmax_rows or
// sample_rows): copied from its ids before the embedding reads them, so a decoding
// sequence's next token never goes through the host.
#include <algorithm>

#include "inlay_cuda_kernels.h"
#include "launch_util.h"

namespace inlay::cuda {
namespace {

constexpr int kThreads = 128;

__global__ void __launch_bounds__(kThreads)
    feed_tokens_kernel(int32_t* tokens, const int32_t* fed_rows, long long n, const int32_t* ids) {
    const long long stride = static_cast<long long>(gridDim.x) * kThreads;
    for (long long i = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride) {
        const int32_t row = fed_rows[i];
        if (row >= 0) tokens[i] = max(ids[row], 0);
    }
}

}  // namespace

cudaError_t feed_tokens(int32_t* tokens, const int32_t* fed_rows, int64_t n_tokens, const int32_t* ids,
                        cudaStream_t stream) {
    if (n_tokens < 0 || (n_tokens > 0 && (!tokens || !fed_rows || !ids))) return cudaErrorInvalidValue;
    if (n_tokens == 0) return cudaSuccess;
    const long long blocks = std::min<long long>((n_tokens + kThreads - 1) / kThreads, 1024);
    feed_tokens_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(tokens, fed_rows, n_tokens, ids);
    return detail::launch_status();
}

}  // namespace inlay::cuda
