// Repetition penalties (repeat, frequency, presence) over a window of recent tokens,
// with llama.cpp's definitions.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sampling/sampling_params.h"

namespace inlay {

// The tokens the penalties look at: the last params.penalty_last_n entries of `history`
// (all of it for -1, none for 0). A view into `history`.
[[nodiscard]] std::span<const int32_t> penalty_window(std::span<const int32_t> history,
                                                      const SamplingParams& params) noexcept;

// Applies the penalties in place to `logits` for every distinct token in the window:
//   logit = logit > 0 ? logit / repeat_penalty : logit * repeat_penalty
//   logit -= count * frequency_penalty + (count > 0) * presence_penalty
// `counts` is caller-owned scratch (reused across calls to avoid allocation): it is grown
// to logits.size() and left all zero. Throws INLAY_ERR_INVALID_TOKEN, before changing
// anything, when a window token is outside [0, logits.size()). Not thread-safe on `counts`.
void apply_penalties(std::span<float> logits, std::span<const int32_t> history, const SamplingParams& params,
                     std::vector<int32_t>& counts);

}  // namespace inlay
