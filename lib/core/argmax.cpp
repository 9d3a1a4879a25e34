#include "core/argmax.h"

#include <cstddef>
#include <limits>

#include "core/block_scan.h"

namespace inlay {

using scan_detail::kScanBlock;
using scan_detail::max_block;

int32_t argmax(std::span<const float> values) noexcept {
    // One vectorised pass over whole blocks remembers the first block holding the largest
    // block maximum (strict >, so earlier blocks win ties); only that block is then
    // searched element by element.
    const float* p = values.data();
    const size_t n = values.size();
    float best = -std::numeric_limits<float>::infinity();
    size_t best_block = n;
    size_t i = 0;
    for (; i + kScanBlock <= n; i += kScanBlock) {
        const float m = max_block(p + i);
        if (m > best) {
            best = m;
            best_block = i;
        }
    }
    size_t best_tail = n;
    for (; i < n; ++i) {
        if (p[i] > best) {
            best = p[i];
            best_tail = i;
        }
    }
    if (best_tail < n) return static_cast<int32_t>(best_tail);
    if (best_block < n) {
        for (size_t j = best_block; j < best_block + kScanBlock; ++j) {
            if (p[j] == best) return static_cast<int32_t>(j);
        }
    }
    // Nothing above -inf: the first -inf wins; none at all means empty or all NaN.
    for (size_t j = 0; j < n; ++j) {
        if (p[j] == best) return static_cast<int32_t>(j);
    }
    return -1;
}

}  // namespace inlay
