// The split planner of the decode attention and the size of its scratch (host only).
#include <algorithm>
#include <cstdint>

#include "inlay_cuda_kernels.h"

namespace inlay::cuda {

AttentionSplitPlan plan_attention_split(int64_t max_kv_len, int64_t n_ctas, int32_t n_sms, int32_t block_size,
                                        int32_t max_splits, int32_t min_keys_per_split) {
    const AttentionSplitPlan whole{1, 0};
    if (max_kv_len <= 0 || max_kv_len > INT32_MAX || n_ctas <= 0 || n_sms <= 0 || block_size <= 0 || max_splits <= 1)
        return whole;
    const int64_t min_keys = std::max<int64_t>(min_keys_per_split, block_size);
    // Two CTAs per SM keep every SM busy while another CTA waits on memory.
    const int64_t target = 2 * static_cast<int64_t>(n_sms);
    if (n_ctas >= target) return whole;
    int64_t want = (target + n_ctas - 1) / n_ctas;
    want = std::min({want, max_kv_len / min_keys, static_cast<int64_t>(max_splits)});
    if (want <= 1) return whole;
    // keys_per_split >= max_kv_len / want >= min_keys; a multiple of the block size.
    int64_t keys = (max_kv_len + want - 1) / want;
    keys = (keys + block_size - 1) / block_size * block_size;
    const int64_t n = (max_kv_len + keys - 1) / keys;  // <= want; split n-1 starts below max_kv_len
    if (n <= 1) return whole;
    return AttentionSplitPlan{static_cast<int32_t>(n), static_cast<int32_t>(keys)};
}

size_t attention_scratch_floats(int64_t n_tokens, int32_t n_q_heads, int32_t head_dim, int32_t n_splits) {
    if (n_tokens <= 0 || n_q_heads <= 0 || head_dim <= 0 || n_splits <= 0) return 0;
    const auto rows = static_cast<size_t>(n_tokens) * static_cast<size_t>(n_q_heads) * static_cast<size_t>(n_splits);
    return rows * (static_cast<size_t>(head_dim) + 2);
}

}  // namespace inlay::cuda
