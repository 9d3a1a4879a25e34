// rms_norm and the fused add_rms_norm: one CTA per row.
#include "device_common.cuh"
#include "inlay_cuda_kernels.h"
#include "launch_util.h"

namespace inlay::cuda {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;

struct RmsArgs {
    float* x;  // const unless ADD
    long long x_stride;
    const float* y;
    long long y_stride;
    const float* w;
    long long n_cols;
    float eps;
    float* out;
    long long out_stride;
    bool vec;  // every row pointer 16-byte aligned and n_cols % 4 == 0: float4 accesses
};

// Pass 1 (ADD: x += y, stored) sums the squares: thread i takes columns i, i + kThreads, ...
// (on the vec path groups of four: columns 4i..4i+3, 4(i + kThreads).., in column order),
// fmaf into one float; warp_sum; thread 0 adds the kWarps warp sums in warp order. Pass 2
// writes out = (x * scale) * w, scale = 1 / sqrtf(sum / n_cols + eps). Each thread
// re-reads in pass 2 exactly the columns it wrote in pass 1, so x may be out.
template <bool ADD>
__global__ void __launch_bounds__(kThreads) rms_norm_kernel(const RmsArgs a) {
    __shared__ float s_part[kWarps];
    __shared__ float s_scale;
    const long long r = blockIdx.x;
    const int tid = static_cast<int>(threadIdx.x);
    float* x = a.x + r * a.x_stride;
    float* o = a.out + r * a.out_stride;
    float ss = 0.0f;
    if (a.vec) {
        float4* x4 = reinterpret_cast<float4*>(x);
        const long long n4 = a.n_cols / 4;
        for (long long i = tid; i < n4; i += kThreads) {
            float4 v = x4[i];
            if constexpr (ADD) {
                const float4 yv = __ldg(reinterpret_cast<const float4*>(a.y + r * a.y_stride) + i);
                v.x += yv.x;
                v.y += yv.y;
                v.z += yv.z;
                v.w += yv.w;
                x4[i] = v;
            }
            ss = fmaf(v.x, v.x, ss);
            ss = fmaf(v.y, v.y, ss);
            ss = fmaf(v.z, v.z, ss);
            ss = fmaf(v.w, v.w, ss);
        }
    } else {
        for (long long c = tid; c < a.n_cols; c += kThreads) {
            float v = x[c];
            if constexpr (ADD) {
                v += __ldg(a.y + r * a.y_stride + c);
                x[c] = v;
            }
            ss = fmaf(v, v, ss);
        }
    }
    ss = dev::warp_sum(ss);
    if ((tid & 31) == 0) s_part[tid >> 5] = ss;
    __syncthreads();
    if (tid == 0) {
        float total = 0.0f;
        for (int i = 0; i < kWarps; ++i) total += s_part[i];
        s_scale = 1.0f / sqrtf(total / static_cast<float>(a.n_cols) + a.eps);
    }
    __syncthreads();
    const float scale = s_scale;
    if (a.vec) {
        const float4* x4 = reinterpret_cast<const float4*>(x);
        const float4* w4 = reinterpret_cast<const float4*>(a.w);
        float4* o4 = reinterpret_cast<float4*>(o);
        const long long n4 = a.n_cols / 4;
        for (long long i = tid; i < n4; i += kThreads) {
            const float4 v = x4[i];
            const float4 wv = __ldg(w4 + i);
            o4[i] = make_float4(v.x * scale * wv.x, v.y * scale * wv.y, v.z * scale * wv.z, v.w * scale * wv.w);
        }
    } else {
        for (long long c = tid; c < a.n_cols; c += kThreads) o[c] = x[c] * scale * __ldg(a.w + c);
    }
}

cudaError_t launch(bool add, RmsArgs& a, long long n_rows, cudaStream_t stream) {
    if (n_rows == 0 || a.n_cols == 0) return cudaSuccess;
    if (n_rows > detail::kMaxGridX) return cudaErrorInvalidValue;
    a.vec = a.n_cols % 4 == 0 && a.x_stride % 4 == 0 && a.out_stride % 4 == 0 && detail::aligned(a.x, 16) &&
            detail::aligned(a.out, 16) && detail::aligned(a.w, 16) &&
            (!add || (a.y_stride % 4 == 0 && detail::aligned(a.y, 16)));
    const auto grid = static_cast<unsigned>(n_rows);
    if (add)
        rms_norm_kernel<true><<<grid, kThreads, 0, stream>>>(a);
    else
        rms_norm_kernel<false><<<grid, kThreads, 0, stream>>>(a);
    return detail::launch_status();
}

}  // namespace

cudaError_t rms_norm(const float* x, int64_t x_stride, const float* w, int64_t n_rows, int64_t n_cols, float eps,
                     float* out, int64_t out_stride, cudaStream_t stream) {
    if (!x || !w || !out || n_rows < 0 || n_cols < 0 || x_stride < n_cols || out_stride < n_cols)
        return cudaErrorInvalidValue;
    RmsArgs a{};
    a.x = const_cast<float*>(x);  // not written without ADD
    a.x_stride = x_stride;
    a.w = w;
    a.n_cols = n_cols;
    a.eps = eps;
    a.out = out;
    a.out_stride = out_stride;
    return launch(false, a, n_rows, stream);
}

cudaError_t add_rms_norm(float* x, int64_t x_stride, const float* y, int64_t y_stride, const float* w, int64_t n_rows,
                         int64_t n_cols, float eps, float* out, int64_t out_stride, cudaStream_t stream) {
    if (!x || !y || !w || !out || n_rows < 0 || n_cols < 0 || x_stride < n_cols || y_stride < n_cols ||
        out_stride < n_cols)
        return cudaErrorInvalidValue;
    RmsArgs a{};
    a.x = x;
    a.x_stride = x_stride;
    a.y = y;
    a.y_stride = y_stride;
    a.w = w;
    a.n_cols = n_cols;
    a.eps = eps;
    a.out = out;
    a.out_stride = out_stride;
    return launch(true, a, n_rows, stream);
}

}  // namespace inlay::cuda
