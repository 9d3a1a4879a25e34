// SwiGLU: gate = silu(gate) * up, on two buffers or on one [gate | up] buffer per token.
#include "inlay_cuda_kernels.h"
#include "launch_util.h"

namespace inlay::cuda {
namespace {

constexpr int kThreads = 256;
constexpr long long kMaxBlocks = 65536;  // grid-stride beyond

// silu(g) * u = g / (1 + expf(-g)) * u (IEEE division; expf to within 2 ulp).
__device__ __forceinline__ float silu_mul(float g, float u) {
    return g / (1.0f + expf(-g)) * u;
}

__global__ void __launch_bounds__(kThreads) swiglu_kernel(float* gate, const float* up, long long n, bool vec) {
    const long long stride = static_cast<long long>(gridDim.x) * kThreads;
    const long long first = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x;
    long long done = 0;
    if (vec) {
        float4* g4 = reinterpret_cast<float4*>(gate);
        const float4* u4 = reinterpret_cast<const float4*>(up);
        const long long n4 = n / 4;
        for (long long i = first; i < n4; i += stride) {
            float4 g = g4[i];
            const float4 u = __ldg(u4 + i);
            g.x = silu_mul(g.x, u.x);
            g.y = silu_mul(g.y, u.y);
            g.z = silu_mul(g.z, u.z);
            g.w = silu_mul(g.w, u.w);
            g4[i] = g;
        }
        done = n4 * 4;
    }
    for (long long i = done + first; i < n; i += stride) gate[i] = silu_mul(gate[i], __ldg(up + i));
}

// blockIdx.y (+ gridDim.y, ...) is the token, threads walk its n_ff columns.
__global__ void __launch_bounds__(kThreads)
    swiglu_fused_kernel(const float* gate_up, long long in_stride, long long n_tokens, long long n_ff, float* out,
                        long long out_stride) {
    for (long long t = blockIdx.y; t < n_tokens; t += gridDim.y) {
        const float* g = gate_up + t * in_stride;
        float* o = out + t * out_stride;
        for (long long j = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x; j < n_ff;
             j += static_cast<long long>(gridDim.x) * kThreads)
            o[j] = silu_mul(g[j], g[n_ff + j]);
    }
}

}  // namespace

cudaError_t swiglu(float* gate, const float* up, int64_t n, cudaStream_t stream) {
    if (!gate || !up || n < 0) return cudaErrorInvalidValue;
    if (n == 0) return cudaSuccess;
    const bool vec = detail::aligned(gate, 16) && detail::aligned(up, 16);
    const long long items = vec ? n / 4 + 4 : n;
    const unsigned blocks = detail::blocks_for(items < kMaxBlocks * kThreads ? items : kMaxBlocks * kThreads, kThreads);
    swiglu_kernel<<<blocks, kThreads, 0, stream>>>(gate, up, n, vec);
    return detail::launch_status();
}

cudaError_t swiglu_fused(const float* gate_up, int64_t in_stride, int64_t n_tokens, int64_t n_ff, float* out,
                         int64_t out_stride, cudaStream_t stream) {
    if (!gate_up || !out || n_tokens < 0 || n_ff < 0 || in_stride < 2 * n_ff || out_stride < n_ff)
        return cudaErrorInvalidValue;
    if (n_tokens == 0 || n_ff == 0) return cudaSuccess;
    const unsigned bx = detail::blocks_for(n_ff < kMaxBlocks * kThreads ? n_ff : kMaxBlocks * kThreads, kThreads);
    const dim3 grid(bx, static_cast<unsigned>(n_tokens < detail::kMaxGridYZ ? n_tokens : detail::kMaxGridYZ));
    swiglu_fused_kernel<<<grid, kThreads, 0, stream>>>(gate_up, in_stride, n_tokens, n_ff, out, out_stride);
    return detail::launch_status();
}

}  // namespace inlay::cuda
