// Prefill attention on tensor cores: flash attention over the paged f16 cache.
//
// The decode kernel (paged_attention.cuh) gives every (token, kv head) its own CTA, which
// reads the token's whole causal prefix of K and V: a prompt of n tokens reads about
// n^2 / 2 K/V rows per kv head, and does its products one fmaf at a time. Here a CTA takes
// 64 query rows (consecutive tokens of a batch times the query heads of one GQA group), so
// each K/V row it stages in shared memory serves all of them, and both products run on
// the tensor cores (mma.sync m16n8k16, f16 operands, f32 accumulation):
//   - each of the 4 warps owns 16 rows; their q is rounded to f16 once and held as mma
//     A fragments;
//   - per tile of 64 keys: S = q K^T (16 x 64 per warp, f32), times scale * log2(e), the
//     keys past each row's causal limit masked to -inf; an online softmax per row (max
//     and sum in f32, exp2f); P = exp2(S - max) rounded to f16 is the A fragment of
//     O += P V directly (the S accumulator's layout is the A layout: FlashAttention-2's
//     register reuse), O in f32;
//   - K and V are staged as [key][head_dim] rows padded by 8 halves, so that the K
//     fragments' 32-bit loads and V's transposing ldmatrix hit 32 different banks.
// A CTA's tokens may belong to several sequences (a batch of several prompts): it walks
// them sequence by sequence, the rows of other sequences masked out of each walk.
// Rounding differs from the decode kernel: q and P are rounded to f16 (K/V are f16 in the
// cache already), so results agree with it to ~2^-11 of the scores' and values' scale.
// UNVERIFIED until run on a GPU.
#include "attention_args.h"
#include "device_common.cuh"
#include "inlay_cuda_kernels.h"
#include "launch_util.h"
#include "paged_attention_args.h"

namespace inlay::cuda {
namespace {

constexpr int kRows = 64;  // query rows per CTA: 4 warps x 16
constexpr int kKeys = 64;  // keys per K/V tile
constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kPad = 8;  // halves of padding per shared row

// Two floats as one f16x2 register: lo in the low half (the lower index of a fragment pair).
__device__ __forceinline__ unsigned pack_half2(float lo, float hi) {
    unsigned r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

// x clamped to f16's finite range, so that a huge q saturates instead of becoming inf
// (and the scores NaN); NaN stays NaN.
__device__ __forceinline__ float half_range(float x) {
    return x > 65504.0f ? 65504.0f : (x < -65504.0f ? -65504.0f : x);
}

// c += a b for a 16 x 16 f16 A (row-major fragments), a 16 x 8 f16 B (column-major), f32 c.
__device__ __forceinline__ void mma_16x8x16(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ unsigned ld_shared_u32(const unsigned short* p) {
    return *reinterpret_cast<const unsigned*>(p);
}

// The B fragment pair of P V for keys [k0, k0 + 16) and dims [n0, n0 + 8) of a row-major
// [key][dim] tile: lane L gives the address of key k0 + L % 16 at dim n0, and the
// transposing load hands each lane keys 2 (L % 4) and + 1 (+ 8 in b1) of dim L / 4.
__device__ __forceinline__ void ldmatrix_x2_trans(unsigned& b0, unsigned& b1, const unsigned short* row) {
    const auto addr = static_cast<unsigned>(__cvta_generic_to_shared(row));
    // "memory": it reads the staged tile, so it must stay between the barriers around it.
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];"
                 : "=r"(b0), "=r"(b1)
                 : "r"(addr)
                 : "memory");
}

// Query rows [blockIdx.x * tokens_per_cta * group, ...) of kv head blockIdx.y: row r is
// token blockIdx.x * tokens_per_cta + r / group, query head blockIdx.y * group + r % group.
template <int HD>
__global__ void __launch_bounds__(kThreads, 2)
    flash_prefill_kernel(const attn::PagedAttentionArgs a, int group, int block_size) {
    static_assert(HD % 16 == 0 && HD <= 128, "head_dim: a multiple of 16, at most 128");
    constexpr int KS = HD / 16;      // k-steps of q K^T
    constexpr int NT = HD / 8;       // n-tiles of O
    constexpr int ROW = HD + kPad;   // halves per staged K or V row
    constexpr int kChunks = HD / 8;  // 16-byte pieces of a K/V row
    __shared__ __align__(16) unsigned short s_k[kKeys * ROW];
    __shared__ __align__(16) unsigned short s_v[kKeys * ROW];
    __shared__ int s_limit[kRows];  // keys [0, limit) the row attends to in the current walk

    const int tid = static_cast<int>(threadIdx.x);
    const int lane = tid & 31, warp = tid >> 5;
    const int gid = lane >> 2, tig = lane & 3;  // fragment row group, thread in group
    const int kvh = static_cast<int>(blockIdx.y);
    const int tokens_per_cta = kRows / group;
    const int t_begin = static_cast<int>(blockIdx.x) * tokens_per_cta;
    const int t_end = min(t_begin + tokens_per_cta, a.n_tokens);

    // This thread's two rows (fragment rows gid and gid + 8 of its warp's 16).
    int row_token[2], row_head[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        const int r = warp * 16 + gid + 8 * i;
        const int t = t_begin + r / group;
        const bool live = r < tokens_per_cta * group && t < t_end;
        row_token[i] = live ? t : -1;
        row_head[i] = kvh * group + r % group;
    }

    // q as A fragments: qa[kk] covers dims [16 kk, 16 kk + 16).
    unsigned qa[KS][4];
    {
        float qv[2][KS][4];
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const float* qp = row_token[i] >= 0
                                  ? a.q + row_token[i] * a.q_stride + static_cast<long long>(row_head[i]) * HD
                                  : nullptr;
#pragma unroll
            for (int kk = 0; kk < KS; ++kk) {
                const int d = kk * 16 + tig * 2;
                qv[i][kk][0] = qp ? half_range(__ldg(qp + d)) : 0.0f;
                qv[i][kk][1] = qp ? half_range(__ldg(qp + d + 1)) : 0.0f;
                qv[i][kk][2] = qp ? half_range(__ldg(qp + d + 8)) : 0.0f;
                qv[i][kk][3] = qp ? half_range(__ldg(qp + d + 9)) : 0.0f;
            }
        }
#pragma unroll
        for (int kk = 0; kk < KS; ++kk) {
            qa[kk][0] = pack_half2(qv[0][kk][0], qv[0][kk][1]);
            qa[kk][1] = pack_half2(qv[1][kk][0], qv[1][kk][1]);
            qa[kk][2] = pack_half2(qv[0][kk][2], qv[0][kk][3]);
            qa[kk][3] = pack_half2(qv[1][kk][2], qv[1][kk][3]);
        }
    }

