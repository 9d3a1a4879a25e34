// Host side of the attention launchers (paged_attention.cu, flash_prefill.cu): the checks
// every attention launch makes and the argument block they all pass.
#pragma once

#include "inlay_cuda_kernels.h"
#include "launch_util.h"
#include "paged_attention_args.h"

namespace inlay::cuda::detail {

// cudaErrorInvalidValue for arguments no attention kernel takes (null pointers, a batch
// without its arrays, heads that do not divide into groups, strides shorter than a row,
// K/V not 16-byte aligned); else fills `a` for an unsplit launch and returns cudaSuccess.
inline cudaError_t attention_args(const float* q, int64_t q_stride, int32_t n_q_heads, const PagedKvLayer& kv,
                                  const TokenBatch& batch, float scale, float* out, int64_t out_stride,
                                  attn::PagedAttentionArgs& a) {
    if (!q || !out || !kv.k || !kv.v) return cudaErrorInvalidValue;
    if (batch.n_tokens < 0 || batch.n_seqs < 1 || !batch.positions || !batch.seq_of_token || !batch.kv_indptr ||
        !batch.kv_indices || !batch.kv_len)
        return cudaErrorInvalidValue;
    if (kv.n_kv_heads <= 0 || n_q_heads <= 0 || n_q_heads % kv.n_kv_heads != 0) return cudaErrorInvalidValue;
    if (kv.n_kv_heads > kMaxGridYZ || kv.head_dim <= 0 || kv.block_size <= 0) return cudaErrorInvalidValue;
    if (kv.type != KvType::f16 && kv.type != KvType::f32) return cudaErrorInvalidValue;
    const int64_t row = static_cast<int64_t>(n_q_heads) * kv.head_dim;
    if (q_stride < row || out_stride < row) return cudaErrorInvalidValue;
    if (!aligned(kv.k, 16) || !aligned(kv.v, 16)) return cudaErrorInvalidValue;
    a = attn::PagedAttentionArgs{};
    a.q = q;
    a.q_stride = q_stride;
    a.k_cache = kv.k;
    a.v_cache = kv.v;
    a.n_q_heads = n_q_heads;
    a.n_kv_heads = kv.n_kv_heads;
    a.n_tokens = batch.n_tokens;
    a.positions = batch.positions;
    a.seq_of_token = batch.seq_of_token;
    a.kv_indptr = batch.kv_indptr;
    a.kv_indices = batch.kv_indices;
    a.kv_len = batch.kv_len;
    a.scale_log2 = scale * 1.4426950408889634f;  // log2(e): the kernels exponentiate with exp2f
    a.n_splits = 1;
    a.keys_per_split = 0;
    a.out = out;
    a.out_stride = out_stride;
    a.scratch = nullptr;
    a.head_dim = kv.head_dim;
    return cudaSuccess;
}

}  // namespace inlay::cuda::detail
