// KvPoolSet: a KV memory budget that several models can share (the C ABI's
// inlay_kv_pool). Models whose block geometry (layers x KV heads x head dim x block size
// x dtype) and device match get the same KvBlockPool; a model of another geometry gets
// a pool of its own, with the same budget. Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/kv_block_pool.h"

namespace inlay {

struct KvPoolOptions {
    int64_t budget_bytes = 0;   // used when budget_blocks is 0
    int64_t budget_blocks = 0;
    int64_t block_size = 16;    // token slots per block
    DType dtype = DType::F16;   // K/V element type
    // A budget in bytes holds at most this many blocks (0: no limit). The host keeps
    // ~100 bytes of bookkeeping per block, so a device-sized budget in tiny blocks would
    // otherwise cost gigabytes of host memory for a cache no model fills.
    int64_t max_blocks = 0;
};

// Throws INLAY_ERR_INVALID_ARGUMENT (or UNSUPPORTED) for options that make no pool.
void validate(const KvPoolOptions& options);
// Validates options and returns the block count of the budget
// for blocks of block_bytes (INLAY_ERR_KV_FULL if it holds none).
int64_t kv_budget_blocks(const KvPoolOptions& options, size_t block_bytes);

// A new pool for this executor's model under `options`.
std::shared_ptr<KvBlockPool> make_kv_pool(const Executor& executor, const KvPoolOptions& options);

class KvPoolSet {
public:
    explicit KvPoolSet(const KvPoolOptions& options);

    [[nodiscard]] const KvPoolOptions& options() const { return options_; }
    // The pool shared by models of this executor's geometry, made on first use.
    std::shared_ptr<KvBlockPool> pool_for(const Executor& executor);
    [[nodiscard]] size_t n_pools() const;

private:
    KvPoolOptions options_;
    mutable std::mutex mutex_;
    std::vector<std::shared_ptr<KvBlockPool>> pools_;
};

}  // namespace inlay
