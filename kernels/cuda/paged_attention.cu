// Launchers of the paged attention kernels and the shapes nvcc builds.
#include "attention_args.h"
#include "inlay_cuda_kernels.h"
#include "launch_util.h"
#include "paged_attention.cuh"
#include "paged_attention_generic.h"

namespace inlay::cuda {
namespace {

using attn::KvF16;
using attn::PagedAttentionArgs;

template <int HD, int G, class KV>
const void* kernel_of() {
    return reinterpret_cast<const void*>(&attn::paged_attention_kernel<HD, G, 16, KV>);
}

template <int HD, class KV>
const void* by_group(int32_t group) {
    switch (group) {
        case 1:
            return kernel_of<HD, 1, KV>();
        case 2:
            return kernel_of<HD, 2, KV>();
        case 4:
            return kernel_of<HD, 4, KV>();
        case 8:
            return kernel_of<HD, 8, KV>();
        default:
            return nullptr;
    }
}

template <class KV>
const void* by_head_dim(int32_t head_dim, int32_t group) {
    switch (head_dim) {
        case 64:
            return by_group<64, KV>(group);
        case 128:
            return by_group<128, KV>(group);
        default:
            return nullptr;
    }
}

// The nvcc-built instantiation for a shape: head_dim 64/128, group 1/2/4/8, block 16.
const void* builtin_kernel(int32_t head_dim, int32_t group, int32_t block_size, KvType type) {
    if (block_size != 16) return nullptr;
    return type == KvType::f16 ? by_head_dim<KvF16>(head_dim, group) : by_head_dim<float>(head_dim, group);
}

// Validates the arguments and fills the kernel's argument block (without the split).
// kernel: the one given, else the built-in one, else null with generic = true when the
// generic kernel serves the shape.
cudaError_t prepare(const float* q, int64_t q_stride, int32_t n_q_heads, const PagedKvLayer& kv,
                    const TokenBatch& batch, float scale, float* out, int64_t out_stride, const void*& kernel,
                    bool& generic, PagedAttentionArgs& a) {
    const cudaError_t err = detail::attention_args(q, q_stride, n_q_heads, kv, batch, scale, out, out_stride, a);
    if (err != cudaSuccess) return err;
    const int32_t group = n_q_heads / kv.n_kv_heads;
    if (!kernel) kernel = builtin_kernel(kv.head_dim, group, kv.block_size, kv.type);
    generic = !kernel && detail::attention_generic_supported(kv.head_dim, group, kv.block_size, kv.type);
    if (!kernel && !generic) return cudaErrorNotSupported;
    return cudaSuccess;
}

cudaError_t launch_main(const void* kernel, bool generic, const PagedKvLayer& kv, PagedAttentionArgs& a,
                        cudaStream_t stream) {
    if (generic) return detail::launch_attention_generic(a, kv.block_size, kv.type, stream);
    void* args[] = {&a};
    const dim3 grid(static_cast<unsigned>(a.n_tokens), static_cast<unsigned>(a.n_kv_heads),
                    static_cast<unsigned>(a.n_splits));
    const cudaError_t err = cudaLaunchKernel(kernel, grid, dim3(attn::kThreads), args, 0, stream);
    return err != cudaSuccess ? err : detail::launch_status();
}

}  // namespace

bool attention_has_builtin(int32_t head_dim, int32_t group, int32_t block_size, KvType type) {
    return builtin_kernel(head_dim, group, block_size, type) != nullptr;
}

bool attention_supported(int32_t head_dim, int32_t group, int32_t block_size, KvType type) {
    if (type != KvType::f16 && type != KvType::f32) return false;
    return builtin_kernel(head_dim, group, block_size, type) != nullptr ||
           detail::attention_generic_supported(head_dim, group, block_size, type);
}

cudaError_t attention_decode(const float* q, int64_t q_stride, int32_t n_q_heads, const PagedKvLayer& kv,
                             const TokenBatch& batch, float scale, float* out, int64_t out_stride, cudaStream_t stream,
                             const void* kernel) {
    PagedAttentionArgs a;
    bool generic = false;
    const cudaError_t err = prepare(q, q_stride, n_q_heads, kv, batch, scale, out, out_stride, kernel, generic, a);
    if (err != cudaSuccess) return err;
    if (batch.n_tokens == 0) return cudaSuccess;
    return launch_main(kernel, generic, kv, a, stream);
}

cudaError_t attention_decode_split(const float* q, int64_t q_stride, int32_t n_q_heads, const PagedKvLayer& kv,
                                   const TokenBatch& batch, float scale, const AttentionSplitPlan& plan, float* scratch,
                                   float* out, int64_t out_stride, cudaStream_t stream, const void* kernel) {
    if (plan.n_splits < 1 || plan.n_splits > detail::kMaxGridYZ) return cudaErrorInvalidValue;
    if (plan.n_splits == 1)
        return attention_decode(q, q_stride, n_q_heads, kv, batch, scale, out, out_stride, stream, kernel);
    if (!scratch || plan.keys_per_split <= 0 || kv.block_size <= 0 || plan.keys_per_split % kv.block_size != 0)
        return cudaErrorInvalidValue;
    PagedAttentionArgs a;
    bool generic = false;
    cudaError_t err = prepare(q, q_stride, n_q_heads, kv, batch, scale, out, out_stride, kernel, generic, a);
    if (err != cudaSuccess) return err;
    if (batch.n_tokens == 0) return cudaSuccess;
    a.n_splits = plan.n_splits;
    a.keys_per_split = plan.keys_per_split;
    a.scratch = scratch;
    err = launch_main(kernel, generic, kv, a, stream);
    if (err != cudaSuccess) return err;
    const int64_t pairs = static_cast<int64_t>(batch.n_tokens) * n_q_heads;
    if (pairs > detail::kMaxGridX) return cudaErrorInvalidValue;
    attn::paged_attention_merge_kernel<<<static_cast<unsigned>(pairs), attn::kThreads, 0, stream>>>(a);
    return detail::launch_status();
}

cudaError_t attention_prefill(const float* q, int64_t q_stride, int32_t n_q_heads, const PagedKvLayer& kv,
                              const TokenBatch& batch, float scale, float* out, int64_t out_stride, cudaStream_t stream,
                              const void* kernel) {
    return attention_decode(q, q_stride, n_q_heads, kv, batch, scale, out, out_stride, stream, kernel);
}

}  // namespace inlay::cuda
