// KvBlockPool bookkeeping: reference counts, free/evictable accounting, the prefix
// cache's exact keys (parent identity and epochs), LRU eviction order, owners and caps.
// The expected states are worked out by hand from the pool's documented rules.
#include <catch2/catch.hpp>

#include <numeric>
#include <random>
#include <set>

#include "core/error.h"
#include "runtime/kv_block_pool.h"

using namespace inlay;

namespace {

class FakeStore final : public KvStore {
public:
    explicit FakeStore(int64_t n) : n_(n) { geometry_.block_size = 4; }
    [[nodiscard]] const KvGeometry& geometry() const override { return geometry_; }
    [[nodiscard]] int64_t n_blocks() const override { return n_; }
    [[nodiscard]] size_t block_bytes() const override { return 64; }
    [[nodiscard]] const std::string& device() const override { return device_; }

private:
    int64_t n_;
    KvGeometry geometry_;
    std::string device_ = "fake";
};

std::shared_ptr<KvBlockPool> make_pool(int64_t n) { return std::make_shared<KvBlockPool>(std::make_shared<FakeStore>(n)); }

const std::vector<int32_t> kA{1, 2, 3, 4}, kB{5, 6, 7, 8}, kC{9, 10, 11, 12};

}  // namespace

TEST_CASE("blocks are handed out once and come back", "[kv_pool]") {
    auto pool = make_pool(4);
    const int32_t o = pool->add_owner({});
    std::set<BlockId> got;
    for (int i = 0; i < 4; ++i) {
        const auto b = pool->allocate(o);
        REQUIRE(b);
        REQUIRE(got.insert(*b).second);
        REQUIRE(pool->ref_count(*b) == 1);
        REQUIRE(pool->writable(*b));
    }
    REQUIRE_FALSE(pool->allocate(o));
    REQUIRE(pool->held(o) == 4);
    REQUIRE(pool->stats().free == 0);
    REQUIRE(pool->stats().used == 4);
    for (const BlockId b : got) pool->release(b);
    REQUIRE(pool->held(o) == 0);
    REQUIRE(pool->stats().free == 4);
    REQUIRE_THROWS_AS(pool->release(*got.begin()), Error);  // no reference left
}

TEST_CASE("shared blocks count once and are not writable", "[kv_pool]") {
    auto pool = make_pool(3);
    const int32_t o = pool->add_owner({});
    const BlockId b = *pool->allocate(o);
    pool->retain(b);
    REQUIRE(pool->ref_count(b) == 2);
    REQUIRE_FALSE(pool->writable(b));
    REQUIRE(pool->held(o) == 1);
    REQUIRE(pool->stats().shared == 1);
    pool->release(b);
    REQUIRE(pool->writable(b));
    REQUIRE(pool->stats().shared == 0);
    pool->release(b);
    REQUIRE(pool->stats().free == 3);
}

TEST_CASE("allocate_n is all or nothing and respects the cap", "[kv_pool]") {
    auto pool = make_pool(5);
    const int32_t o = pool->add_owner({});
    std::vector<BlockId> out;
    REQUIRE_FALSE(pool->allocate_n(o, 6, out));
    REQUIRE(out.empty());
    pool->set_cap(o, 3);
    REQUIRE(pool->available(o) == 3);
    REQUIRE_FALSE(pool->allocate_n(o, 4, out));
    REQUIRE(pool->allocate_n(o, 3, out));
    REQUIRE(out.size() == 3);
    REQUIRE_FALSE(pool->allocate(o));  // capped although 2 are free
    REQUIRE(pool->available(o) == 0);
    pool->set_cap(o, 0);
    REQUIRE(pool->available(o) == 2);
    pool->release_all(out);
    REQUIRE(out.empty());
    REQUIRE(pool->held(o) == 0);
}

