// What the micro-benchmarks share: reproducible random inputs.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace inlay::bench {

// n samples of a standard normal distribution from a fixed seed.
inline std::vector<float> random_floats(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> v(n);
    for (auto& x : v) x = normal(rng);
    return v;
}

}  // namespace inlay::bench
