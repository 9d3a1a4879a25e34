// qk_norm_rope_kv_append: per-head RMSNorm (optional), RoPE on q (in place) and k, and
// the K/V append into the paged cache, one CTA per token.
#include "device_common.cuh"
#include "inlay_cuda_kernels.h"
#include "launch_util.h"

namespace inlay::cuda {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;
constexpr int kMaxHeadDim = 256;
constexpr int kPerLane = kMaxHeadDim / 32;  // dims d = lane + 32 i, i < kPerLane

struct RopeAppendArgs {
    float* q;
    long long q_stride;
    const float* k;
    long long k_stride;
    const float* v;
    long long v_stride;
    int n_q_heads;
    int n_kv_heads;
    int head_dim;
    const float* q_norm_w;
    const float* k_norm_w;
    float eps;
    int n_rot;
    bool neox;
    float freq_base;
    float freq_scale;
    const float* freq_factors;
    void* k_cache;
    void* v_cache;
    bool kv_f16;
    int block_size;
    const int* positions;
    const int* seq_of_token;
    const int* kv_indptr;
    const int* kv_indices;
    int* error_flag;
};

// The CTA first computes cos/sin of the token's n_rot/2 angles into shared memory; then
// each warp takes heads (q heads, then k heads, then v heads): it loads the head, applies
// the RMSNorm (sum of squares fmaf'd per lane, warp_sum; x * (1 / sqrtf(ss / head_dim +
// eps)) * w), passes the head through its shared buffer so each lane can read its pair
// partner, rotates, and stores (q in place; k and v to the token's cache slot).
__global__ void __launch_bounds__(kThreads) rope_append_kernel(const RopeAppendArgs a) {
    __shared__ float s_cos[kMaxHeadDim / 2];
    __shared__ float s_sin[kMaxHeadDim / 2];
    __shared__ float s_head[kWarps][kMaxHeadDim];
    const int tid = static_cast<int>(threadIdx.x);
    const int lane = tid & 31, warp = tid >> 5;
    const long long t = blockIdx.x;
    const int pos = __ldg(a.positions + t);
    const int seq = __ldg(a.seq_of_token + t);
    const int half = a.n_rot / 2;
    for (int i = tid; i < half; i += kThreads) {
        float angle = static_cast<float>(pos) * a.freq_scale *
                      powf(a.freq_base, -static_cast<float>(2 * i) / static_cast<float>(a.n_rot));
        if (a.freq_factors) angle /= __ldg(a.freq_factors + i);
        sincosf(angle, &s_sin[i], &s_cos[i]);
    }
    // The token's cache slot; a position outside its block table is not stored.
    const int table = __ldg(a.kv_indptr + seq);
    const int n_blocks = __ldg(a.kv_indptr + seq + 1) - table;
    const bool ok = pos >= 0 && pos / a.block_size < n_blocks;
    if (!ok && tid == 0 && a.error_flag) *a.error_flag = 1;
    const long long blk = ok ? __ldg(a.kv_indices + table + pos / a.block_size) : 0;
    const int slot = ok ? pos % a.block_size : 0;
    __syncthreads();

    const int hd = a.head_dim;
    const int n_jobs = a.n_q_heads + 2 * a.n_kv_heads;
    for (int job = warp; job < n_jobs; job += kWarps) {
        const float* src;
        const float* norm_w = nullptr;
        bool rotate = true;
        int kind;  // 0 q, 1 k, 2 v
        int head;
        if (job < a.n_q_heads) {
            kind = 0;
            head = job;
            src = a.q + t * a.q_stride + static_cast<long long>(head) * hd;
            norm_w = a.q_norm_w;
        } else if (job < a.n_q_heads + a.n_kv_heads) {
            kind = 1;
            head = job - a.n_q_heads;
            src = a.k + t * a.k_stride + static_cast<long long>(head) * hd;
            norm_w = a.k_norm_w;
        } else {
            kind = 2;
            head = job - a.n_q_heads - a.n_kv_heads;
            src = a.v + t * a.v_stride + static_cast<long long>(head) * hd;
            rotate = false;
        }
        if (kind != 0 && !ok) continue;

        float x[kPerLane];
#pragma unroll
        for (int i = 0; i < kPerLane; ++i) {
            const int d = lane + 32 * i;
            x[i] = d < hd ? src[d] : 0.0f;
        }
        if (norm_w) {
            float ss = 0.0f;
#pragma unroll
            for (int i = 0; i < kPerLane; ++i) ss = fmaf(x[i], x[i], ss);
            ss = dev::warp_sum(ss);
            const float scale = 1.0f / sqrtf(ss / static_cast<float>(hd) + a.eps);
#pragma unroll
            for (int i = 0; i < kPerLane; ++i) {
                const int d = lane + 32 * i;
                if (d < hd) x[i] = x[i] * scale * __ldg(norm_w + d);
            }
        }
        if (rotate) {
#pragma unroll
            for (int i = 0; i < kPerLane; ++i) {
                const int d = lane + 32 * i;
                if (d < hd) s_head[warp][d] = x[i];
            }
            __syncwarp();
#pragma unroll
            for (int i = 0; i < kPerLane; ++i) {
                const int d = lane + 32 * i;
                if (d >= a.n_rot) continue;
                int pair, lo, hi;
                if (a.neox) {
                    pair = d < half ? d : d - half;
                    lo = pair;
                    hi = pair + half;
                } else {
                    pair = d / 2;
                    lo = 2 * pair;
                    hi = lo + 1;
                }
                const float x0 = s_head[warp][lo], x1 = s_head[warp][hi];
                const float c = s_cos[pair], s = s_sin[pair];
                x[i] = d == lo ? x0 * c - x1 * s : x0 * s + x1 * c;
            }
            __syncwarp();  // the buffer is reused by the warp's next head
        }

        if (kind == 0) {
            float* dst = a.q + t * a.q_stride + static_cast<long long>(head) * hd;
#pragma unroll
            for (int i = 0; i < kPerLane; ++i) {
                const int d = lane + 32 * i;
                if (d < hd) dst[d] = x[i];
            }
        } else {
            const long long off = ((blk * a.n_kv_heads + head) * a.block_size + slot) * hd;
            void* cache = kind == 1 ? a.k_cache : a.v_cache;
#pragma unroll
            for (int i = 0; i < kPerLane; ++i) {
                const int d = lane + 32 * i;
                if (d >= hd) continue;
                if (a.kv_f16)
                    static_cast<unsigned short*>(cache)[off + d] = dev::f32_to_f16(x[i]);
                else
                    static_cast<float*>(cache)[off + d] = x[i];
            }
        }
    }
}

}  // namespace

