// The CTA-wide argmax of one row (argmax_rows, and sample_rows' greedy rows): the first
// index of the largest value, NaN never, -1 when every value is NaN. Every comparison is
// exact, so the result does not depend on the order of the merges.
#pragma once

#include "device_common.cuh"

namespace inlay {
namespace cuda {
namespace dev {

constexpr int kArgmaxNone = 0x7fffffff;  // no candidate yet (every value seen was NaN)

// (v, i) replaces (best, at) when it is larger, or equal at a smaller index; a candidate
// beats none at all. NaN never compares, so it is never taken.
__device__ __forceinline__ bool argmax_better(float v, int i, float best, int at) {
    return i != kArgmaxNone && (at == kArgmaxNone || v > best || (v == best && i < at));
}

// The warp's best candidate, in every lane.
__device__ __forceinline__ void argmax_warp_merge(float& best, int& at) {
#pragma unroll
    for (int off = 16; off >= 1; off >>= 1) {
        const float v = __shfl_xor_sync(kFullMask, best, off);
        const int i = __shfl_xor_sync(kFullMask, at, off);
        if (argmax_better(v, i, best, at)) {
            best = v;
            at = i;
        }
    }
}

// Called by every thread of a CTA of kThreads threads; the result is valid in thread 0.
// Each thread scans columns tid, tid + kThreads, ... in order, then the candidates meet
// in a butterfly within each warp and in warp 0 across warps. Plain loads: a caller may
// have written the row earlier in the same kernel.
template <int kThreads>
__device__ int block_argmax(const float* row, long long n_cols) {
    constexpr int kWarps = kThreads / 32;
    float best = neg_inf();
    int at = kArgmaxNone;
    for (long long c = threadIdx.x; c < n_cols; c += kThreads) {
        const float v = row[c];
        // Columns come in increasing order, so only a strictly larger value (or a first
        // value, -inf included) moves the candidate.
        if (v > best || (at == kArgmaxNone && v == best)) {
            best = v;
            at = static_cast<int>(c);
        }
    }
    argmax_warp_merge(best, at);
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
        at = lane < kWarps ? warp_at[lane] : kArgmaxNone;
        argmax_warp_merge(best, at);
    }
    return at == kArgmaxNone ? -1 : at;
}

}  // namespace dev
}  // namespace cuda
}  // namespace inlay
