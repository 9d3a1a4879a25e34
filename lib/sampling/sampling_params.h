// SamplingParams: how the next token is chosen from the logits, and validate() for
// values that come from the host.
#pragma once

#include <cstdint>

namespace inlay {

// Plain value type; the defaults are llama.cpp's. Chain order: penalties -> top_k ->
// top_p -> min_p -> temperature -> random draw (see sampler.h).
struct SamplingParams {
    float temperature = 0.8f;        // <= 0: greedy (argmax after penalties)
    int32_t top_k = 40;              // <= 0: off
    float top_p = 0.95f;             // in (0, 1]; 1: off
    float min_p = 0.05f;             // <= 0: off; at most 1
    float repeat_penalty = 1.0f;     // > 0; 1: off. logit > 0 ? logit / p : logit * p (as llama.cpp)
    float frequency_penalty = 0.0f;  // logit -= count * f
    float presence_penalty = 0.0f;   // logit -= (count > 0) * p
    int32_t penalty_last_n = 64;     // window over the most recent history (tokens); 0: off; -1: all
    uint64_t seed = 0;               // seeds std::mt19937_64; the caller picks a random one if it wants
};

// Throws inlay::Error(INLAY_ERR_INVALID_ARGUMENT) naming the first offending field: NaN
// anywhere, infinite temperature or penalties, top_p outside (0, 1], min_p above 1,
// repeat_penalty <= 0, penalty_last_n < -1. Negative temperature is valid (greedy).
void validate(const SamplingParams& params);

// True when any penalty changes logits (so the history must be looked at).
[[nodiscard]] bool penalties_active(const SamplingParams& params) noexcept;

}  // namespace inlay
