// Repetition penalties (repeat, frequency, presence) over a window of recent tokens,
// with llama.cpp's definitions.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/common/sample_rows.h"
#include "sampling/sampling_params.h"

namespace inlay {

// The tokens the penalties look at: the last params.penalty_last_n entries of `history`
// (all of it for -1, none for 0). A view into `history`.
[[nodiscard]] std::span<const int32_t> penalty_window(std::span<const int32_t> history,
                                                      const SamplingParams& params) noexcept;

// The penalised value of a logit whose token occurs `count` (>= 1) times in the window:
//   logit = logit > 0 ? logit / repeat_penalty : logit * repeat_penalty
//   logit -= count * frequency_penalty + presence_penalty
// every operation rounded to float (never fused), as a device computes it too.
[[nodiscard]] float penalized_logit(float logit, int32_t count, float repeat_penalty, float frequency_penalty,
                                    float presence_penalty) noexcept;

// Applies the penalties in place to `logits` for every distinct token in the window.
// `counts` is caller-owned scratch (reused across calls to avoid allocation): it is grown
// to logits.size() and left all zero. Throws INLAY_ERR_INVALID_TOKEN, before changing
// anything, when a window token is outside [0, logits.size()). Not thread-safe on `counts`.
void apply_penalties(std::span<float> logits, std::span<const int32_t> history, const SamplingParams& params,
                     std::vector<int32_t>& counts);

// Appends the window's distinct tokens with their counts to `out`, in the order of their
// first occurrence (nothing when no penalty is active): what apply_penalties applies,
// for a backend to apply where the logits are. Same errors and scratch as apply_penalties.
void append_penalty_entries(std::span<const int32_t> history, const SamplingParams& params, int64_t n_vocab,
                            std::vector<int32_t>& counts, std::vector<PenaltyEntry>& out);

}  // namespace inlay
