// The argument block of paged_attention_kernel and paged_attention_merge_kernel, passed
// by value as their only parameter. Plain types only: this header is read by the host
// compiler (to fill it), by nvcc and by NVRTC (embedded, see nvrtc_sources.h), so a
// kernel compiled at load time takes exactly the argument the launchers pass.
#pragma once

namespace inlay {
namespace cuda {
namespace attn {

struct PagedAttentionArgs {
    const float* q;  // [n_tokens][n_q_heads][head_dim], q_stride floats between tokens
    long long q_stride;
    const void* k_cache;  // [block][kv_head][slot][head_dim] of the kernel's KV type
    const void* v_cache;  // same layout as k_cache
    int n_q_heads;
    int n_kv_heads;
    int n_tokens;
    const int* positions;     // [n_tokens]
    const int* seq_of_token;  // [n_tokens]
    const int* kv_indptr;     // [n_seqs + 1]
    const int* kv_indices;    // block ids
    const int* kv_len;        // [n_seqs]
    float scale_log2;         // softmax scale * log2(e)
    int n_splits;             // gridDim.z of the main kernel
    int keys_per_split;       // a multiple of the block size when n_splits > 1
    float* out;               // [n_tokens][n_q_heads][head_dim], out_stride floats between tokens
    long long out_stride;
    // n_splits > 1: per (token, q head, split) -- index i = (t * n_q_heads + h) * n_splits + split --
    // scratch[i * head_dim + d] is the unnormalised accumulator and, after all of those,
    // scratch[n_tokens * n_q_heads * n_splits * head_dim + 2 * i + {0, 1}] = (max, sum), the max
    // in log2 units (scores * scale_log2).
    float* scratch;
    int head_dim;  // for the merge kernel (the main kernel has it as a template argument)
};

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
// The keys [begin, end) that the CTA of token t and split `split` attends to (the token's
// causal prefix, capped by its sequence's KV length and block table), and where that
// sequence's block table starts in kv_indices. Shared by the built-in and the generic
// kernels so that both cut the keys the same way.
struct CtaKeys {
    int table;
    long long begin;
    long long end;
};

__device__ inline CtaKeys cta_keys(const PagedAttentionArgs& a, int t, int split, long long block_size) {
    const int seq = __ldg(a.seq_of_token + t);
    const int pos = __ldg(a.positions + t);
    const int table = __ldg(a.kv_indptr + seq);
    const int n_blocks = __ldg(a.kv_indptr + seq + 1) - table;
    long long len = pos < 0 ? 0 : static_cast<long long>(pos) + 1;
    const long long kv_len = __ldg(a.kv_len + seq);
    if (len > kv_len) len = kv_len;
    if (len > static_cast<long long>(n_blocks) * block_size) len = static_cast<long long>(n_blocks) * block_size;
    if (len < 0) len = 0;
    CtaKeys k{table, 0, len};
    if (a.n_splits > 1) {
        k.begin = static_cast<long long>(split) * a.keys_per_split;
        k.end = k.begin + a.keys_per_split < len ? k.begin + a.keys_per_split : len;
    }
    return k;
}
#endif

}  // namespace attn
}  // namespace cuda
}  // namespace inlay
