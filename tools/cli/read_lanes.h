// The plain memory read behind the roofline: `inlay bench --membw` (bench_membw.cpp) and
// bench_kernels' read_stream both time this loop, so their figures are the same measure.
#pragma once

#include <cstddef>
#include <cstdint>

namespace inlay::cli {

// 64 bytes: one cache line, one AVX-512 load (two AVX2 ones) per vector.
using Lane = uint64_t __attribute__((vector_size(64)));
inline constexpr size_t kLaneBytes = sizeof(Lane);

// Four independent accumulators so the adds never wait on each other; the loads set
// the pace. The sum is folded to one word that the caller keeps, so the loop stays.
inline uint64_t sum_lanes(const Lane* p, size_t n) {
    Lane a{}, b{}, c{}, d{};
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        a += p[i];
        b += p[i + 1];
        c += p[i + 2];
        d += p[i + 3];
    }
    for (; i < n; ++i) a += p[i];
    const Lane s = a + b + c + d;
    uint64_t out = 0;
    for (size_t k = 0; k < kLaneBytes / sizeof(uint64_t); ++k) out += s[k];
    return out;
}

}  // namespace inlay::cli
