// Paged causal GQA attention: the kernel template and the split merge kernel.
//
// One source for both builds: paged_attention.cu includes this file and instantiates the
// shapes nvcc builds; NVRTC compiles this same file at load time for any other shape,
// naming the instantiation with a name expression such as
//   inlay::cuda::attn::paged_attention_kernel<128, 8, 16, inlay::cuda::attn::KvF16>
// (nvrtc_sources.h builds those names). It therefore includes only the two plain headers
// beside it and nothing from the CUDA toolkit.
//
// Work split: one CTA of 4 warps per (token, kv head, split). The CTA holds the GROUP query
// heads of its kv head in registers (each lane HEAD_DIM / 32 consecutive dims of each),
// so every K and V row it loads serves all of them. Each warp walks its own chunks of KC
// keys (chunk c of the CTA's key range goes to warp c % 4; a chunk never crosses a KV
// block): it loads the chunk's K and V rows (one row = 32 lanes x HEAD_DIM/32 elements,
// the widest aligned loads the row allows), forms the GROUP x KC partial dot products,
// sums them over the 32 lanes with a transposing butterfly (each step halves the values a
// lane carries, so GROUP*KC sums cost about GROUP*KC shuffles instead of 5 per value), and
// updates its online softmax (running max m, sum l, accumulator acc, all f32, in log2 units:
// scores are multiplied by scale * log2(e) and exponentiated with exp2f). At the end the
// four warps' states are merged in warp order through shared memory and the CTA writes
// either the normalised output or, when split, its (max, sum, acc) for the merge kernel.
#pragma once

#include "device_common.cuh"
#include "paged_attention_args.h"

namespace inlay {
namespace cuda {
namespace attn {

// Storage of one element of an f16 cache (the bits of an IEEE half).
struct KvF16 {
    unsigned short bits;
};

template <class T>
struct KvElem;
template <>
struct KvElem<KvF16> {
    static constexpr int kBytes = 2;
};
template <>
struct KvElem<float> {
    static constexpr int kBytes = 4;
};

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;

__host__ __device__ constexpr int pow2_floor(int x) {
    int p = 1;
    while (p * 2 <= x) p *= 2;
    return p;
}
__host__ __device__ constexpr int pow2_ceil(int x) {
    int p = 1;
    while (p < x) p *= 2;
    return p;
}
// The largest power of two <= cap that divides x.
__host__ __device__ constexpr int pow2_dividing(int x, int cap) {
    int p = 1;
    while (p * 2 <= cap && x % (p * 2) == 0) p *= 2;
    return p;
}

// Keys per warp chunk: GROUP * KC values to sum per chunk, at most 32 (one per lane) and
// KC <= 8; KC divides BLOCK_SIZE so that a chunk lies in one block.
template <int GROUP, int BLOCK_SIZE>
__host__ __device__ constexpr int keys_per_chunk() {
    int kc = pow2_floor(32 / GROUP);
    if (kc > 8) kc = 8;
    while (BLOCK_SIZE % kc != 0) kc /= 2;
    return kc;
}

// E consecutive elements of a K or V row held by one lane, as raw 32-bit words.
template <class T, int E>
struct LaneRow {
    static constexpr int kBytes = E * KvElem<T>::kBytes;
    static constexpr int kLoad = pow2_dividing(kBytes, 16);  // bytes per load instruction
    static constexpr int kWords = (kBytes + 3) / 4;
    unsigned w[kWords];

