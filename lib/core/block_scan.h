// Block-wise scans over float rows for the sampler's hot loops (argmax, top-k threshold).
// GCC/Clang vector extensions give SIMD code on any target without intrinsics; other
// compilers get the plain loops. Used by core/argmax.cpp and the sampler.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

namespace inlay::scan_detail {

inline constexpr size_t kScanBlock = 64;  // floats per block

#if defined(__GNUC__)

// True when any of p[0, 64) is > threshold (NaN never is).
inline bool any_above_block(const float* p, float threshold) noexcept {
    using V = float __attribute__((vector_size(32)));
    using M = int32_t __attribute__((vector_size(32)));
    M hit{};
    for (size_t k = 0; k < kScanBlock; k += 8) {
        V x;
        std::memcpy(&x, p + k, sizeof x);
        hit |= x > threshold;
    }
    int32_t any = 0;
    for (size_t j = 0; j < 8; ++j) any |= hit[j];
    return any != 0;
}

// Largest non-NaN of p[0, 64); -inf when there is none.
inline float max_block(const float* p) noexcept {
    using V = float __attribute__((vector_size(32)));
    const float neg_inf = -std::numeric_limits<float>::infinity();
    V acc0 = V{} + neg_inf;
    V acc1 = acc0;
    for (size_t k = 0; k < kScanBlock; k += 16) {
        V x;
        V y;
        std::memcpy(&x, p + k, sizeof x);
        std::memcpy(&y, p + k + 8, sizeof y);
        // The accumulator is the second operand, so a NaN element loses the comparison.
        acc0 = x > acc0 ? x : acc0;
        acc1 = y > acc1 ? y : acc1;
    }
    acc0 = acc1 > acc0 ? acc1 : acc0;
    float best = neg_inf;
    for (size_t j = 0; j < 8; ++j) best = acc0[j] > best ? acc0[j] : best;
    return best;
}

#else

inline bool any_above_block(const float* p, float threshold) noexcept {
    bool any = false;
    for (size_t j = 0; j < kScanBlock; ++j) any = any || p[j] > threshold;
    return any;
}

inline float max_block(const float* p) noexcept {
    float best = -std::numeric_limits<float>::infinity();
    for (size_t j = 0; j < kScanBlock; ++j) best = p[j] > best ? p[j] : best;
    return best;
}

#endif

}  // namespace inlay::scan_detail
