#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "core/thread_pool.h"

using inlay::ThreadPool;

// Catch2 assertions are not thread-safe: tasks count what they see; the test checks after.

namespace {
// Runs one pool.run region of n chunks; returns how many chunks did not run exactly once.
long run_miscounts(ThreadPool& pool, std::vector<std::atomic<int>>& hits, size_t n) {
    for (size_t i = 0; i < n; ++i) hits[i].store(0, std::memory_order_relaxed);
    pool.run(n, [&](size_t c) { hits[c].fetch_add(1, std::memory_order_relaxed); });
    long bad = 0;
    for (size_t i = 0; i < n; ++i) bad += hits[i].load() != 1;
    return bad;
}
}  // namespace

TEST_CASE("run calls every chunk exactly once per region", "[thread_pool]") {
    for (int n : {1, 2, 3, 8}) {
        ThreadPool pool(n);
        REQUIRE(pool.size() == n);
        for (size_t chunks : {size_t{1}, size_t{2}, size_t{7}, size_t{64}}) {
            for (int region = 0; region < 100; ++region) {
                std::vector<std::atomic<int>> hits(chunks);
                pool.run(chunks, [&](size_t c) { hits[c].fetch_add(1); });
                for (auto& h : hits) REQUIRE(h.load() == 1);
            }
        }
    }
}

TEST_CASE("parallel_for covers the range exactly once, aligned", "[thread_pool]") {
    ThreadPool pool(4);
    for (size_t n : {size_t{0}, size_t{1}, size_t{5}, size_t{64}, size_t{1000}, size_t{1023}}) {
        for (size_t align : {size_t{1}, size_t{8}, size_t{16}}) {
            std::vector<std::atomic<int>> seen(n);
            std::atomic<int> bad_range{0};
            pool.parallel_for(n, [&](size_t b, size_t e) {
                if (b >= e || e > n || (e != n && e % align != 0) || b % align != 0) bad_range.fetch_add(1);
                for (size_t i = b; i < e && i < n; ++i) seen[i].fetch_add(1);
            }, align);
            REQUIRE(bad_range.load() == 0);
            for (auto& s : seen) REQUIRE(s.load() == 1);
        }
    }
}

TEST_CASE("work spreads over the pool's threads", "[thread_pool]") {
    ThreadPool pool(2);
    std::atomic<int> other_thread{0};
    const auto caller = std::this_thread::get_id();
    for (int i = 0; i < 200 && other_thread.load() == 0; ++i) {
        pool.run(64, [&](size_t) {
            if (std::this_thread::get_id() != caller) other_thread.fetch_add(1);
            volatile double x = 0;
            for (int k = 0; k < 2000; ++k) x = x + k;
        });
    }
    REQUIRE(other_thread.load() > 0);
}

TEST_CASE("exceptions in chunks reach the caller and the pool stays usable", "[thread_pool]") {
    ThreadPool pool(3);
    REQUIRE_THROWS_AS(pool.run(9, [](size_t c) { if (c == 5) throw std::runtime_error("boom"); }), std::runtime_error);
    std::atomic<int> count{0};
    pool.run(9, [&](size_t) { count.fetch_add(1); });
    REQUIRE(count.load() == 9);
}

TEST_CASE("regions from several threads are serialised, not mixed", "[thread_pool]") {
    ThreadPool pool(2);
    std::atomic<long> total{0};
    std::atomic<int> mixed{0};
    std::vector<std::thread> callers;
    for (int c = 0; c < 4; ++c) {
        callers.emplace_back([&] {
            for (int i = 0; i < 500; ++i) {
                std::atomic<int> in_region{0};
                pool.run(4, [&](size_t) {
                    in_region.fetch_add(1);
                    total.fetch_add(1);
                });
                if (in_region.load() != 4) mixed.fetch_add(1);
            }
        });
    }
    for (auto& t : callers) t.join();
    REQUIRE(mixed.load() == 0);
    REQUIRE(total.load() == 4 * 500 * 4);
}

TEST_CASE("idle workers sleep and wake for the next region", "[thread_pool]") {
    ThreadPool pool(3);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // long enough for workers to sleep
    std::atomic<int> count{0};
    pool.run(30, [&](size_t) { count.fetch_add(1); });
    REQUIRE(count.load() == 30);
}