    __device__ __forceinline__ void load(const T* p) {
        const unsigned char* b = reinterpret_cast<const unsigned char*>(p);
        if constexpr (kLoad == 16) {
#pragma unroll
            for (int i = 0; i < kBytes / 16; ++i) {
                const uint4 v = dev::ld_u128(b + 16 * i);
                w[4 * i] = v.x;
                w[4 * i + 1] = v.y;
                w[4 * i + 2] = v.z;
                w[4 * i + 3] = v.w;
            }
        } else if constexpr (kLoad == 8) {
#pragma unroll
            for (int i = 0; i < kBytes / 8; ++i) {
                const uint2 v = dev::ld_u64(b + 8 * i);
                w[2 * i] = v.x;
                w[2 * i + 1] = v.y;
            }
        } else if constexpr (kLoad == 4) {
#pragma unroll
            for (int i = 0; i < kBytes / 4; ++i) w[i] = dev::ld_u32(b + 4 * i);
        } else {
#pragma unroll
            for (int i = 0; i < kBytes / 2; ++i) {
                const unsigned h = dev::ld_u16(b + 2 * i);
                w[i / 2] = (i % 2 == 0) ? h : (w[i / 2] | (h << 16));
            }
        }
    }
    __device__ __forceinline__ void zero() {
#pragma unroll
        for (int i = 0; i < kWords; ++i) w[i] = 0u;
    }
    __device__ __forceinline__ float get(int e) const {
        if constexpr (KvElem<T>::kBytes == 4) {
            return __uint_as_float(w[e]);
        } else {
            return dev::f16_to_f32(static_cast<unsigned short>(w[e / 2] >> (16 * (e % 2))));
        }
    }
};

// Sums N values (N a power of two <= 32) over the 32 lanes of a warp. Afterwards v[0] of
// lane L holds the total of value index L / (32 / N); the lanes sharing an index hold the
// same bits. Each of the first log2(N) steps trades half of a lane's values with its
// partner lane (offset OFF), the remaining steps are a plain xor-butterfly.
template <int OFF, int N, int CAP>
__device__ __forceinline__ void transpose_reduce(float (&v)[CAP], int lane) {
    if constexpr (OFF >= 1) {
        if constexpr (N > 1) {
            constexpr int H = N / 2;
            const bool upper = (lane & OFF) != 0;
#pragma unroll
            for (int i = 0; i < H; ++i) {
                const float send = upper ? v[i] : v[i + H];
                const float keep = upper ? v[i + H] : v[i];
                v[i] = keep + __shfl_xor_sync(dev::kFullMask, send, OFF);
            }
            transpose_reduce<OFF / 2, H, CAP>(v, lane);
        } else {
            v[0] += __shfl_xor_sync(dev::kFullMask, v[0], OFF);
            transpose_reduce<OFF / 2, 1, CAP>(v, lane);
        }
    }
}

// Causal attention of token blockIdx.x's GROUP query heads of kv head blockIdx.y over the
// keys of split blockIdx.z. KV is KvF16 or float. See the top of this file.
template <int HEAD_DIM, int GROUP, int BLOCK_SIZE, class KV>
__global__ void __launch_bounds__(kThreads, 2) paged_attention_kernel(const PagedAttentionArgs a) {
    static_assert(HEAD_DIM % 32 == 0 && HEAD_DIM >= 32 && HEAD_DIM <= 256, "head_dim: a multiple of 32, <= 256");
    static_assert(GROUP >= 1 && GROUP <= 32, "group size 1..32");
    static_assert(BLOCK_SIZE >= 1 && (BLOCK_SIZE & (BLOCK_SIZE - 1)) == 0, "block size: a power of two");
    constexpr int E = HEAD_DIM / 32;                         // dims per lane
    constexpr int KC = keys_per_chunk<GROUP, BLOCK_SIZE>();  // keys per warp chunk
    constexpr int NV = GROUP * KC;                           // dot products per chunk
    constexpr int NVP = pow2_ceil(NV);
    static_assert(NVP <= 32, "GROUP * KC <= 32");
    constexpr int kLanesPerValue = 32 / NVP;

    __shared__ float s_scores[kWarps][NVP];
    __shared__ float s_max[kWarps][GROUP];
    __shared__ float s_acc[GROUP][HEAD_DIM];
    __shared__ float s_sum[GROUP];

    const int lane = static_cast<int>(threadIdx.x) & 31;
    const int warp = static_cast<int>(threadIdx.x) >> 5;
    const int t = static_cast<int>(blockIdx.x);
    const int g = static_cast<int>(blockIdx.y);
    const int split = static_cast<int>(blockIdx.z);

    // The keys this CTA attends to: [kb, ke).
    const CtaKeys keys = cta_keys(a, t, split, BLOCK_SIZE);
    const int table = keys.table;
    const long long kb = keys.begin, ke = keys.end;

    float q[GROUP][E];
    const float* qp = a.q + t * a.q_stride + static_cast<long long>(g) * GROUP * HEAD_DIM + lane * E;
#pragma unroll
    for (int h = 0; h < GROUP; ++h) {
#pragma unroll
        for (int e = 0; e < E; ++e) q[h][e] = __ldg(qp + h * HEAD_DIM + e);
    }

    float m[GROUP], l[GROUP], acc[GROUP][E];
#pragma unroll
    for (int h = 0; h < GROUP; ++h) {
        m[h] = dev::neg_inf();
        l[h] = 0.0f;
#pragma unroll
        for (int e = 0; e < E; ++e) acc[h][e] = 0.0f;
    }

    const KV* k_cache = static_cast<const KV*>(a.k_cache);
    const KV* v_cache = static_cast<const KV*>(a.v_cache);
    for (long long c0 = kb + warp * KC; c0 < ke; c0 += kWarps * KC) {
        const long long blk = __ldg(a.kv_indices + table + static_cast<int>(c0 / BLOCK_SIZE));
        const long long off = (blk * a.n_kv_heads + g) * (BLOCK_SIZE * HEAD_DIM) +
                              static_cast<int>(c0 % BLOCK_SIZE) * HEAD_DIM + lane * E;
        LaneRow<KV, E> kr[KC], vr[KC];
#pragma unroll
        for (int k = 0; k < KC; ++k) {
            if (c0 + k < ke) {
                kr[k].load(k_cache + off + k * HEAD_DIM);
                vr[k].load(v_cache + off + k * HEAD_DIM);
            } else {
                kr[k].zero();
                vr[k].zero();
            }
        }

        float v[NVP];
#pragma unroll
        for (int k = 0; k < KC; ++k) {
#pragma unroll
            for (int h = 0; h < GROUP; ++h) {
                float s = 0.0f;
#pragma unroll
                for (int e = 0; e < E; ++e) s = fmaf(q[h][e], kr[k].get(e), s);
                v[k * GROUP + h] = s;
            }
        }
#pragma unroll
        for (int i = NV; i < NVP; ++i) v[i] = 0.0f;
        transpose_reduce<16, NVP, NVP>(v, lane);
        if (lane % kLanesPerValue == 0) {
            const int idx = lane / kLanesPerValue;
            if (idx < NV) s_scores[warp][idx] = c0 + idx / GROUP < ke ? v[0] * a.scale_log2 : dev::neg_inf();
        }
        __syncwarp();

#pragma unroll
        for (int h = 0; h < GROUP; ++h) {
            float sc[KC];
            float cm = dev::neg_inf();
#pragma unroll
            for (int k = 0; k < KC; ++k) {
                sc[k] = s_scores[warp][k * GROUP + h];
                cm = fmaxf(cm, sc[k]);
            }
            // cm is finite: key c0 < ke is in the chunk.
            const float mn = fmaxf(m[h], cm);
            const float corr = exp2f(m[h] - mn);
            m[h] = mn;
            l[h] *= corr;
#pragma unroll
            for (int e = 0; e < E; ++e) acc[h][e] *= corr;
#pragma unroll
            for (int k = 0; k < KC; ++k) {
                const float p = exp2f(sc[k] - mn);
                l[h] += p;
#pragma unroll
                for (int e = 0; e < E; ++e) acc[h][e] = fmaf(p, vr[k].get(e), acc[h][e]);
            }
        }
        __syncwarp();
    }

    // Merge the warps: M = max of their maxima, each state scaled by exp2(m_w - M), summed
    // in warp order.
    if (lane == 0) {
#pragma unroll
        for (int h = 0; h < GROUP; ++h) s_max[warp][h] = m[h];
    }
    __syncthreads();
    float f[GROUP];
#pragma unroll
    for (int h = 0; h < GROUP; ++h) {
        float mx = dev::neg_inf();
#pragma unroll
        for (int w = 0; w < kWarps; ++w) mx = fmaxf(mx, s_max[w][h]);
        f[h] = mx == dev::neg_inf() ? 0.0f : exp2f(m[h] - mx);
    }
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
        if (warp == w) {
#pragma unroll
            for (int h = 0; h < GROUP; ++h) {
#pragma unroll
                for (int e = 0; e < E; ++e) {
                    const float x = acc[h][e] * f[h];
                    s_acc[h][lane * E + e] = w == 0 ? x : s_acc[h][lane * E + e] + x;
                }
                if (lane == 0) s_sum[h] = w == 0 ? l[h] * f[h] : s_sum[h] + l[h] * f[h];
            }
        }
        __syncthreads();
    }

