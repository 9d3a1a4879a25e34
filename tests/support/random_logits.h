// Logits that test the sampling rule's edges: NaN, -inf and (in large rows) +inf about
// once in a thousand, and either coarse values (quarters in [-4, 4]: many exact ties) or
// fine ones. Shared by the sampler's tests and the backends' sample_rows tests.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <span>

namespace inlay::test {

inline void fill_edge_logits(std::span<float> out, std::mt19937& gen, bool coarse) {
    for (float& l : out) {
        const uint32_t r = gen() % 1000;
        if (r == 0) l = NAN;
        else if (r == 1) l = -INFINITY;
        else if (r == 2 && out.size() > 50) l = INFINITY;
        else if (coarse) l = static_cast<float>(static_cast<int>(gen() % 33) - 16) * 0.25f;
        else l = static_cast<float>(static_cast<int32_t>(gen())) * 0x1.0p-28f;
    }
}

}  // namespace inlay::test
