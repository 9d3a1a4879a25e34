// Several models in one process sharing one KV budget: same-geometry models share a
// pool (and never each other's prefix cache), another geometry gets its own pool,
// per-engine caps (lowered at run time) and cross-engine release of idle KV.
#include <catch2/catch.hpp>

#include <thread>

#include "core/error.h"
#include "runtime_test_util.h"

using namespace inlay;
using namespace inlay::test;

TEST_CASE("models of one geometry share a pool; another geometry gets its own", "[shared_pool]") {
    TinyLlamaOptions o1, o2, o3;
    o2.seed = 77;        // same shapes, other weights
    o3.n_kv_heads = 4;   // another block geometry
    const auto m1 = tiny_model(o1, "shared-1"), m2 = tiny_model(o2, "shared-2"), m3 = tiny_model(o3, "shared-3");
    KvPoolOptions po;
    po.budget_blocks = 40;
    po.block_size = 8;
    KvPoolSet set(po);
    const auto p1 = set.pool_for(m1->executor());
    const auto p2 = set.pool_for(m2->executor());
    const auto p3 = set.pool_for(m3->executor());
    REQUIRE(p1 == p2);
    REQUIRE(p1 != p3);
    REQUIRE(set.n_pools() == 2);
    REQUIRE(p3->n_blocks() == 40);

    auto e1 = std::make_shared<Engine>(m1, p1, EngineOptions{});
    auto e2 = std::make_shared<Engine>(m2, p2, EngineOptions{});
    REQUIRE_THROWS_AS(Engine(m3, p1, EngineOptions{}), Error);  // wrong geometry for that pool

    // Both models generate at once from the same prompt: each gets its own result (the
    // prefix cache is per model) and the shared pool serves both.
    const auto prompt = prompt_of(2, 30, static_cast<int32_t>(o1.n_vocab));
    std::vector<int32_t> out1, out2;
    {
        Session s1(e1, 0), s2(e2, 0);
        std::thread t([&] { out1 = s1.generate(prompt, greedy(20)).tokens; });
        out2 = s2.generate(prompt, greedy(20)).tokens;
        t.join();
        REQUIRE(e1->metrics().blocks_held == 7);  // ceil(49 / 8): the last sampled token is not cached
        REQUIRE(e2->metrics().blocks_held == 7);
        REQUIRE(e1->metrics().blocks.used == 14);
        // A second session of model 2 with the same prompt reuses model 2's blocks only.
        Session s3(e2, 0);
        const auto r = s3.generate(prompt, greedy(20));
        REQUIRE(r.reused_tokens == 24);
        REQUIRE(r.tokens == out2);
    }
    REQUIRE(out1 == reference_greedy(*m1, prompt, 20));
    REQUIRE(out2 == reference_greedy(*m2, prompt, 20));
    REQUIRE(out1 != out2);
    REQUIRE(p1->stats().used == 0);
}

TEST_CASE("a per-engine cap bounds one model's share and can be lowered at run time", "[shared_pool]") {
    TinyLlamaOptions o;
    const auto m = tiny_model(o, "cap");
    KvPoolOptions po;
    po.budget_blocks = 64;
    po.block_size = 8;
    const auto pool = make_kv_pool(m->executor(), po);
    auto engine = std::make_shared<Engine>(m, pool, EngineOptions{});
    const auto n_vocab = static_cast<int32_t>(o.n_vocab);

    engine->set_block_cap(5);  // 40 tokens
    {
        Session s(engine, 0);
        const auto r = s.generate(prompt_of(1, 10, n_vocab), greedy(60));
        REQUIRE(r.status == INLAY_ERR_KV_FULL);
        REQUIRE(r.tokens.size() == 40 - 10 + 1);
        REQUIRE(engine->metrics().block_cap == 5);
        REQUIRE(pool->stats().free + pool->stats().cached > 5);  // the pool itself had room
    }
    engine->set_block_cap(0);
    {
        // Idle sessions hold KV; lowering the cap makes the engine release it.
        std::vector<std::unique_ptr<Session>> idle;
        for (int i = 0; i < 4; ++i) {
            idle.push_back(std::make_unique<Session>(engine, 0));
            (void)idle.back()->generate(prompt_of(i, 20, n_vocab), greedy(4));
        }
        REQUIRE(engine->metrics().blocks_held == 4 * 3);
        engine->set_block_cap(4);
        // Applied by the scheduler at its next wake-up.
        for (int i = 0; i < 200 && engine->metrics().blocks_held > 4; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        REQUIRE(engine->metrics().blocks_held <= 4);
        // They continue correctly (recomputing what was released).
        const auto r = idle[0]->generate({}, greedy(3));
        const auto want = reference_greedy(*m, prompt_of(0, 20, n_vocab), 7);
        REQUIRE(r.tokens == std::vector<int32_t>(want.begin() + 4, want.end()));
    }
}

TEST_CASE("an engine short of blocks makes the other engines release idle KV", "[shared_pool]") {
    TinyLlamaOptions o1, o2;
    o2.seed = 5;
    const auto m1 = tiny_model(o1, "pressure-1"), m2 = tiny_model(o2, "pressure-2");
    KvPoolOptions po;
    po.budget_blocks = 10;
    po.block_size = 8;
    KvPoolSet set(po);
    auto e1 = std::make_shared<Engine>(m1, set.pool_for(m1->executor()), EngineOptions{});
    auto e2 = std::make_shared<Engine>(m2, set.pool_for(m2->executor()), EngineOptions{});
    const auto n_vocab = static_cast<int32_t>(o1.n_vocab);
    Session idle(e2, 0);
    (void)idle.generate(prompt_of(1, 50, n_vocab), greedy(5));  // 54 cached: 7 blocks of 10
    REQUIRE(e2->metrics().blocks_held == 7);
    Session busy(e1, 0);
    const auto prompt = prompt_of(2, 40, n_vocab);
    const auto r = busy.generate(prompt, greedy(20));  // needs 8 blocks
    REQUIRE(r.status == INLAY_OK);
    REQUIRE(r.tokens == reference_greedy(*m1, prompt, 20));
    REQUIRE(e2->metrics().blocks_held == 0);
    // The idle session recomputes on its next turn and is still right.
    const auto more = idle.generate({}, greedy(2));
    const auto want = reference_greedy(*m2, prompt_of(1, 50, n_vocab), 7);
    REQUIRE(more.tokens == std::vector<int32_t>(want.begin() + 5, want.end()));
}
