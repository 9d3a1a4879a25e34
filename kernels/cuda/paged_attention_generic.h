// The generic paged attention kernel (paged_attention_generic.cu): head_dim, group and
// block_size are run-time values. Internal to the launchers in paged_attention.cu.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "inlay_cuda_kernels.h"
#include "paged_attention_args.h"

namespace inlay::cuda::detail {

// The shapes the generic kernel serves: head_dim even in [2, 256], group 1..32, any
// block_size >= 1, f16 or f32 KV.
[[nodiscard]] bool attention_generic_supported(int32_t head_dim, int32_t group, int32_t block_size, KvType type);

// Enqueues the generic kernel on grid (n_tokens, n_kv_heads, n_splits) for the argument
// block `a` (filled as for the templated kernel; the merge of splits is the caller's).
// The shape must be attention_generic_supported.
cudaError_t launch_attention_generic(const attn::PagedAttentionArgs& a, int32_t block_size, KvType type,
                                     cudaStream_t stream);

}  // namespace inlay::cuda::detail
