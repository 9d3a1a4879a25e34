// Paged causal GQA attention for any shape: head_dim (even, 2..256), group (1..32) and
// block_size (>= 1) are run-time values. The fallback of attention_decode / _split /
// _prefill when nvcc built no specialised kernel (paged_attention.cu) and none compiled by
// NVRTC is passed.
//
// Work split: one CTA of 4 warps per (token, kv head, split), as the templated kernel. The
// CTA walks its key range in tiles of T keys (T = 32, or 16 / 8 when shared memory is
// short); per tile, all its threads
//   1. load the tile's K and V rows (two elements per load) into shared memory as f32,
//      zeros for keys past the end, so every K/V element is read once for the whole group;
//   2. form the GROUP x T scores, one thread per (head, key): q.k summed in f32 in
//      dimension order with fmaf, then multiplied by scale * log2(e);
//   3. one warp per head updates the online softmax: tile max by a xor-butterfly,
//      M = max(m, tile max), p = exp2f(score - M), l = l * exp2f(m - M) + (xor-butterfly
//      sum of the tile's p);
//   4. one thread per (head, dim) rescales its accumulator by exp2f(m - M) and adds
//      p * v over the tile's keys in key order with fmaf.
// The accumulators (GROUP x head_dim f32) stay in shared memory. At the end the CTA writes
// acc / l (zeros when l == 0) or, when split, (acc, m, l) for paged_attention_merge_kernel.
#include "device_common.cuh"
#include "inlay_cuda_kernels.h"
#include "launch_util.h"
#include "paged_attention_args.h"
#include "paged_attention_generic.h"