    float o[NT][4];
#pragma unroll
    for (int n = 0; n < NT; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
    float m[2] = {dev::neg_inf(), dev::neg_inf()};
    float l[2] = {0.0f, 0.0f};  // this thread's share of each row's sum (its 16 columns per tile)

    const auto* k_cache = static_cast<const unsigned short*>(a.k_cache);
    const auto* v_cache = static_cast<const unsigned short*>(a.v_cache);

    // One walk per sequence among the CTA's tokens (consecutive runs of seq_of_token).
    for (int s_begin = t_begin; s_begin < t_end;) {
        const int seq = __ldg(a.seq_of_token + s_begin);
        int s_end = s_begin + 1;
        while (s_end < t_end && __ldg(a.seq_of_token + s_end) == seq) ++s_end;
        const int table = __ldg(a.kv_indptr + seq);
        const long long blocks = __ldg(a.kv_indptr + seq + 1) - table;
        const long long cap = min(static_cast<long long>(__ldg(a.kv_len + seq)), blocks * block_size);

        __syncthreads();  // s_limit of the previous walk is no longer read
        if (tid < kRows) {
            const int t = t_begin + tid / group;
            int lim = 0;
            if (tid < tokens_per_cta * group && t >= s_begin && t < s_end) {
                const long long pos = __ldg(a.positions + t);
                long long len = pos < 0 ? 0 : pos + 1;
                if (len > cap) len = cap;
                lim = static_cast<int>(len < 0 ? 0 : len);
            }
            s_limit[tid] = lim;
        }
        __syncthreads();
        int n_keys = 0;
        for (int r = 0; r < kRows; ++r) n_keys = max(n_keys, s_limit[r]);
        int lim[2];
#pragma unroll
        for (int i = 0; i < 2; ++i) lim[i] = s_limit[warp * 16 + gid + 8 * i];

        for (int j0 = 0; j0 < n_keys; j0 += kKeys) {
            __syncthreads();  // the previous tile's K/V are no longer read
            for (int idx = tid; idx < kKeys * kChunks; idx += kThreads) {
                const int key = idx / kChunks, chunk = idx % kChunks;
                const int j = j0 + key;
                uint4 kv4 = make_uint4(0u, 0u, 0u, 0u), vv4 = make_uint4(0u, 0u, 0u, 0u);
                if (j < n_keys) {
                    const long long blk = __ldg(a.kv_indices + table + j / block_size);
                    const long long off = ((blk * a.n_kv_heads + kvh) * block_size + j % block_size) * HD + chunk * 8;
                    kv4 = dev::ld_u128(k_cache + off);
                    vv4 = dev::ld_u128(v_cache + off);
                }
                *reinterpret_cast<uint4*>(s_k + key * ROW + chunk * 8) = kv4;
                *reinterpret_cast<uint4*>(s_v + key * ROW + chunk * 8) = vv4;
            }
            __syncthreads();

            // S = q K^T for this warp's 16 rows and the tile's 64 keys.
            float s[8][4];
#pragma unroll
            for (int n = 0; n < 8; ++n) {
                s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
                const unsigned short* kr = s_k + (n * 8 + gid) * ROW + tig * 2;
#pragma unroll
                for (int kk = 0; kk < KS; ++kk)
                    mma_16x8x16(s[n], qa[kk], ld_shared_u32(kr + kk * 16), ld_shared_u32(kr + kk * 16 + 8));
            }
            // Scale to log2 units, mask, and the online softmax of each of the two rows.
            float mx[2] = {dev::neg_inf(), dev::neg_inf()};
#pragma unroll
            for (int n = 0; n < 8; ++n)
#pragma unroll
                for (int c = 0; c < 4; ++c) {
                    const int i = c / 2;
                    const int j = j0 + n * 8 + tig * 2 + (c & 1);
                    const float x = j < lim[i] ? s[n][c] * a.scale_log2 : dev::neg_inf();
                    s[n][c] = x;
                    mx[i] = fmaxf(mx[i], x);
                }
            float corr[2], base[2];
#pragma unroll
            for (int i = 0; i < 2; ++i) {
                mx[i] = fmaxf(mx[i], __shfl_xor_sync(dev::kFullMask, mx[i], 1));
                mx[i] = fmaxf(mx[i], __shfl_xor_sync(dev::kFullMask, mx[i], 2));
                const float mn = fmaxf(m[i], mx[i]);
                base[i] = mn == dev::neg_inf() ? 0.0f : mn;  // a row with nothing seen yet: weights 0
                corr[i] = exp2f(m[i] - base[i]);
                m[i] = mn;
                l[i] *= corr[i];
            }
#pragma unroll
            for (int n = 0; n < 8; ++n)
#pragma unroll
                for (int c = 0; c < 4; ++c) {
                    const int i = c / 2;
                    const float p = exp2f(s[n][c] - base[i]);
                    s[n][c] = p;
                    l[i] += p;
                }
#pragma unroll
            for (int n = 0; n < NT; ++n) {
                o[n][0] *= corr[0];
                o[n][1] *= corr[0];
                o[n][2] *= corr[1];
                o[n][3] *= corr[1];
            }
            // O += P V: keys [16 ks, 16 ks + 16) of the tile per step.
#pragma unroll
            for (int ks = 0; ks < 4; ++ks) {
                const unsigned pa[4] = {pack_half2(s[2 * ks][0], s[2 * ks][1]), pack_half2(s[2 * ks][2], s[2 * ks][3]),
                                        pack_half2(s[2 * ks + 1][0], s[2 * ks + 1][1]),
                                        pack_half2(s[2 * ks + 1][2], s[2 * ks + 1][3])};
                const unsigned short* vr = s_v + (ks * 16 + lane % 16) * ROW;
#pragma unroll
                for (int n = 0; n < NT; ++n) {
                    unsigned b0, b1;
                    ldmatrix_x2_trans(b0, b1, vr + n * 8);
                    mma_16x8x16(o[n], pa, b0, b1);
                }
            }
        }
        s_begin = s_end;
    }

    // Each row's sum over the four threads that hold its columns, then out = O / sum.
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        l[i] += __shfl_xor_sync(dev::kFullMask, l[i], 1);
        l[i] += __shfl_xor_sync(dev::kFullMask, l[i], 2);
    }
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        if (row_token[i] < 0) continue;
        float* op = a.out + row_token[i] * a.out_stride + static_cast<long long>(row_head[i]) * HD + tig * 2;
        const float inv = l[i] > 0.0f ? 1.0f / l[i] : 0.0f;
#pragma unroll
        for (int n = 0; n < NT; ++n) {
            op[n * 8] = o[n][2 * i] * inv;
            op[n * 8 + 1] = o[n][2 * i + 1] * inv;
        }
    }
}

}  // namespace

