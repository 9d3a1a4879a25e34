#include "runtime/kv_pool_set.h"

#include <algorithm>

#include "core/error.h"

namespace inlay {

void validate(const KvPoolOptions& o) {
    if (o.budget_bytes < 0 || o.budget_blocks < 0) fail(INLAY_ERR_INVALID_ARGUMENT, "a KV budget must not be negative");
    if (o.block_size < 1 || o.block_size > 4096)
        fail(INLAY_ERR_INVALID_ARGUMENT, "KV block size {} outside [1, 4096]", o.block_size);
    if (o.budget_blocks == 0 && o.budget_bytes == 0)
        fail(INLAY_ERR_INVALID_ARGUMENT, "a KV budget needs budget_bytes or budget_blocks");
    if (o.dtype != DType::F16 && o.dtype != DType::F32) fail(INLAY_ERR_UNSUPPORTED, "KV cache type must be f16 or f32");
}

int64_t kv_budget_blocks(const KvPoolOptions& o, size_t block_bytes) {
    validate(o);
    int64_t blocks = o.budget_blocks > 0 ? o.budget_blocks
                                         : static_cast<int64_t>(static_cast<uint64_t>(o.budget_bytes) / block_bytes);
    if (o.budget_blocks == 0 && o.max_blocks > 0) blocks = std::min(blocks, o.max_blocks);
    if (blocks < 1)
        fail(INLAY_ERR_KV_FULL, "a KV budget of {} bytes holds no block of {} bytes", o.budget_bytes, block_bytes);
    if (blocks > (int64_t{1} << 30)) fail(INLAY_ERR_INVALID_ARGUMENT, "a KV budget of {} blocks is too large", blocks);
    return blocks;
}

std::shared_ptr<KvBlockPool> make_kv_pool(const Executor& executor, const KvPoolOptions& options) {
    const KvGeometry geometry = executor.kv_geometry(options.block_size, options.dtype);
    const size_t block_bytes = executor.kv_block_bytes(geometry);
    const int64_t blocks = kv_budget_blocks(options, block_bytes);
    // The blocks are allocated now: a budget beyond the device's memory (an absurd context
    // length or budget) is refused before trying, not found out by the allocator or the
    // OOM killer.
    const DeviceMemory memory = executor.memory_info();
    const double bytes = static_cast<double>(blocks) * static_cast<double>(block_bytes);
    if (memory.total_bytes > 0 && bytes > static_cast<double>(memory.total_bytes))
        fail(INLAY_ERR_OUT_OF_MEMORY,
             "a KV cache of {} blocks of {} bytes ({:.0f} bytes) exceeds the {} bytes of memory of {}: lower the "
             "context length or the KV budget",
             blocks, block_bytes, bytes, memory.total_bytes, executor.kv_device());
    return std::make_shared<KvBlockPool>(executor.new_kv_store(geometry, blocks));
}

KvPoolSet::KvPoolSet(const KvPoolOptions& options) : options_(options) {
    validate(options_);
}

std::shared_ptr<KvBlockPool> KvPoolSet::pool_for(const Executor& executor) {
    std::lock_guard lock(mutex_);
    const KvGeometry geometry = executor.kv_geometry(options_.block_size, options_.dtype);
    for (const auto& pool : pools_)
        if (pool->geometry() == geometry && pool->store().device() == executor.kv_device()) return pool;
    pools_.push_back(make_kv_pool(executor, options_));
    return pools_.back();
}

size_t KvPoolSet::n_pools() const {
    std::lock_guard lock(mutex_);
    return pools_.size();
}

}  // namespace inlay
