// argmax over a row of logits: the greedy choice.
#pragma once

#include <cstdint>
#include <span>

namespace inlay {

// Index of the largest value; the lowest index wins ties and NaN never wins (-inf can).
// Returns -1 when `values` is empty or all NaN. Pure function, thread-safe.
[[nodiscard]] int32_t argmax(std::span<const float> values) noexcept;

}  // namespace inlay
