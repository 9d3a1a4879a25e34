// round_to_half: float activations rounded to f16 or bf16 for a tensor-core GEMM.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "inlay_cuda_kernels.h"
#include "launch_util.h"
#include "saturate_half.cuh"

namespace inlay::cuda {
namespace {

constexpr int kThreads = 256;
constexpr long long kMaxBlocks = 65536;  // grid-stride beyond

// bf16 has float's range: plain rounding.
__device__ __forceinline__ void put(__half* p, float v) { *p = dev::saturate_to_f16(v); }
__device__ __forceinline__ void put(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }

template <class H>
__global__ void __launch_bounds__(kThreads) round_kernel(const float* x, long long n, H* out) {
    const long long stride = static_cast<long long>(gridDim.x) * kThreads;
    for (long long i = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride) {
        put(out + i, __ldg(x + i));
    }
}

}  // namespace

cudaError_t round_to_half(const float* x, int64_t n, HalfType type, void* out, cudaStream_t stream) {
    if (!x || !out || n < 0 || !detail::aligned(x, 4) || !detail::aligned(out, 2)) return cudaErrorInvalidValue;
    if (type != HalfType::f16 && type != HalfType::bf16) return cudaErrorInvalidValue;
    if (n == 0) return cudaSuccess;
    const unsigned blocks = detail::blocks_for(n < kMaxBlocks * kThreads ? n : kMaxBlocks * kThreads, kThreads);
    if (type == HalfType::f16) round_kernel<<<blocks, kThreads, 0, stream>>>(x, n, static_cast<__half*>(out));
    else round_kernel<<<blocks, kThreads, 0, stream>>>(x, n, static_cast<__nv_bfloat16*>(out));
    return detail::launch_status();
}

}  // namespace inlay::cuda
