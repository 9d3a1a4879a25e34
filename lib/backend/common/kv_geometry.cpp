#include "backend/common/kv_geometry.h"

#include "core/error.h"

namespace inlay {

size_t kv_canonical_block_bytes(const KvGeometry& g) {
    if (g.dtype != DType::F16 && g.dtype != DType::F32)
        fail(INLAY_ERR_UNSUPPORTED, "KV cache type {} is not supported (f16 or f32)", dtype_name(g.dtype));
    constexpr int64_t kLimit = int64_t{1} << 12;  // per dimension: above any model; the product stays far from overflow
    if (g.n_layers <= 0 || g.n_kv_heads <= 0 || g.head_dim <= 0 || g.block_size <= 0 || g.n_layers > kLimit ||
        g.n_kv_heads > kLimit || g.head_dim > kLimit || g.block_size > kLimit)
        fail(INLAY_ERR_INVALID_ARGUMENT, "invalid KV geometry: {} layers x {} KV heads x {} dims, blocks of {}",
             g.n_layers, g.n_kv_heads, g.head_dim, g.block_size);
    const size_t elem = g.dtype == DType::F16 ? 2 : 4;
    const size_t bytes = static_cast<size_t>(g.n_layers) * 2 * static_cast<size_t>(g.n_kv_heads) *
                         static_cast<size_t>(g.block_size) * static_cast<size_t>(g.head_dim) * elem;
    if (bytes > (size_t{1} << 40))
        fail(INLAY_ERR_INVALID_ARGUMENT, "a KV block of {} bytes is larger than any device", bytes);
    return bytes;
}

}  // namespace inlay
