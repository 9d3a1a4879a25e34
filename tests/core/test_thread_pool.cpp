#include <catch2/catch.hpp>

#include <atomic>
#include <numeric>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/thread_pool.h"

using inlay::ThreadPool;

TEST_CASE("run calls every thread once per region", "[thread_pool]") {
    for (int n : {1, 2, 3, 8}) {
        ThreadPool pool(n);
        REQUIRE(pool.size() == n);
        for (int region = 0; region < 200; ++region) {
            std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
            std::atomic<int> wrong_nth{0};
            pool.run([&](int ith, int nth) {
                if (nth != n) wrong_nth.fetch_add(1);
                hits[static_cast<size_t>(ith)].fetch_add(1);
            });
            REQUIRE(wrong_nth.load() == 0);
            for (auto& h : hits) REQUIRE(h.load() == 1);
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
                if (b >= e || e > n || (e != n && e % align != 0)) bad_range.fetch_add(1);
                for (size_t i = b; i < e && i < n; ++i) seen[i].fetch_add(1);
            }, align);
            REQUIRE(bad_range.load() == 0);
            for (auto& s : seen) REQUIRE(s.load() == 1);
        }
    }
}

TEST_CASE("exceptions in tasks reach the caller and the pool stays usable", "[thread_pool]") {
    ThreadPool pool(3);
    REQUIRE_THROWS_AS(pool.run([](int ith, int) { if (ith == 2) throw std::runtime_error("boom"); }),
                      std::runtime_error);
    std::atomic<int> count{0};
    pool.run([&](int, int) { count.fetch_add(1); });
    REQUIRE(count.load() == 3);
}

TEST_CASE("regions from several threads are serialised, not mixed", "[thread_pool]") {
    ThreadPool pool(2);
    std::atomic<long> total{0};
    std::atomic<int> mixed{0};  // Catch2 assertions are not thread-safe: count, check later
    std::vector<std::thread> callers;
    for (int c = 0; c < 4; ++c) {
        callers.emplace_back([&] {
            for (int i = 0; i < 500; ++i) {
                std::atomic<int> in_region{0};
                pool.run([&](int, int) {
                    in_region.fetch_add(1);
                    total.fetch_add(1);
                });
                if (in_region.load() != 2) mixed.fetch_add(1);
            }
        });
    }
    for (auto& t : callers) t.join();
    REQUIRE(mixed.load() == 0);
    REQUIRE(total.load() == 4 * 500 * 2);
}
