#include "sampling/penalties.h"

#include <cstddef>

#include "core/error.h"

namespace inlay {

std::span<const int32_t> penalty_window(std::span<const int32_t> history, const SamplingParams& params) noexcept {
    if (params.penalty_last_n < 0) return history;
    const size_t n = static_cast<size_t>(params.penalty_last_n);
    return n >= history.size() ? history : history.last(n);
}

void apply_penalties(std::span<float> logits, std::span<const int32_t> history, const SamplingParams& params,
                     std::vector<int32_t>& counts) {
    if (!penalties_active(params)) return;
    const std::span<const int32_t> window = penalty_window(history, params);
    const auto n_vocab = static_cast<int64_t>(logits.size());
    for (const int32_t token : window) {
        if (token < 0 || token >= n_vocab)
            fail(INLAY_ERR_INVALID_TOKEN, "sampling: history token {} is outside the vocabulary (0..{})", token,
                 n_vocab - 1);
    }
    if (counts.size() < logits.size()) counts.resize(logits.size(), 0);

    for (const int32_t token : window) ++counts[static_cast<size_t>(token)];
    // Each distinct token is penalised once: the first visit applies the count and zeroes
    // it, which also leaves the scratch clean for the next call.
    for (const int32_t token : window) {
        const auto t = static_cast<size_t>(token);
        const int32_t count = counts[t];
        if (count == 0) continue;
        counts[t] = 0;
        float& logit = logits[t];
        logit = logit > 0.0f ? logit / params.repeat_penalty : logit * params.repeat_penalty;
        logit -= static_cast<float>(count) * params.frequency_penalty + params.presence_penalty;
    }
}

}  // namespace inlay