    const int h0 = g * GROUP;
    if (a.n_splits > 1) {
        const long long rows = static_cast<long long>(a.n_tokens) * a.n_q_heads * a.n_splits;
        for (int i = static_cast<int>(threadIdx.x); i < GROUP * HEAD_DIM; i += kThreads) {
            const int h = i / HEAD_DIM, d = i % HEAD_DIM;
            const long long idx = (static_cast<long long>(t) * a.n_q_heads + h0 + h) * a.n_splits + split;
            a.scratch[idx * HEAD_DIM + d] = s_acc[h][d];
            if (d == 0) {
                float mx = dev::neg_inf();
#pragma unroll
                for (int w = 0; w < kWarps; ++w) mx = fmaxf(mx, s_max[w][h]);
                a.scratch[rows * HEAD_DIM + 2 * idx] = mx;
                a.scratch[rows * HEAD_DIM + 2 * idx + 1] = s_sum[h];
            }
        }
    } else {
        float* o = a.out + t * a.out_stride + static_cast<long long>(h0) * HEAD_DIM;
        for (int i = static_cast<int>(threadIdx.x); i < GROUP * HEAD_DIM; i += kThreads) {
            const int h = i / HEAD_DIM, d = i % HEAD_DIM;
            const float sum = s_sum[h];
            o[i] = sum > 0.0f ? s_acc[h][d] / sum : 0.0f;
        }
    }
}

// Merges the n_splits partial results of each (token, query head): one CTA per pair
// (blockIdx.x = t * n_q_heads + h), any block size. M = max of the split maxima; each
// split weighs exp2(m_s - M); sum and accumulator are summed in split order;
// out = acc / sum (zeros when nothing was attended).
__global__ void __launch_bounds__(kThreads) paged_attention_merge_kernel(const PagedAttentionArgs a) {
    const long long th = blockIdx.x;
    const long long t = th / a.n_q_heads;
    const long long h = th % a.n_q_heads;
    const int n = a.n_splits;
    const long long rows = static_cast<long long>(a.n_tokens) * a.n_q_heads * n;
    const float* part = a.scratch + th * n * a.head_dim;
    const float* ml = a.scratch + rows * a.head_dim + 2 * th * n;
    float mx = dev::neg_inf();
    for (int s = 0; s < n; ++s) mx = fmaxf(mx, ml[2 * s]);
    float sum = 0.0f;
    if (mx != dev::neg_inf()) {
        for (int s = 0; s < n; ++s) sum += exp2f(ml[2 * s] - mx) * ml[2 * s + 1];
    }
    float* o = a.out + t * a.out_stride + h * a.head_dim;
    for (int d = static_cast<int>(threadIdx.x); d < a.head_dim; d += static_cast<int>(blockDim.x)) {
        float x = 0.0f;
        if (sum > 0.0f) {
            for (int s = 0; s < n; ++s) x += exp2f(ml[2 * s] - mx) * part[static_cast<long long>(s) * a.head_dim + d];
        }
        o[d] = sum > 0.0f ? x / sum : 0.0f;
    }
}

}  // namespace attn
}  // namespace cuda
}  // namespace inlay