namespace inlay {
namespace cuda {
namespace attn {
namespace {

// Not paged_attention.cuh: it defines the (non-template) merge kernel, which must exist in
// one translation unit only.
constexpr int kGenericWarps = 4;
constexpr int kGenericThreads = 32 * kGenericWarps;

// Storage of one element of an f16 cache (the bits of an IEEE half).
struct GenericF16 {
    unsigned short bits;
};

// Elements (i, i + 1) of an f16 or f32 arena, i even (the arena is 16-byte aligned).
__device__ __forceinline__ float2 load_pair(const GenericF16* base, long long i) {
    const unsigned w = dev::ld_u32(base + i);
    return make_float2(dev::f16_to_f32(static_cast<unsigned short>(w & 0xffffu)),
                       dev::f16_to_f32(static_cast<unsigned short>(w >> 16)));
}
__device__ __forceinline__ float2 load_pair(const float* base, long long i) {
    const uint2 w = dev::ld_u64(base + i);
    return make_float2(__uint_as_float(w.x), __uint_as_float(w.y));
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int off = 16; off >= 1; off >>= 1) v = fmaxf(v, __shfl_xor_sync(dev::kFullMask, v, off));
    return v;
}

// Shared memory of the generic kernel, in bytes, for a tile of `tile` keys.
__host__ __device__ constexpr long long generic_smem_bytes(int head_dim, int group, int tile) {
    return 8LL * tile + 4LL * (2LL * group * head_dim + static_cast<long long>(tile) * (2 * head_dim + 1) +
                               group * (tile + 1) + 3LL * group);
}

template <class KV>
__global__ void __launch_bounds__(kGenericThreads)
    paged_attention_generic_kernel(const PagedAttentionArgs a, const int block_size, const int tile) {
    extern __shared__ __align__(16) unsigned char smem[];
    const int HD = a.head_dim;
    const int G = a.n_q_heads / a.n_kv_heads;
    const int T = tile;
    long long* s_row = reinterpret_cast<long long*>(smem);  // [T] element offset of key j's row, -1 past the end
    float* s_q = reinterpret_cast<float*>(s_row + T);       // [G][HD]
    float* s_acc = s_q + G * HD;                            // [G][HD]
    float* s_k = s_acc + G * HD;                            // [T][HD + 1] (odd stride: no bank conflicts)
    float* s_v = s_k + T * (HD + 1);                        // [T][HD]
    float* s_p = s_v + T * HD;                              // [G][T + 1] scores, then weights
    float* s_m = s_p + G * (T + 1);                         // [G] running max (log2 units)
    float* s_l = s_m + G;                                   // [G] running sum
    float* s_corr = s_l + G;                                // [G] this tile's rescale factor

    const int tid = static_cast<int>(threadIdx.x);
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const int t = static_cast<int>(blockIdx.x);
    const int g = static_cast<int>(blockIdx.y);
    const int split = static_cast<int>(blockIdx.z);

    // The keys this CTA attends to: [kb, ke).
    const CtaKeys keys = cta_keys(a, t, split, block_size);
    const int table = keys.table;
    const long long kb = keys.begin, ke = keys.end;

    const float* qp = a.q + t * a.q_stride + static_cast<long long>(g) * G * HD;
    for (int i = tid; i < G * HD; i += kGenericThreads) {
        s_q[i] = __ldg(qp + i);
        s_acc[i] = 0.0f;
    }
    for (int h = tid; h < G; h += kGenericThreads) {
        s_m[h] = dev::neg_inf();
        s_l[h] = 0.0f;
    }

    const KV* k_cache = static_cast<const KV*>(a.k_cache);
    const KV* v_cache = static_cast<const KV*>(a.v_cache);
    const int half = HD / 2;
    for (long long c0 = kb; c0 < ke; c0 += T) {
        if (tid < T) {
            const long long p = c0 + tid;
            long long row = -1;
            if (p < ke) {
                const long long blk = __ldg(a.kv_indices + table + static_cast<int>(p / block_size));
                row = ((blk * a.n_kv_heads + g) * block_size + p % block_size) * HD;
            }
            s_row[tid] = row;
        }
        __syncthreads();  // also orders the previous tile's reads of s_k / s_v / s_p before the writes below

        // 1. K and V of the tile.
        for (int i = tid; i < T * half; i += kGenericThreads) {
            const int j = i / half;
            const int d = 2 * (i - j * half);
            const long long row = s_row[j];
            float2 kk = make_float2(0.0f, 0.0f), vv = make_float2(0.0f, 0.0f);
            if (row >= 0) {
                kk = load_pair(k_cache, row + d);
                vv = load_pair(v_cache, row + d);
            }
            s_k[j * (HD + 1) + d] = kk.x;
            s_k[j * (HD + 1) + d + 1] = kk.y;
            s_v[j * HD + d] = vv.x;
            s_v[j * HD + d + 1] = vv.y;
        }
        __syncthreads();

        // 2. Scores, one thread per (head, key); -inf for keys past the end.
        for (int i = tid; i < G * T; i += kGenericThreads) {
            const int h = i / T;
            const int j = i - h * T;
            float s = dev::neg_inf();
            if (c0 + j < ke) {
                const float* qh = s_q + h * HD;
                const float* kj = s_k + j * (HD + 1);
                float dot = 0.0f;
                for (int d = 0; d < HD; ++d) dot = fmaf(qh[d], kj[d], dot);
                s = dot * a.scale_log2;
            }
            s_p[h * (T + 1) + j] = s;
        }
        __syncthreads();

        // 3. Online softmax, one warp per head. The tile holds key c0 < ke, so M is finite.
        for (int h = warp; h < G; h += kGenericWarps) {
            const float s = lane < T ? s_p[h * (T + 1) + lane] : dev::neg_inf();
            const float m_old = s_m[h];
            const float mn = fmaxf(m_old, warp_max(s));
            const float p = exp2f(s - mn);
            const float sum = dev::warp_sum(p);
            const float corr = exp2f(m_old - mn);
            if (lane < T) s_p[h * (T + 1) + lane] = p;
            __syncwarp();
            if (lane == 0) {
                s_m[h] = mn;
                s_l[h] = s_l[h] * corr + sum;
                s_corr[h] = corr;
            }
        }
        __syncthreads();

        // 4. acc = acc * corr + sum_j p_j v_j, one thread per (head, dim).
        for (int i = tid; i < G * HD; i += kGenericThreads) {
            const int h = i / HD;
            const int d = i - h * HD;
            const float* ph = s_p + h * (T + 1);
            float x = s_acc[i] * s_corr[h];
            for (int j = 0; j < T; ++j) x = fmaf(ph[j], s_v[j * HD + d], x);
            s_acc[i] = x;
        }
    }
    __syncthreads();

    const int h0 = g * G;
    if (a.n_splits > 1) {
        const long long rows = static_cast<long long>(a.n_tokens) * a.n_q_heads * a.n_splits;
        for (int i = tid; i < G * HD; i += kGenericThreads) {
            const int h = i / HD;
            const int d = i - h * HD;
            const long long idx = (static_cast<long long>(t) * a.n_q_heads + h0 + h) * a.n_splits + split;
            a.scratch[idx * HD + d] = s_acc[i];
            if (d == 0) {
                a.scratch[rows * HD + 2 * idx] = s_m[h];
                a.scratch[rows * HD + 2 * idx + 1] = s_l[h];
            }
        }
    } else {
        float* o = a.out + t * a.out_stride + static_cast<long long>(h0) * HD;
        for (int i = tid; i < G * HD; i += kGenericThreads) {
            const float sum = s_l[i / HD];
            o[i] = sum > 0.0f ? s_acc[i] / sum : 0.0f;
        }
    }
}

}  // namespace
}  // namespace attn

namespace detail {

bool attention_generic_supported(int32_t head_dim, int32_t group, int32_t block_size, KvType type) {
    return head_dim >= 2 && head_dim <= 256 && head_dim % 2 == 0 && group >= 1 && group <= 32 && block_size >= 1 &&
           (type == KvType::f16 || type == KvType::f32);
}

cudaError_t launch_attention_generic(const attn::PagedAttentionArgs& a, int32_t block_size, KvType type,
                                     cudaStream_t stream) {
    const int group = a.n_q_heads / a.n_kv_heads;
    if (!attention_generic_supported(a.head_dim, group, block_size, type)) return cudaErrorNotSupported;
    constexpr long long kDefaultSmem = 48 * 1024;
    int tile = 32;
    while (tile > 8 && attn::generic_smem_bytes(a.head_dim, group, tile) > kDefaultSmem) tile /= 2;
    const long long smem = attn::generic_smem_bytes(a.head_dim, group, tile);
    const void* kernel = type == KvType::f16
                             ? reinterpret_cast<const void*>(&attn::paged_attention_generic_kernel<attn::GenericF16>)
                             : reinterpret_cast<const void*>(&attn::paged_attention_generic_kernel<float>);
    if (smem > kDefaultSmem) {
        // At most ~82 KiB (group 32 x head_dim 256): within every architecture >= sm_80.
        const cudaError_t err =
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
        if (err != cudaSuccess) return err;
    }
    attn::PagedAttentionArgs args = a;
    int bs = block_size;
    void* params[] = {&args, &bs, &tile};
    const dim3 grid(static_cast<unsigned>(a.n_tokens), static_cast<unsigned>(a.n_kv_heads),
                    static_cast<unsigned>(a.n_splits));
    const cudaError_t err =
        cudaLaunchKernel(kernel, grid, dim3(attn::kGenericThreads), params, static_cast<size_t>(smem), stream);
    return err != cudaSuccess ? err : launch_status();
}

}  // namespace detail
}  // namespace cuda
}  // namespace inlay
