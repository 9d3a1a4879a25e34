// The decode matmul kernel template: y[t][r] = dot(W row r, x[t]) for a few tokens.
//
// One warp per row, four rows per CTA. Lane i decodes units i, i + 32, ... of its row
// (weight_decode.cuh), so a warp reads 32 consecutive units, each weight byte once per
// call, and multiplies each decoded unit with all NT tokens' x (float4 loads; x stays in
// L1/L2 across the rows of a CTA and the CTAs of an SM). A lane first issues the loads of
// kGemvUnroll of its units, then decodes and multiplies them: a row is a few such rounds,
// and with one unit in flight per lane the kernel would wait on memory latency, not
// bandwidth. Per token a lane sums with fmaf in its column order (unit order, the same
// with or without the unrolling); warp_sum then adds the lanes. n_tokens <= NT at run
// time: the launchers instantiate NT = 1, 2, 4, 8 and round n_tokens up.
#pragma once

#include "device_common.cuh"
#include "gemv_args.h"
#include "weight_decode.cuh"

namespace inlay {
namespace cuda {
namespace dev {

constexpr int kGemvWarps = 4;
constexpr int kGemvThreads = 32 * kGemvWarps;
// Units whose loads a lane has in flight at once: fewer for wide units and many tokens,
// where the raw bytes and the accumulators would otherwise crowd the registers.
template <class F, int NT>
inline constexpr int kGemvUnroll = sizeof(typename F::Raw) > 32 ? (NT == 1 ? 4 : 2) : (NT > 2 ? 2 : 4);

template <class F, int NT>
__global__ void __launch_bounds__(kGemvThreads, 4) gemv_kernel(const GemvArgs a) {
    constexpr int kW = F::kRuns * F::kRunLen;
    constexpr int kUnroll = kGemvUnroll<F, NT>;
    const int lane = static_cast<int>(threadIdx.x) & 31;
    const long long row = static_cast<long long>(blockIdx.x) * kGemvWarps + (threadIdx.x >> 5);
    if (row >= a.n_rows) return;
    const unsigned char* wr = a.w + row * a.row_stride;
    float acc[NT];
#pragma unroll
    for (int t = 0; t < NT; ++t) acc[t] = 0.0f;

    const long long n_units = a.n_cols / F::kBlockElems * F::kUnits;
    for (long long u0 = lane; u0 < n_units; u0 += 32 * kUnroll) {
        typename F::Raw raw[kUnroll];
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) {
            const long long u = u0 + 32LL * k;
            if (u < n_units) raw[k] = F::load(wr + u / F::kUnits * F::kBlockBytes, static_cast<int>(u % F::kUnits), a.wide);
        }
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) {
            const long long u = u0 + 32LL * k;
            if (u >= n_units) break;
            const long long blk = u / F::kUnits;
            const int ui = static_cast<int>(u % F::kUnits);
            float w[kW];
            F::decode(raw[k], ui, w);
            const long long col0 = blk * F::kBlockElems;
#pragma unroll
            for (int t = 0; t < NT; ++t) {
                if (t < a.n_tokens) {
                    const float* xr = a.x + t * a.x_stride + col0;
                    float s = acc[t];
#pragma unroll
                    for (int r = 0; r < F::kRuns; ++r) {
                        const float4* xs = reinterpret_cast<const float4*>(xr + F::run_col(ui, r));
#pragma unroll
                        for (int i = 0; i < F::kRunLen / 4; ++i) {
                            const float4 xv = __ldg(xs + i);
                            const float* wv = w + r * F::kRunLen + 4 * i;
                            s = fmaf(wv[0], xv.x, s);
                            s = fmaf(wv[1], xv.y, s);
                            s = fmaf(wv[2], xv.z, s);
                            s = fmaf(wv[3], xv.w, s);
                        }
                    }
                    acc[t] = s;
                }
            }
        }
    }
    if constexpr (F::kScalarTail) {
        for (long long c = n_units * F::kBlockElems + lane; c < a.n_cols; c += 32) {
            const float wv = F::elem(wr, c);
#pragma unroll
            for (int t = 0; t < NT; ++t) {
                if (t < a.n_tokens) acc[t] = fmaf(wv, __ldg(a.x + t * a.x_stride + c), acc[t]);
            }
        }
    }
#pragma unroll
    for (int t = 0; t < NT; ++t) {
        const float s = warp_sum(acc[t]);
        if (lane == t && t < a.n_tokens) a.y[t * a.y_stride + row] = s;
    }
}

}  // namespace dev
}  // namespace cuda
}  // namespace inlay
