#include "runtime/kv_block_pool.h"

#include <algorithm>

#include "core/error.h"

namespace inlay {
namespace {

uint64_t mix(uint64_t h, uint64_t v) {
    // splitmix64 finaliser over a running FNV-style combine: cheap and well spread.
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 31;
    return h;
}

}  // namespace

KvBlockPool::KvBlockPool(std::shared_ptr<KvStore> store) : store_(std::move(store)) {
    if (!store_ || store_->n_blocks() <= 0) fail(INLAY_ERR_INVALID_ARGUMENT, "KvBlockPool: empty KV store");
    if (store_->n_blocks() > INT32_MAX) fail(INLAY_ERR_INVALID_ARGUMENT, "KvBlockPool: too many blocks");
    blocks_.resize(static_cast<size_t>(store_->n_blocks()));
    free_.reserve(blocks_.size());
    // Block 0 on top of the stack: low ids are handed out first.
    for (auto b = static_cast<BlockId>(blocks_.size()); b-- > 0;) free_.push_back(b);
}

uint64_t KvBlockPool::key_hash(int32_t owner, BlockId parent, uint64_t parent_epoch,
                               std::span<const int32_t> tokens) const {
    uint64_t h = mix(0x5eed, static_cast<uint64_t>(static_cast<uint32_t>(owner)));
    h = mix(h, static_cast<uint64_t>(static_cast<uint32_t>(parent)));
    h = mix(h, parent_epoch);
    for (const int32_t t : tokens) h = mix(h, static_cast<uint32_t>(t));
    return h;
}

void KvBlockPool::check_block(BlockId block) const {
    if (block < 0 || static_cast<size_t>(block) >= blocks_.size())
        fail(INLAY_ERR_INTERNAL, "KV block {} outside the pool of {}", block, blocks_.size());
}

KvBlockPool::Owner& KvBlockPool::owner_ref(int32_t owner) {
    if (owner < 0 || static_cast<size_t>(owner) >= owners_.size() || !owners_[static_cast<size_t>(owner)].live)
        fail(INLAY_ERR_INTERNAL, "KV pool owner {} is not registered", owner);
    return owners_[static_cast<size_t>(owner)];
}

const KvBlockPool::Owner& KvBlockPool::owner_ref(int32_t owner) const {
    if (owner < 0 || static_cast<size_t>(owner) >= owners_.size() || !owners_[static_cast<size_t>(owner)].live)
        fail(INLAY_ERR_INTERNAL, "KV pool owner {} is not registered", owner);
    return owners_[static_cast<size_t>(owner)];
}

int32_t KvBlockPool::add_owner(std::function<void()> on_pressure) {
    std::lock_guard lock(mutex_);
    for (size_t i = 0; i < owners_.size(); ++i)
        if (!owners_[i].live) {
            owners_[i] = Owner{true, 0, 0, std::move(on_pressure)};
            return static_cast<int32_t>(i);
        }
    owners_.push_back(Owner{true, 0, 0, std::move(on_pressure)});
    return static_cast<int32_t>(owners_.size() - 1);
}

void KvBlockPool::remove_owner(int32_t owner) {
    std::lock_guard lock(mutex_);
    Owner& o = owner_ref(owner);
    if (o.held != 0) fail(INLAY_ERR_INTERNAL, "KV pool owner {} removed while holding {} blocks", owner, o.held);
    // Its cache entries can never be looked up again: free them now.
    for (size_t b = 0; b < blocks_.size(); ++b) {
        Block& blk = blocks_[b];
        if (blk.cached && blk.owner == owner && blk.refs == 0) {
            uncache(static_cast<BlockId>(b));
            free_.push_back(static_cast<BlockId>(b));
        }
    }
    o = Owner{};
}

void KvBlockPool::set_cap(int32_t owner, int64_t max_blocks) {
    if (max_blocks < 0) fail(INLAY_ERR_INVALID_ARGUMENT, "a KV block cap must not be negative");
    std::lock_guard lock(mutex_);
    owner_ref(owner).cap = max_blocks;
}

int64_t KvBlockPool::cap(int32_t owner) const {
    std::lock_guard lock(mutex_);
    return owner_ref(owner).cap;
}

int64_t KvBlockPool::held(int32_t owner) const {
    std::lock_guard lock(mutex_);
    return owner_ref(owner).held;
}

int64_t KvBlockPool::available(int32_t owner) const {
    std::lock_guard lock(mutex_);
    const Owner& o = owner_ref(owner);
    int64_t n = static_cast<int64_t>(free_.size() + evictable_.size());
    if (o.cap > 0) n = std::min(n, std::max<int64_t>(0, o.cap - o.held));
    return n;
}

int64_t KvBlockPool::held_by_others(int32_t owner) const {
    std::lock_guard lock(mutex_);
    int64_t n = 0;
    for (size_t i = 0; i < owners_.size(); ++i)
        if (owners_[i].live && static_cast<int32_t>(i) != owner) n += owners_[i].held;
    return n;
}

bool KvBlockPool::under_cap(int32_t owner) const {
    const Owner& o = owner_ref(owner);
    return o.cap == 0 || o.held < o.cap;
}

void KvBlockPool::uncache(BlockId block) {
    Block& b = blocks_[static_cast<size_t>(block)];
    if (!b.cached) return;
    const auto range = index_.equal_range(b.key_hash);
    for (auto it = range.first; it != range.second; ++it)
        if (it->second == block) {
            index_.erase(it);
            break;
        }
    if (b.refs == 0) evictable_.erase(b.lru);
    b.cached = false;
    b.tokens.clear();
    ++b.epoch;
}

void KvBlockPool::add_ref(BlockId block, int32_t owner) {
    Block& b = blocks_[static_cast<size_t>(block)];
    if (b.refs == 0) {
        if (b.cached) evictable_.erase(b.lru);
        b.owner = owner;
        ++owner_ref(owner).held;
    } else if (b.owner != owner) {
        fail(INLAY_ERR_INTERNAL, "KV block {} referenced by owners {} and {}", block, b.owner, owner);
    }
    ++b.refs;
}

std::optional<BlockId> KvBlockPool::take_block(int32_t owner) {
    if (!under_cap(owner)) return std::nullopt;
    BlockId block = -1;
    if (!free_.empty()) {
        block = free_.back();
        free_.pop_back();
    } else if (!evictable_.empty()) {
        block = evictable_.front();
        uncache(block);  // also unlinks it from evictable_
    } else {
        return std::nullopt;
    }
    Block& b = blocks_[static_cast<size_t>(block)];
    b.owner = owner;
    b.refs = 1;
    ++owner_ref(owner).held;
    return block;
}

std::optional<BlockId> KvBlockPool::allocate(int32_t owner) {
    std::lock_guard lock(mutex_);
    owner_ref(owner);
    return take_block(owner);
}

bool KvBlockPool::allocate_n(int32_t owner, int64_t n, std::vector<BlockId>& out) {
    std::lock_guard lock(mutex_);
    const Owner& o = owner_ref(owner);
    if (n <= 0) return true;
    if (static_cast<int64_t>(free_.size() + evictable_.size()) < n) return false;
    if (o.cap > 0 && o.held + n > o.cap) return false;
    for (int64_t i = 0; i < n; ++i) out.push_back(*take_block(owner));
    return true;
}

void KvBlockPool::retain(BlockId block) {
    std::lock_guard lock(mutex_);
    check_block(block);
    Block& b = blocks_[static_cast<size_t>(block)];
    if (b.refs <= 0) fail(INLAY_ERR_INTERNAL, "retain of unreferenced KV block {}", block);
    ++b.refs;
}

void KvBlockPool::release(BlockId block) {
    std::lock_guard lock(mutex_);
    check_block(block);
    Block& b = blocks_[static_cast<size_t>(block)];
    if (b.refs <= 0) fail(INLAY_ERR_INTERNAL, "release of unreferenced KV block {}", block);
    if (--b.refs > 0) return;
    --owner_ref(b.owner).held;
    if (b.cached) {
        evictable_.push_back(block);
        b.lru = std::prev(evictable_.end());
    } else {
        b.owner = -1;
        free_.push_back(block);
    }
}

void KvBlockPool::release_all(std::vector<BlockId>& table) { release_tail(table, 0); }

void KvBlockPool::release_tail(std::vector<BlockId>& table, size_t keep) {
    while (table.size() > keep) {
        release(table.back());
        table.pop_back();
    }
}

int32_t KvBlockPool::ref_count(BlockId block) const {
    std::lock_guard lock(mutex_);
    check_block(block);
    return blocks_[static_cast<size_t>(block)].refs;
}

bool KvBlockPool::is_cached(BlockId block) const {
    std::lock_guard lock(mutex_);
    check_block(block);
    return blocks_[static_cast<size_t>(block)].cached;
}

bool KvBlockPool::writable(BlockId block) const {
    std::lock_guard lock(mutex_);
    check_block(block);
    const Block& b = blocks_[static_cast<size_t>(block)];
    return b.refs == 1 && !b.cached;
}

bool KvBlockPool::register_full(int32_t owner, BlockId parent, BlockId block, std::span<const int32_t> tokens) {
    std::lock_guard lock(mutex_);
    check_block(block);
    owner_ref(owner);
    if (static_cast<int64_t>(tokens.size()) != block_size())
        fail(INLAY_ERR_INTERNAL, "register_full: {} tokens for a block of {}", tokens.size(), block_size());
    Block& b = blocks_[static_cast<size_t>(block)];
    if (b.refs <= 0 || b.owner != owner || b.cached) return false;
    uint64_t parent_epoch = 0;
    if (parent >= 0) {
        check_block(parent);
        const Block& p = blocks_[static_cast<size_t>(parent)];
        if (!p.cached || p.owner != owner) return false;
        parent_epoch = p.epoch;
    }
    const uint64_t h = key_hash(owner, parent, parent_epoch, tokens);
    const auto range = index_.equal_range(h);
    for (auto it = range.first; it != range.second; ++it) {
        const Block& other = blocks_[static_cast<size_t>(it->second)];
        if (other.owner == owner && other.parent == parent && other.parent_epoch == parent_epoch &&
            std::equal(other.tokens.begin(), other.tokens.end(), tokens.begin(), tokens.end()))
            return false;
    }
    b.cached = true;
    b.key_hash = h;
    b.parent = parent;
    b.parent_epoch = parent_epoch;
    b.tokens.assign(tokens.begin(), tokens.end());
    index_.emplace(h, block);
    return true;
}

std::optional<BlockId> KvBlockPool::lookup(int32_t owner, BlockId parent, std::span<const int32_t> tokens) {
    std::lock_guard lock(mutex_);
    owner_ref(owner);
    if (static_cast<int64_t>(tokens.size()) != block_size()) return std::nullopt;
    uint64_t parent_epoch = 0;
    if (parent >= 0) {
        check_block(parent);
        const Block& p = blocks_[static_cast<size_t>(parent)];
        if (!p.cached || p.owner != owner) return std::nullopt;
        parent_epoch = p.epoch;
    }
    const uint64_t h = key_hash(owner, parent, parent_epoch, tokens);
    const auto range = index_.equal_range(h);
    for (auto it = range.first; it != range.second; ++it) {
        const BlockId id = it->second;
        const Block& b = blocks_[static_cast<size_t>(id)];
        if (b.owner != owner || b.parent != parent || b.parent_epoch != parent_epoch ||
            !std::equal(b.tokens.begin(), b.tokens.end(), tokens.begin(), tokens.end()))
            continue;
        if (b.refs == 0 && !under_cap(owner)) return std::nullopt;
        add_ref(id, owner);
        return id;
    }
    return std::nullopt;
}

void KvBlockPool::signal_pressure(int32_t from_owner) {
    std::vector<std::function<void()>> calls;
    {
        std::lock_guard lock(mutex_);
        for (size_t i = 0; i < owners_.size(); ++i)
            if (owners_[i].live && static_cast<int32_t>(i) != from_owner && owners_[i].on_pressure)
                calls.push_back(owners_[i].on_pressure);
    }
    for (auto& call : calls) call();
}

KvBlockPool::Stats KvBlockPool::stats() const {
    std::lock_guard lock(mutex_);
    Stats s;
    s.total = static_cast<int64_t>(blocks_.size());
    s.free = static_cast<int64_t>(free_.size());
    s.cached = static_cast<int64_t>(evictable_.size());
    for (const Block& b : blocks_) {
        if (b.refs > 0) ++s.used;
        if (b.refs > 1) ++s.shared;
    }
    return s;
}

}  // namespace inlay
