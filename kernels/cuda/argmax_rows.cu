// argmax_rows: the index of each row's largest value (greedy sampling on the device, so
// only token ids cross to the host).
#include "device_common.cuh"
#include "inlay_cuda_kernels.h"
#include "launch_util.h"

namespace inlay::cuda {
namespace {

constexpr int kThreads = 512;
constexpr int kWarps = kThreads / 32;
constexpr int kNone = 0x7fffffff;  // no candidate yet (every value seen was NaN)

// (v, i) replaces (best, at) when it is larger, or equal at a smaller index; a candidate
// beats none at all. NaN never compares, so it is never taken.
__device__ __forceinline__ bool better(float v, int i, float best, int at) {
    return i != kNone && (at == kNone || v > best || (v == best && i < at));
}

// The warp's best candidate, in every lane.
__device__ __forceinline__ void warp_merge(float& best, int& at) {
#pragma unroll
    for (int off = 16; off >= 1; off >>= 1) {
        const float v = __shfl_xor_sync(dev::kFullMask, best, off);
        const int i = __shfl_xor_sync(dev::kFullMask, at, off);
        if (better(v, i, best, at)) {
            best = v;
            at = i;
        }
    }
}

// One CTA per row: each thread scans columns tid, tid + kThreads, ... in order, then the
// candidates meet in a butterfly within each warp and in warp 0 across warps. Every
// comparison is exact, so the result does not depend on the order of the merges.
__global__ void __launch_bounds__(kThreads) argmax_kernel(const float* x, long long n_cols, long long x_stride,
                                                          int* ids) {
    const float* row = x + static_cast<long long>(blockIdx.x) * x_stride;
    float best = -__int_as_float(0x7f800000);  // -inf
    int at = kNone;
    for (long long c = threadIdx.x; c < n_cols; c += kThreads) {
        const float v = __ldg(row + c);
        // Columns come in increasing order, so only a strictly larger value (or a first
        // value, -inf included) moves the candidate.
        if (v > best || (at == kNone && v == best)) {
            best = v;
            at = static_cast<int>(c);
        }
    }
    warp_merge(best, at);
    __shared__ float warp_best[kWarps];
    __shared__ int warp_at[kWarps];
    const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
    if (lane == 0) {
        warp_best[warp] = best;
        warp_at[warp] = at;
    }
    __syncthreads();
    if (warp == 0) {
        best = lane < kWarps ? warp_best[lane] : best;
        at = lane < kWarps ? warp_at[lane] : kNone;
        warp_merge(best, at);
        if (lane == 0) ids[blockIdx.x] = at == kNone ? -1 : at;
    }
}

}  // namespace

cudaError_t argmax_rows(const float* x, int64_t n_rows, int64_t n_cols, int64_t x_stride, int32_t* ids,
                        cudaStream_t stream) {
    if (!x || !ids || n_rows < 0 || n_cols < 0 || x_stride < n_cols || n_cols >= kNone ||
        n_rows > detail::kMaxGridX)
        return cudaErrorInvalidValue;
    if (n_rows == 0) return cudaSuccess;
    argmax_kernel<<<static_cast<unsigned>(n_rows), kThreads, 0, stream>>>(x, n_cols, x_stride, ids);
    return detail::launch_status();
}

}  // namespace inlay::cuda
