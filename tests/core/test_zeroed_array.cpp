// ZeroedArray: zeroed, movable, and resident only where written (the point of it: the
// engine's logit rows and a workspace's activations cost what a step uses).
#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/zeroed_array.h"

using inlay::ZeroedArray;

namespace {

// Pages of [p, p + bytes) resident now (mincore).
size_t resident_pages(const void* p, size_t bytes) {
    const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const auto begin = reinterpret_cast<uintptr_t>(p) / page * page;
    const auto end = (reinterpret_cast<uintptr_t>(p) + bytes + page - 1) / page * page;
    std::vector<unsigned char> vec((end - begin) / page);
    REQUIRE(mincore(reinterpret_cast<void*>(begin), end - begin, vec.data()) == 0);
    size_t n = 0;
    for (unsigned char v : vec) n += v & 1u;
    return n;
}

}  // namespace

TEST_CASE("ZeroedArray: zero-filled, element access, equality and moves", "[zeroed_array]") {
    for (size_t n : {size_t{0}, size_t{1}, size_t{1000}, size_t{1} << 20}) {
        ZeroedArray<float> a(n);
        REQUIRE(a.size() == n);
        CHECK(a.empty() == (n == 0));
        bool all_zero = true;
        for (float v : a) all_zero = all_zero && v == 0.0f;
        CHECK(all_zero);
        if (n > 0) {
            a[n - 1] = 3.5f;
            CHECK(a.data()[n - 1] == 3.5f);
        }
        ZeroedArray<float> b(n);
        if (n > 0) b[n - 1] = 3.5f;
        CHECK(a == b);
        ZeroedArray<float> moved(std::move(a));
        CHECK(moved.size() == n);
        CHECK(a.size() == 0);  // NOLINT(bugprone-use-after-move): the moved-from state is specified
        CHECK(moved == b);
        a = std::move(moved);
        CHECK(a == b);
    }
    CHECK_FALSE(ZeroedArray<int>(3) == ZeroedArray<int>(4));
}

TEST_CASE("ZeroedArray: a large array is resident only where written", "[zeroed_array]") {
    constexpr size_t n = size_t{64} << 20;  // 256 MiB of floats
    ZeroedArray<float> a(n);
    const size_t bytes = n * sizeof(float);
    const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    // Fresh: nothing (or next to nothing: an allocator header) is resident.
    CHECK(resident_pages(a.data(), bytes) <= 2);
    // One row of 1 MiB written: about that much is resident, not the whole array.
    for (size_t i = 0; i < (size_t{1} << 18); ++i) a[i] = 1.0f;
    const size_t resident = resident_pages(a.data(), bytes);
    CHECK(resident >= (size_t{1} << 20) / page);
    CHECK(resident <= (size_t{1} << 20) / page + 2);
}

TEST_CASE("ZeroedArray: an overflowing size is an out-of-memory error, not a crash", "[zeroed_array]") {
    try {
        ZeroedArray<double> a(SIZE_MAX / 4);
        FAIL("no error");
    } catch (const inlay::Error& e) {
        CHECK(e.status() == INLAY_ERR_OUT_OF_MEMORY);
    }
}