TEST_CASE("the prefix cache keys blocks by owner, parent and tokens", "[kv_pool]") {
    auto pool = make_pool(8);
    const int32_t o = pool->add_owner({});
    const int32_t other = pool->add_owner({});
    const BlockId b0 = *pool->allocate(o), b1 = *pool->allocate(o);
    REQUIRE(pool->register_full(o, -1, b0, kA));
    REQUIRE_FALSE(pool->register_full(o, -1, b0, kA));  // already cached
    REQUIRE(pool->register_full(o, b0, b1, kB));
    REQUIRE_FALSE(pool->writable(b0));  // cached blocks are copied before a write

    // Exact matches only.
    REQUIRE_FALSE(pool->lookup(o, -1, kB));
    REQUIRE_FALSE(pool->lookup(other, -1, kA));  // another model's cache
    REQUIRE_FALSE(pool->lookup(o, -1, std::vector<int32_t>{1, 2, 3}));
    const auto hit0 = pool->lookup(o, -1, kA);
    REQUIRE(hit0 == b0);
    REQUIRE(pool->ref_count(b0) == 2);
    const auto hit1 = pool->lookup(o, b0, kB);
    REQUIRE(hit1 == b1);
    REQUIRE_FALSE(pool->lookup(o, b1, kB));  // wrong parent

    // A duplicate key is refused: a second block with the same content stays private.
    const BlockId dup = *pool->allocate(o);
    REQUIRE_FALSE(pool->register_full(o, -1, dup, kA));
    REQUIRE_FALSE(pool->is_cached(dup));
    // A child of an uncached parent cannot be keyed.
    const BlockId child = *pool->allocate(o);
    REQUIRE_FALSE(pool->register_full(o, dup, child, kB));
    pool->release(dup);
    pool->release(child);

    // Unreferenced cached blocks are evictable, not free, and still found.
    for (int i = 0; i < 2; ++i) {
        pool->release(b1);
        pool->release(b0);
    }
    const auto s = pool->stats();
    REQUIRE(s.cached == 2);
    REQUIRE(s.free == 6);
    REQUIRE(pool->held(o) == 0);
    REQUIRE(pool->lookup(o, -1, kA) == b0);
    REQUIRE(pool->held(o) == 1);
    pool->release(b0);
}

TEST_CASE("eviction takes the least recently released block and breaks stale chains", "[kv_pool]") {
    auto pool = make_pool(3);
    const int32_t o = pool->add_owner({});
    std::vector<BlockId> table{*pool->allocate(o), *pool->allocate(o), *pool->allocate(o)};
    REQUIRE(pool->register_full(o, -1, table[0], kA));
    REQUIRE(pool->register_full(o, table[0], table[1], kB));
    REQUIRE(pool->register_full(o, table[1], table[2], kC));
    const std::vector<BlockId> ids = table;
    pool->release_all(table);  // last first: the tail becomes the least recently released
    REQUIRE(pool->stats().cached == 3);

    // Nothing free: allocation evicts the chain's tail first.
    const BlockId fresh = *pool->allocate(o);
    REQUIRE(fresh == ids[2]);
    REQUIRE_FALSE(pool->is_cached(fresh));
    REQUIRE(pool->lookup(o, ids[1], kC) == std::nullopt);
    // The head still hits.
    REQUIRE(pool->lookup(o, -1, kA) == ids[0]);
    pool->release(ids[0]);

    // Evict the middle block and reuse it for other content: the old child key (parent
    // ids[1]) must not match the new content even with the same parent id.
    const BlockId again = *pool->allocate(o);  // evicts ids[1] (released before ids[0])
    REQUIRE(again == ids[1]);
    REQUIRE(pool->register_full(o, ids[0], again, kC));
    REQUIRE(pool->lookup(o, ids[0], kB) == std::nullopt);
    REQUIRE(pool->lookup(o, ids[0], kC) == again);
    pool->release(again);
    pool->release(again);
    pool->release(fresh);
}

