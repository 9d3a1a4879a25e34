// Rounded after every operation: a device applies the same penalties (sample_rows) and
// must get the same bits.
#include "core/no_fp_contract.h"

#include "sampling/penalties.h"

#include <cstddef>

#include "core/error.h"

namespace inlay {

namespace {

// Calls f(token, count) once for each distinct token of the penalty window, in the order
// of first occurrence (nothing when no penalty is active), after checking every window
// token against the vocabulary. `counts` is grown to n_vocab and left all zero: the first
// visit of a token takes its count and zeroes it.
template <class F>
void for_each_window_token(std::span<const int32_t> history, const SamplingParams& params, int64_t n_vocab,
                           std::vector<int32_t>& counts, F&& f) {
    if (!penalties_active(params)) return;
    const std::span<const int32_t> window = penalty_window(history, params);
    for (const int32_t token : window) {
        if (token < 0 || token >= n_vocab)
            fail(INLAY_ERR_INVALID_TOKEN, "sampling: history token {} is outside the vocabulary (0..{})", token,
                 n_vocab - 1);
    }
    if (counts.size() < static_cast<size_t>(n_vocab)) counts.resize(static_cast<size_t>(n_vocab), 0);
    for (const int32_t token : window) ++counts[static_cast<size_t>(token)];
    for (const int32_t token : window) {
        const auto t = static_cast<size_t>(token);
        const int32_t count = counts[t];
        if (count == 0) continue;
        counts[t] = 0;
        f(token, count);
    }
}

}  // namespace

std::span<const int32_t> penalty_window(std::span<const int32_t> history, const SamplingParams& params) noexcept {
    if (params.penalty_last_n < 0) return history;
    const size_t n = static_cast<size_t>(params.penalty_last_n);
    return n >= history.size() ? history : history.last(n);
}

float penalized_logit(float logit, int32_t count, float repeat_penalty, float frequency_penalty,
                      float presence_penalty) noexcept {
    logit = logit > 0.0f ? logit / repeat_penalty : logit * repeat_penalty;
    const float frequency = static_cast<float>(count) * frequency_penalty;
    return logit - (frequency + presence_penalty);
}

void apply_penalties(std::span<float> logits, std::span<const int32_t> history, const SamplingParams& params,
                     std::vector<int32_t>& counts) {
    for_each_window_token(history, params, static_cast<int64_t>(logits.size()), counts,
                          [&](int32_t token, int32_t count) {
                              float& logit = logits[static_cast<size_t>(token)];
                              logit = penalized_logit(logit, count, params.repeat_penalty, params.frequency_penalty,
                                                      params.presence_penalty);
                          });
}

void append_penalty_entries(std::span<const int32_t> history, const SamplingParams& params, int64_t n_vocab,
                            std::vector<int32_t>& counts, std::vector<PenaltyEntry>& out) {
    for_each_window_token(history, params, n_vocab, counts,
                          [&](int32_t token, int32_t count) { out.push_back({token, count}); });
}

}  // namespace inlay