bool attention_prefill_flash_supported(int32_t head_dim, int32_t group, KvType type) {
    return type == KvType::f16 && (head_dim == 64 || head_dim == 128) && group >= 1 && group <= kRows;
}

cudaError_t attention_prefill_flash(const float* q, int64_t q_stride, int32_t n_q_heads, const PagedKvLayer& kv,
                                    const TokenBatch& batch, float scale, float* out, int64_t out_stride,
                                    cudaStream_t stream) {
    attn::PagedAttentionArgs a;
    const cudaError_t err = detail::attention_args(q, q_stride, n_q_heads, kv, batch, scale, out, out_stride, a);
    if (err != cudaSuccess) return err;
    const int32_t group = n_q_heads / kv.n_kv_heads;
    if (!attention_prefill_flash_supported(kv.head_dim, group, kv.type)) return cudaErrorNotSupported;
    if (batch.n_tokens == 0) return cudaSuccess;
    const int tokens_per_cta = kRows / group;
    const dim3 grid(detail::blocks_for(batch.n_tokens, tokens_per_cta), static_cast<unsigned>(kv.n_kv_heads));
    if (kv.head_dim == 64)
        flash_prefill_kernel<64><<<grid, kThreads, 0, stream>>>(a, group, kv.block_size);
    else
        flash_prefill_kernel<128><<<grid, kThreads, 0, stream>>>(a, group, kv.block_size);
    return detail::launch_status();
}

}  // namespace inlay::cuda