TEST_CASE("a reused parent id does not revive its old children (epochs)", "[kv_pool]") {
    auto pool = make_pool(3);
    const int32_t o = pool->add_owner({});
    const BlockId a = *pool->allocate(o), b = *pool->allocate(o), c = *pool->allocate(o);
    REQUIRE(pool->register_full(o, -1, a, kA));
    REQUIRE(pool->register_full(o, a, b, kB));
    REQUIRE(pool->register_full(o, b, c, kC));
    REQUIRE(pool->lookup(o, b, kC) == c);
    pool->release(c);
    pool->release(b);  // only b is evictable now (a and c are referenced)
    const BlockId reused = *pool->allocate(o);
    REQUIRE(reused == b);
    REQUIRE(pool->register_full(o, a, reused, kC));  // new content under the same parent
    REQUIRE(pool->lookup(o, reused, kC) == std::nullopt);  // c was keyed under b's old epoch
    REQUIRE(pool->lookup(o, a, kB) == std::nullopt);
    pool->release(reused);
    pool->release(a);
    pool->release(c);
}

TEST_CASE("owners: pressure callbacks, removal, cross-owner checks", "[kv_pool]") {
    auto pool = make_pool(4);
    int calls = 0;
    const int32_t a = pool->add_owner({});
    const int32_t b = pool->add_owner([&] { ++calls; });
    const BlockId x = *pool->allocate(a);
    REQUIRE(pool->held_by_others(b) == 1);
    REQUIRE(pool->held_by_others(a) == 0);
    pool->signal_pressure(a);
    REQUIRE(calls == 1);
    pool->signal_pressure(b);  // not called back on itself
    REQUIRE(calls == 1);
    REQUIRE_THROWS_AS(pool->remove_owner(a), Error);  // still holds x
    REQUIRE(pool->register_full(a, -1, x, kA));
    pool->release(x);
    pool->remove_owner(a);  // drops its cache entries
    REQUIRE(pool->stats().free == 4);
    REQUIRE_THROWS_AS(pool->allocate(a), Error);
    // Removed owner ids are reused.
    REQUIRE(pool->add_owner({}) == a);
}

TEST_CASE("random operations keep the counts consistent", "[kv_pool]") {
    auto pool = make_pool(16);
    const int32_t o = pool->add_owner({});
    std::mt19937 rng(7);
    std::vector<std::vector<BlockId>> tables(5);
    for (int step = 0; step < 5000; ++step) {
        auto& t = tables[rng() % tables.size()];
        const unsigned op = rng() % 10;
        if (op < 5) {
            if (auto b = pool->allocate(o)) {
                std::vector<int32_t> tokens{static_cast<int32_t>(rng() % 3), static_cast<int32_t>(t.size()), 0, 0};
                pool->register_full(o, t.empty() ? -1 : t.back(), *b, tokens);
                t.push_back(*b);
            }
        } else if (op < 7 && !t.empty()) {
            pool->release(t.back());
            t.pop_back();
        } else if (op < 8) {
            pool->release_all(t);
        } else if (!t.empty()) {
            // prefix lookup from the root with what this table's first block may hold
            std::vector<int32_t> tokens{static_cast<int32_t>(rng() % 3), 0, 0, 0};
            if (auto hit = pool->lookup(o, -1, tokens)) pool->release(*hit);
        }
        const auto s = pool->stats();
        int64_t refs = 0;
        std::set<BlockId> distinct;
        for (const auto& tt : tables)
            for (const BlockId b : tt) distinct.insert(b);
        for (const BlockId b : distinct) refs += pool->ref_count(b);
        size_t entries = 0;
        for (const auto& tt : tables) entries += tt.size();
        REQUIRE(refs == static_cast<int64_t>(entries));
        REQUIRE(s.used == static_cast<int64_t>(distinct.size()));
        REQUIRE(pool->held(o) == s.used);
        REQUIRE(s.free + s.cached + s.used == s.total);
    }
    for (auto& t : tables) pool->release_all(t);
    REQUIRE(pool->stats().used == 0);
}