TEST_CASE("a late worker never runs a chunk of the next region", "[thread_pool]") {
    // More workers than cores, so some are descheduled between seeing a region and
    // claiming from it. Regions alternate small and large chunk counts: a worker that
    // compared an old region's exhausted claim counter with the next region's larger
    // count used to claim (and run) a chunk that the next region then ran again, which
    // corrupted in-place operations (RoPE) and so engine outputs (about once in 10^4 regions here).
    ThreadPool pool(32);
    std::vector<std::atomic<int>> hits(48);
    long regions = 0, bad = 0;
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
    while (std::chrono::steady_clock::now() < until) {
        for (const size_t n : {size_t{2}, size_t{3}, size_t{48}}) {
            bad += run_miscounts(pool, hits, n);
            ++regions;
        }
    }
    INFO(regions << " regions");
    REQUIRE(bad == 0);
}

TEST_CASE("waiting threads read their idle streams to the end and no further", "[thread_pool]") {
    ThreadPool pool(2);
    std::vector<char> a(40000), b(50000), c(20000), d(10000);
    const ThreadPool::IdleStream streams[] = {{a.data(), a.size()}, {}, {b.data(), b.size()}, {c.data(), c.size()}};
    pool.set_idle_reads(streams);
    // The caller's chunk returns once the worker has taken the other, which takes 30 ms:
    // the caller waits inside the region, the worker after it.
    const auto caller = std::this_thread::get_id();
    std::atomic<bool> worker_started{false};
    std::atomic<int> caller_chunks{0};
    pool.run(2, [&](size_t) {
        if (std::this_thread::get_id() == caller) {
            caller_chunks.fetch_add(1);
            const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
            while (!worker_started.load() && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
        } else {
            worker_started.store(true);
            std::this_thread::sleep_for(std::chrono::milliseconds(30));
        }
    });
    REQUIRE(worker_started.load());
    REQUIRE(caller_chunks.load() == 1);
    CHECK(pool.idle_bytes_read(0) == a.size());
    auto settles_at = [&](int thread, size_t bytes) {
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
        while (pool.idle_bytes_read(thread) != bytes && std::chrono::steady_clock::now() < give_up)
            std::this_thread::sleep_for(std::chrono::microseconds(100));
        return pool.idle_bytes_read(thread);
    };
    CHECK(settles_at(1, b.size()) == b.size());  // the longer of its two streams

    // New streams restart the walk (the worker, asleep by now, reads after its next region).
    const ThreadPool::IdleStream shorter[] = {{}, {}, {d.data(), d.size()}, {}};
    pool.set_idle_reads(shorter);
    pool.run(2, [](size_t) {});
    CHECK(settles_at(1, d.size()) == d.size());
    pool.set_idle_reads({});
    pool.run(2, [](size_t) {});
    CHECK(settles_at(1, 0) == 0);
}

TEST_CASE("idle streams may change while regions run", "[thread_pool]") {
    // A hint only: streams replaced under the threads (even with ones that point nowhere,
    // or a stream that comes and goes, so a thread may pair one's start with another's
    // length) never change what a region runs.
    ThreadPool pool(3);
    std::vector<char> mem(1 << 20);
    std::atomic<bool> stop{false};
    std::thread changer([&] {
        for (uint32_t i = 0; !stop.load(); ++i) {
            const ThreadPool::IdleStream s[] = {{mem.data() + i % 4096, mem.size() - 4096}, {},
                                                {reinterpret_cast<const void*>(uintptr_t{64}), 1 << 16},
                                                i % 2 ? ThreadPool::IdleStream{mem.data(), 4096} : ThreadPool::IdleStream{},
                                                {mem.data(), i % 3 ? mem.size() : 0}, {mem.data(), 4096}};
            pool.set_idle_reads(s);
        }
    });
    std::vector<std::atomic<int>> hits(16);
    long bad = 0;
    for (int r = 0; r < 2000; ++r) {
        for (auto& h : hits) h.store(0);
        pool.run(hits.size(), [&](size_t c) { hits[c].fetch_add(1); });
        for (auto& h : hits) bad += h.load() != 1;
    }
    stop.store(true);
    changer.join();
    REQUIRE(bad == 0);
}

// run_ranges: what each call of fn saw, checked after the region.
struct RangeLog {
    explicit RangeLog(size_t n) : hits(n) {}
    std::vector<std::atomic<int>> hits;
    std::atomic<int> bad_piece{0};
    void record(size_t b, size_t e, size_t n) {
        if (b >= e || e > n) bad_piece.fetch_add(1);
        for (size_t i = b; i < e && i < n; ++i) hits[i].fetch_add(1);
    }
    [[nodiscard]] long missed_or_repeated() const {
        long bad = 0;
        for (const auto& h : hits) bad += h.load() != 1;
        return bad;
    }
};

namespace {
// For the caller's pieces: the first one waits (up to 10 s) until another thread has
// taken units of the caller's share (`taken` > 0).
void wait_in_first_piece(std::atomic<int>& pieces, const std::atomic<size_t>& taken) {
    if (pieces.fetch_add(1) != 0) return;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (taken.load() == 0 && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
}
}  // namespace

TEST_CASE("run_ranges covers every unit exactly once in non-empty pieces", "[thread_pool]") {
    for (int n_threads : {1, 2, 3, 8}) {
        ThreadPool pool(n_threads);
        for (size_t n : {size_t{1}, size_t{2}, size_t{3}, size_t{17}, size_t{64}, size_t{1000}, size_t{4096}}) {
            for (size_t grain : {size_t{0}, size_t{1}, size_t{5}, size_t{5000}}) {
                for (int region = 0; region < 20; ++region) {
                    RangeLog log(n);
                    pool.run_ranges(n, grain, [&](size_t b, size_t e) { log.record(b, e, n); });
                    INFO(n_threads << " threads, " << n << " units, grain " << grain);
                    REQUIRE(log.bad_piece.load() == 0);
                    REQUIRE(log.missed_or_repeated() == 0);
                }
            }
        }
    }
    ThreadPool pool(2);
    bool called = false;
    pool.run_ranges(0, 1, [&](size_t, size_t) { called = true; });
    REQUIRE_FALSE(called);
}

TEST_CASE("run_ranges: each thread starts on its own share", "[thread_pool]") {
    // Thread t's first piece begins at unit n * t / threads: the idle reads of decode
    // products fetch exactly those rows ahead. The caller's first piece waits for the
    // worker's, so that the caller cannot take the worker's share first.
    ThreadPool pool(2);
    const auto caller = std::this_thread::get_id();
    constexpr size_t n = 640;
    std::atomic<size_t> caller_first{SIZE_MAX}, worker_first{SIZE_MAX};
    pool.run_ranges(n, 1, [&](size_t b, size_t) {
        const bool is_caller = std::this_thread::get_id() == caller;
        auto& first = is_caller ? caller_first : worker_first;
        size_t expected = SIZE_MAX;
        if (first.compare_exchange_strong(expected, b) && is_caller) {
            const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
            while (worker_first.load() == SIZE_MAX && std::chrono::steady_clock::now() < give_up)
                std::this_thread::yield();
        }
    });
    REQUIRE(caller_first.load() == 0);
    REQUIRE(worker_first.load() == n / 2);
}

TEST_CASE("run_ranges: a thread out of work takes the rest of a busy one's range", "[thread_pool]") {
    // The caller's first piece (all but a sixteenth of its share) waits until the worker,
    // done with its own share, has taken units of the caller's share.
    ThreadPool pool(2);
    const auto caller = std::this_thread::get_id();
    constexpr size_t n = 256;
    RangeLog log(n);
    std::atomic<size_t> taken_from_caller{0};
    std::atomic<int> caller_pieces{0};
    pool.run_ranges(n, 1, [&](size_t b, size_t e) {
        log.record(b, e, n);
        if (std::this_thread::get_id() == caller) {
            wait_in_first_piece(caller_pieces, taken_from_caller);
        } else if (b < n / 2) {
            taken_from_caller.fetch_add(e - b);
        }
    });
    REQUIRE(log.missed_or_repeated() == 0);
    REQUIRE(taken_from_caller.load() > 0);
}

TEST_CASE("run_ranges and run alternate without a late thread mixing regions", "[thread_pool]") {
    // As for run: a worker descheduled between seeing one region and claiming from it must
    // never take (or overwrite) units of the next, whichever kind each region is.
    ThreadPool pool(32);
    RangeLog log(300);
    std::vector<std::atomic<int>> chunk_hits(48);
    long regions = 0, bad = 0;
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
    while (std::chrono::steady_clock::now() < until) {
        for (const size_t n : {size_t{3}, size_t{300}, size_t{40}}) {
            for (size_t i = 0; i < n; ++i) log.hits[i].store(0, std::memory_order_relaxed);
            pool.run_ranges(n, 1, [&](size_t b, size_t e) {
                for (size_t i = b; i < e; ++i) log.hits[i].fetch_add(1, std::memory_order_relaxed);
            });
            for (size_t i = 0; i < n; ++i) bad += log.hits[i].load() != 1;
            bad += run_miscounts(pool, chunk_hits, chunk_hits.size());
            regions += 2;
        }
    }
    INFO(regions << " regions");
    REQUIRE(bad == 0);
}

TEST_CASE("run_ranges: exceptions reach the caller and the pool stays usable", "[thread_pool]") {
    ThreadPool pool(3);
    REQUIRE_THROWS_AS(pool.run_ranges(90, 1,
                                      [](size_t b, size_t e) {
                                          if (b <= 45 && 45 < e) throw std::runtime_error("boom");
                                      }),
                      std::runtime_error);
    RangeLog log(90);
    pool.run_ranges(90, 1, [&](size_t b, size_t e) { log.record(b, e, 90); });
    REQUIRE(log.missed_or_repeated() == 0);
}

TEST_CASE("run_ranges beyond the packed indices still covers every unit once", "[thread_pool]") {
    // Past 2^24 - 1 units the ranges do not fit their slots: equal parts claimed as chunks.
    ThreadPool pool(3);
    constexpr size_t n = (size_t{1} << 24) + 5;
    std::atomic<size_t> covered{0};
    std::atomic<int> bad{0};
    std::vector<std::pair<size_t, size_t>> pieces;
    std::mutex pieces_mutex;
    pool.run_ranges(n, 1, [&](size_t b, size_t e) {
        if (b >= e || e > n) bad.fetch_add(1);
        covered.fetch_add(e - b);
        std::lock_guard lock(pieces_mutex);
        pieces.emplace_back(b, e);
    });
    REQUIRE(bad.load() == 0);
    REQUIRE(covered.load() == n);
    std::sort(pieces.begin(), pieces.end());
    for (size_t i = 1; i < pieces.size(); ++i) REQUIRE(pieces[i].first == pieces[i - 1].second);
    REQUIRE(pieces.front().first == 0);
    REQUIRE(pieces.back().second == n);
}

TEST_CASE("run: each thread claims its own share one chunk at a time", "[thread_pool]") {
    // The caller's first chunk (0) waits until the worker has started on its own share
    // (from n / 2) and then, done with it, taken chunks of the caller's share: the shares
    // are claimed chunk by chunk from each thread's own slot, not from one counter.
    ThreadPool pool(2);
    const auto caller = std::this_thread::get_id();
    constexpr size_t n = 64;
    std::vector<std::atomic<int>> hits(n);
    std::atomic<size_t> caller_first{SIZE_MAX}, worker_first{SIZE_MAX}, taken_from_caller{0};
    std::atomic<int> caller_pieces{0};
    pool.run(n, [&](size_t c) {
        hits[c].fetch_add(1);
        size_t expected = SIZE_MAX;
        if (std::this_thread::get_id() == caller) {
            caller_first.compare_exchange_strong(expected, c);
            wait_in_first_piece(caller_pieces, taken_from_caller);
            return;
        }
        worker_first.compare_exchange_strong(expected, c);
        if (c < n / 2) taken_from_caller.fetch_add(1);
    });
    long bad = 0;
    for (const auto& h : hits) bad += h.load() != 1;
    REQUIRE(bad == 0);
    REQUIRE(caller_first.load() == 0);
    REQUIRE(worker_first.load() == n / 2);
    // The caller held chunk 0 while the worker did its 32 chunks and took the back half of
    // the caller's remaining 31 (and then the rest, a chunk at a time).
    REQUIRE(taken_from_caller.load() >= 16);
}
