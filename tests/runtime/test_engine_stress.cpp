// Concurrency stress (run under ThreadSanitizer in CI) and the soak: many threads and
// sessions, random prompts, lengths, forks, resets and cancels from other threads, a KV
// budget small enough to force preemption, eviction and KV_FULL. Every request that ends
// normally must give exactly the lone greedy output; every block must come back.
//
// Sizes: INLAY_STRESS_SCALE (default 1) multiplies the stress rounds; INLAY_SOAK_REQUESTS
// (default 120) sets the soak's request count (the closing note's run used 2000).
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "core/error.h"
#include "runtime_test_util.h"

using namespace inlay;
using namespace inlay::test;

namespace {

int env_int(const char* name, int fallback) {
    const char* v = std::getenv(name);
    return v && *v ? std::atoi(v) : fallback;
}

int64_t rss_bytes() {
    std::ifstream statm("/proc/self/statm");
    int64_t size = 0, resident = 0;
    statm >> size >> resident;
    return resident * 4096;
}

// Lone greedy outputs, computed once per (prompt, length) with Executor::eval.
class References {
public:
    explicit References(const Model& model) : model_(model) {}
    std::vector<int32_t> get(const std::vector<int32_t>& prompt, int n) {
        std::lock_guard lock(mutex_);
        auto& entry = cache_[prompt];
        if (static_cast<int>(entry.size()) < n) entry = reference_greedy(model_, prompt, std::max(n, 48));
        return {entry.begin(), entry.begin() + n};
    }

private:
    const Model& model_;
    std::mutex mutex_;
    std::map<std::vector<int32_t>, std::vector<int32_t>> cache_;
};

struct Tally {
    std::atomic<int> ok{0}, cancelled{0}, kv_full{0}, mismatches{0}, unexpected{0};
    // Calls picked (by the workers' seeded choices) to be cancelled by another thread at
    // a token the call itself reaches, and how many of them ended cancelled.
    std::atomic<int> handed_over{0}, handed_over_cancelled{0};
    std::mutex mutex;
    std::vector<std::string> problems;
    void problem(const std::string& s) {
        std::lock_guard lock(mutex);
        if (problems.size() < 20) problems.push_back(s);
    }
};

// Sessions that a canceller thread may cancel at any moment: shared_ptrs, so a session
// stays alive while the canceller holds it even if its worker replaces it.
class Registry {
public:
    void put(size_t slot, std::shared_ptr<Session> s) {
        std::lock_guard lock(mutex_);
        if (slots_.size() <= slot) slots_.resize(slot + 1);
        slots_[slot] = std::move(s);
    }
    // Marks the session in `slot` as in a generate call (or not).
    void set_calling(size_t slot, bool calling) {
        std::lock_guard lock(mutex_);
        if (calling) calling_.push_back(slot);
        else calling_.erase(std::remove(calling_.begin(), calling_.end(), slot), calling_.end());
    }
    // A random session that is in a generate call now (null if none): cancels land on
    // calls, not on workers busy elsewhere (computing their reference output).
    std::shared_ptr<Session> pick_calling(std::mt19937& rng) {
        std::lock_guard lock(mutex_);
        if (calling_.empty()) return nullptr;
        return slots_[calling_[rng() % calling_.size()]];
    }
    void clear() {
        std::lock_guard lock(mutex_);
        slots_.clear();
        calling_.clear();
    }

private:
    std::mutex mutex_;
    std::vector<std::shared_ptr<Session>> slots_;
    std::vector<size_t> calling_;
};

// One worker: `n_requests` random requests on three sessions of its own.
void worker(const std::shared_ptr<Engine>& engine, References& refs, Tally& tally, unsigned seed, int n_requests,
            Registry& registry, size_t first_slot) {
    std::mt19937 rng(seed);
    const auto n_vocab = static_cast<int32_t>(engine->model().spec().n_vocab);
    std::vector<std::shared_ptr<Session>> sessions;
    for (size_t i = 0; i < 3; ++i) {
        sessions.push_back(std::make_shared<Session>(engine, 0));
        registry.put(first_slot + i, sessions.back());
    }
    for (int r = 0; r < n_requests; ++r) {
        const size_t k = rng() % sessions.size();
        auto& s = sessions[k];
        const unsigned op = rng() % 10;
        try {
            if (op == 0) {
                s->reset();
                continue;
            }
            if (op == 1 && !s->history().empty()) {
                s = std::shared_ptr<Session>(s->fork());  // the old one goes: its blocks must return
                registry.put(first_slot + k, s);
                continue;
            }
            // Fresh conversations (so the lone reference is a prompt) from a few prompt
            // families, so that prefixes are shared across threads.
            s->reset();
            const auto prompt = prompt_of(static_cast<int>(rng() % 6), 4 + static_cast<int>(rng() % 40), n_vocab);
            const int n = 1 + static_cast<int>(rng() % 40);
            // One call in ten is cancelled by another thread at a token it picks: its
            // callback starts that thread and waits for the cancel to be made. The random
            // canceller may still get to it first; either way it must end cancelled.
            const bool hand_over = op == 2;
            const int at_token = 1 + static_cast<int>(rng() % static_cast<unsigned>(n));
            auto opts = greedy(n);
            if (hand_over) {
                ++tally.handed_over;
                opts.on_token = [&, seen = 0](int32_t, std::string_view) mutable {
                    if (++seen == at_token) {
                        std::thread canceller([&] { s->cancel(); });
                        canceller.join();
                    }
                    return true;
                };
            }
            registry.set_calling(first_slot + k, true);
            GenerateResult result;
            try {
                result = s->generate(prompt, opts);
            } catch (...) {
                registry.set_calling(first_slot + k, false);
                throw;
            }
            registry.set_calling(first_slot + k, false);
            if (hand_over && result.stop_reason == StopReason::cancelled) ++tally.handed_over_cancelled;
            if (hand_over && result.tokens.size() > static_cast<size_t>(at_token)) {
                ++tally.unexpected;
                tally.problem("a call cancelled at token " + std::to_string(at_token) + " returned " +
                              std::to_string(result.tokens.size()));
            }
            if (result.status == INLAY_ERR_KV_FULL) {
                ++tally.kv_full;
            } else if (result.stop_reason == StopReason::cancelled) {
                ++tally.cancelled;
            } else if (result.stop_reason != StopReason::max_tokens || static_cast<int>(result.tokens.size()) != n) {
                ++tally.unexpected;
                tally.problem("stop reason " + std::string(stop_reason_name(result.stop_reason)));
                continue;
            } else {
                ++tally.ok;
            }
            // Whatever came out (complete, cancelled or cut by KV_FULL) is a prefix of the lone output.
            const auto want = refs.get(prompt, n);
            if (result.tokens.size() > want.size() ||
                !std::equal(result.tokens.begin(), result.tokens.end(), want.begin())) {
                ++tally.mismatches;
                std::string detail = "output differs from the lone greedy output: prompt of " +
                                     std::to_string(prompt.size()) + ", n " + std::to_string(n) + ", stop " +
                                     stop_reason_name(result.stop_reason) + ", reused " +
                                     std::to_string(result.reused_tokens) + "\n got ";
                for (const int32_t t : result.tokens) detail += std::to_string(t) + " ";
                detail += "\nwant ";
                for (const int32_t t : want) detail += std::to_string(t) + " ";
                tally.problem(detail);
            }
        } catch (const Error& e) {
            ++tally.unexpected;
            tally.problem(e.what());
        }
    }
}

// Runs `threads` workers and a canceller; returns when all are done and the sessions freed.
// The canceller is paced by finished calls, not by the clock: after every
// `calls_per_cancel` finished calls it waits a random time within `jitter_us` and cancels
// a random call in progress. A slow build (ThreadSanitizer) thus
// cancels the same share of calls as a fast one, and sequences still grow enough to preempt.
void run_workers(const std::shared_ptr<Engine>& engine, References& refs, Tally& tally, int threads, int requests,
                 unsigned seed, int calls_per_cancel, int jitter_us = 3000) {
    Registry registry;
    std::atomic<bool> done{false};
    std::thread canceller([&] {
        std::mt19937 rng(seed);
        auto finished = [&] { return tally.ok.load() + tally.cancelled.load() + tally.kv_full.load() + tally.unexpected.load(); };
        int last = finished();
        while (!done.load()) {
            if (finished() < last + calls_per_cancel) {
                std::this_thread::sleep_for(std::chrono::microseconds(200));
                continue;
            }
            last = finished();
            std::this_thread::sleep_for(std::chrono::microseconds(rng() % static_cast<unsigned>(jitter_us)));
            if (auto s = registry.pick_calling(rng)) s->cancel();
        }
    });
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
            worker(engine, refs, tally, seed + static_cast<unsigned>(t), requests, registry, static_cast<size_t>(t) * 3);
        });
    for (auto& th : pool) th.join();
    done.store(true);
    canceller.join();
    registry.clear();
}