cudaError_t qk_norm_rope_kv_append(float* q, int64_t q_stride, int32_t n_q_heads, const float* k, int64_t k_stride,
                                   const float* v, int64_t v_stride, const float* q_norm_w, const float* k_norm_w,
                                   float norm_eps, const RopeConfig& rope, const PagedKvLayer& kv,
                                   const TokenBatch& batch, int* error_flag, cudaStream_t stream) {
    const int32_t hd = kv.head_dim;
    if (!q || !k || !v || !kv.k || !kv.v || hd <= 0 || hd > kMaxHeadDim || hd % 2 != 0) return cudaErrorInvalidValue;
    if (n_q_heads <= 0 || n_q_heads > 1024 || kv.n_kv_heads <= 0 || kv.n_kv_heads > 1024 || kv.block_size <= 0)
        return cudaErrorInvalidValue;
    if (q_stride < static_cast<int64_t>(n_q_heads) * hd || k_stride < static_cast<int64_t>(kv.n_kv_heads) * hd ||
        v_stride < static_cast<int64_t>(kv.n_kv_heads) * hd)
        return cudaErrorInvalidValue;
    if (rope.n_rot < 2 || rope.n_rot > hd || rope.n_rot % 2 != 0) return cudaErrorInvalidValue;
    if (!detail::aligned(kv.k, 16) || !detail::aligned(kv.v, 16)) return cudaErrorInvalidValue;
    if (batch.n_tokens < 0 || !batch.positions || !batch.seq_of_token || !batch.kv_indptr || !batch.kv_indices)
        return cudaErrorInvalidValue;
    if (batch.n_tokens == 0) return cudaSuccess;
    RopeAppendArgs a{};
    a.q = q;
    a.q_stride = q_stride;
    a.k = k;
    a.k_stride = k_stride;
    a.v = v;
    a.v_stride = v_stride;
    a.n_q_heads = n_q_heads;
    a.n_kv_heads = kv.n_kv_heads;
    a.head_dim = hd;
    a.q_norm_w = q_norm_w;
    a.k_norm_w = k_norm_w;
    a.eps = norm_eps;
    a.n_rot = rope.n_rot;
    a.neox = rope.style == RopeStyle::neox;
    a.freq_base = rope.freq_base;
    a.freq_scale = rope.freq_scale;
    a.freq_factors = rope.freq_factors;
    a.k_cache = kv.k;
    a.v_cache = kv.v;
    a.kv_f16 = kv.type == KvType::f16;
    a.block_size = kv.block_size;
    a.positions = batch.positions;
    a.seq_of_token = batch.seq_of_token;
    a.kv_indptr = batch.kv_indptr;
    a.kv_indices = batch.kv_indices;
    a.error_flag = error_flag;
    rope_append_kernel<<<static_cast<unsigned>(batch.n_tokens), kThreads, 0, stream>>>(a);
    return detail::launch_status();
}

}  // namespace inlay::cuda
