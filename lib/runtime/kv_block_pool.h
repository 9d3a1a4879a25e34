// KvBlockPool: the bookkeeping of a preallocated KV block store shared by the sequences
// of one or more engines (models of the same block geometry on the same device).
//
// Blocks are reference-counted: a sequence's block table holds one reference per entry,
// so forks and prefix reuse share blocks. A block may be written only while it is
// writable() (one reference and not in the prefix cache); otherwise the writer copies it
// first (copy-on-write, done by the engine through Executor::copy_block).
//
// Prefix cache: a full block can be registered under the exact key (owner, parent block,
// its block_size tokens), where the parent is the previous block of the same table, itself
// registered (or none for the first block). So a key names the token content of the whole
// prefix up to the block's end, and a lookup never returns a block computed for another
// prefix or another model. Parents are identified by (id, epoch): a block's epoch changes
// whenever it leaves the cache, so stale children can never match. Registered blocks whose
// last reference goes away stay cached and are evicted least-recently-released first when
// fresh blocks run out.
//
// Owners (engines) get an id for accounting: held(owner) counts distinct blocks with
// references taken by that owner; an owner's cap (0: none) bounds it. Every method is
// thread-safe (one internal mutex, never held while calling out).
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "model/executor.h"

namespace inlay {

using BlockId = int32_t;

class KvBlockPool {
public:
    struct Stats {
        int64_t total = 0;
        int64_t free = 0;     // never used or released without a cache entry
        int64_t cached = 0;   // no reference, kept for prefix reuse (evictable)
        int64_t used = 0;     // at least one reference
        int64_t shared = 0;   // more than one reference
    };

    // Takes the store whose blocks it hands out (all of them).
    explicit KvBlockPool(std::shared_ptr<KvStore> store);
    KvBlockPool(const KvBlockPool&) = delete;
    KvBlockPool& operator=(const KvBlockPool&) = delete;

    [[nodiscard]] KvStore& store() const { return *store_; }
    [[nodiscard]] const KvGeometry& geometry() const { return store_->geometry(); }
    [[nodiscard]] int64_t block_size() const { return store_->geometry().block_size; }
    [[nodiscard]] int64_t n_blocks() const { return static_cast<int64_t>(blocks_.size()); }

    // Registers an owner. on_pressure (may be empty) is called, with no lock held, when
    // another owner could not get a block: the owner should release blocks it holds for
    // idle use (e.g. idle sessions' caches). It must not block.
    int32_t add_owner(std::function<void()> on_pressure);
    // Drops the owner's cache entries; its references must all be released already.
    void remove_owner(int32_t owner);
    // Caps the blocks the owner may hold (0: no cap). Lowering it below held(owner) does
    // not take blocks away: the owner releases them itself.
    void set_cap(int32_t owner, int64_t max_blocks);
    [[nodiscard]] int64_t cap(int32_t owner) const;
    [[nodiscard]] int64_t held(int32_t owner) const;
    // Blocks the owner could still take now (free, evictable and under its cap).
    [[nodiscard]] int64_t available(int32_t owner) const;
    // Blocks held by owners other than `owner`.
    [[nodiscard]] int64_t held_by_others(int32_t owner) const;

    // A fresh block for owner with one reference (its contents are stale), evicting the
    // least recently released cached block if nothing is free; nullopt when none can be
    // had or the owner's cap is reached.
    std::optional<BlockId> allocate(int32_t owner);
    // n fresh blocks appended to out, or none at all (returns false).
    bool allocate_n(int32_t owner, int64_t n, std::vector<BlockId>& out);
    // One more reference to a block that has at least one (fork, pinning).
    void retain(BlockId block);
    // Drops one reference; at zero the block becomes evictable if cached, else free.
    void release(BlockId block);
    // Releases every block of a table, last first (so a prefix's tail is evicted before
    // its head), and clears it.
    void release_all(std::vector<BlockId>& table);
    // Releases the blocks of a table after its first `keep`, last first.
    void release_tail(std::vector<BlockId>& table, size_t keep);

    [[nodiscard]] int32_t ref_count(BlockId block) const;
    [[nodiscard]] bool is_cached(BlockId block) const;
    // One reference and not cached: the holder may write into it.
    [[nodiscard]] bool writable(BlockId block) const;

    // Registers a full, referenced block under (owner, parent, tokens); parent is the
    // previous block of its table (-1 for the first) and must itself be cached. Returns
    // false (and changes nothing) if the parent is not cached, the block already is, or
    // another block holds that key.
    bool register_full(int32_t owner, BlockId parent, BlockId block, std::span<const int32_t> tokens);
    // The cached block that follows `parent` (-1: none) with these block_size tokens,
    // with one reference taken for owner; nullopt if none (or the owner's cap is reached).
    std::optional<BlockId> lookup(int32_t owner, BlockId parent, std::span<const int32_t> tokens);

    // Calls every other owner's on_pressure (outside the lock).
    void signal_pressure(int32_t from_owner);

    [[nodiscard]] Stats stats() const;

private:
    struct Block {
        int32_t refs = 0;
        int32_t owner = -1;      // who holds the references / whose cache entry it is
        uint64_t epoch = 0;      // changes whenever the block leaves the cache
        bool cached = false;
        uint64_t key_hash = 0;
        BlockId parent = -1;
        uint64_t parent_epoch = 0;
        std::vector<int32_t> tokens;     // the key's tokens while cached
        std::list<BlockId>::iterator lru;  // position in evictable_ when refs == 0 and cached
    };
    struct Owner {
        bool live = false;
        int64_t held = 0;
        int64_t cap = 0;
        std::function<void()> on_pressure;
    };

    [[nodiscard]] uint64_t key_hash(int32_t owner, BlockId parent, uint64_t parent_epoch,
                                    std::span<const int32_t> tokens) const;
    void check_block(BlockId block) const;
    [[nodiscard]] bool under_cap(int32_t owner) const;
    Owner& owner_ref(int32_t owner);
    const Owner& owner_ref(int32_t owner) const;
    void uncache(BlockId block);
    std::optional<BlockId> take_block(int32_t owner);
    void add_ref(BlockId block, int32_t owner);

    std::shared_ptr<KvStore> store_;
    mutable std::mutex mutex_;
    std::vector<Block> blocks_;
    std::vector<BlockId> free_;        // stack: recently freed blocks are reused first (warm pages)
    std::list<BlockId> evictable_;     // cached, no references; front = least recently released
    std::unordered_multimap<uint64_t, BlockId> index_;
    std::vector<Owner> owners_;
};

}  // namespace inlay