void check_pool_empty(const Engine& engine) {
    const auto m = engine.metrics();
    INFO("blocks: total " << m.blocks.total << ", free " << m.blocks.free << ", cached " << m.blocks.cached
                          << ", used " << m.blocks.used);
    REQUIRE(m.blocks_held == 0);
    REQUIRE(m.blocks.used == 0);
    REQUIRE(m.blocks.free + m.blocks.cached == m.blocks.total);
    REQUIRE(m.running == 0);
    REQUIRE(m.waiting == 0);
}

}  // namespace

TEST_CASE("16 threads, random cancels and a small KV budget", "[stress]") {
    TinyLlamaOptions o;
    o.context = 512;
    const auto model = tiny_model(o, "stress", 2);
    References refs(*model);
    // 24 blocks of 8 tokens (192 tokens) for 16 threads asking up to ~85 each.
    auto engine = small_engine(model, 24, 64, 8);
    // Preemption by the engine's rules, not by luck: a hog call with a 120-token prompt
    // sits in its first callback (paused by its lookahead, 16 blocks held) until the
    // engine has preempted something or every worker is done. Meanwhile 8 blocks are
    // left: the first call that grows past them while the hog runs must preempt (itself,
    // or the hog if the hog is younger), and the workers' seeded calls include many
    // longer than 64 tokens.
    std::atomic<bool> workers_done{false};
    GenerateResult hog_result;
    Session hog(engine, 0);
    const auto hog_prompt = prompt_of(99, 120, static_cast<int32_t>(o.n_vocab));
    std::thread hog_thread([&] {
        auto opts = greedy(4);
        opts.on_token = [&](int32_t, std::string_view) {
            while (engine->metrics().preemptions == 0 && !workers_done.load())
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            return true;
        };
        hog_result = hog.generate(hog_prompt, opts);
    });
    Tally tally;
    run_workers(engine, refs, tally, 16, 12 * env_int("INLAY_STRESS_SCALE", 1), 1000, 3);
    workers_done.store(true);
    hog_thread.join();
    INFO("ok " << tally.ok << ", cancelled " << tally.cancelled << " (" << tally.handed_over_cancelled << " of "
               << tally.handed_over << " handed over), kv_full " << tally.kv_full
               << ", first problem: " << (tally.problems.empty() ? std::string("none") : tally.problems.front()));
    REQUIRE(tally.unexpected == 0);
    REQUIRE(tally.mismatches == 0);
    REQUIRE(tally.ok > 0);
    // Every call handed over to a canceller ended cancelled; there were some (the
    // workers' seeds decide how many, not the threads' timing).
    REQUIRE(tally.handed_over > 0);
    REQUIRE(tally.handed_over_cancelled == tally.handed_over);
    REQUIRE(tally.cancelled >= tally.handed_over);
    REQUIRE(engine->metrics().preemptions > 0);
    REQUIRE(hog_result.status == INLAY_OK);
    REQUIRE(hog_result.tokens == refs.get(hog_prompt, 4));
    hog.reset();  // an idle session keeps its KV until pressure takes it
    check_pool_empty(*engine);
}

TEST_CASE("soak: many requests with random lengths and cancels", "[soak]") {
    TinyLlamaOptions o;
    o.context = 512;
    const auto model = tiny_model(o, "soak", 2);
    References refs(*model);
    // 24 blocks of 8 tokens for 8 threads asking up to ~85 tokens each: preemption is common.
    auto engine = small_engine(model, 24, 64, 8);
    const int total = env_int("INLAY_SOAK_REQUESTS", 120);
    const int threads = 8;
    // A worker's operations are ~80% generate calls (the rest fork or reset): enough
    // operations for `total` generate calls after the warm-up.
    const int per_thread = std::max(1, (total * 5 / 4 + threads - 1) / threads);
    Tally tally;
    // Warm-up tenth, then the rest; resident memory must not grow with the request count.
    run_workers(engine, refs, tally, threads, std::max(1, per_thread / 10), 7, 4);
    const int64_t rss_warm = rss_bytes();
    run_workers(engine, refs, tally, threads, per_thread, 77, 4);
    const int64_t rss_end = rss_bytes();
    const auto m = engine->metrics();
    const int generate_calls = tally.ok + tally.cancelled + tally.kv_full + tally.unexpected;
    WARN("soak: " << generate_calls << " generate calls (" << (per_thread + std::max(1, per_thread / 10)) * threads
                  << " operations): ok " << tally.ok << ", cancelled " << tally.cancelled << ", kv_full "
                  << tally.kv_full << "; blocks free "
                  << m.blocks.free + m.blocks.cached << " of " << m.blocks.total << "; preemptions " << m.preemptions
                  << "; RSS " << rss_warm / 1024 << " KiB after warm-up, " << rss_end / 1024 << " KiB at the end");
    REQUIRE(tally.unexpected == 0);
    REQUIRE(tally.mismatches == 0);
    REQUIRE(generate_calls >= total);
    check_pool_empty(*engine);
    REQUIRE(rss_end - rss_warm < int64_t{32} << 20);
}
