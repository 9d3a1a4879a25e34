// Test-only helpers for the sampling tests: a naive float64 reference of the documented
// sampling chain (sort everything, then cut), softmax, and frequency checks.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include "sampling/sampling_params.h"

namespace inlay::test {

// softmax(logits / temperature) in float64; NaN logits get probability 0.
std::vector<double> softmax64(std::span<const float> logits, double temperature);

// Ids of the non-NaN logits ordered by logit descending, lower id first on ties.
std::vector<int32_t> order_desc(std::span<const float> logits);

// The probability of each token after the whole chain (penalties excluded), straight from
// the definitions: top_k largest, smallest prefix with mass >= top_p, p >= min_p * p_max,
// then softmax at the temperature over what is left. Greedy (temperature <= 0) not handled.
std::vector<double> reference_probs(std::span<const float> logits, const SamplingParams& params);

// One draw of the documented algorithm, written independently of the library: penalties,
// greedy or chain + inverse CDF over the survivors (in id order) with the 53-bit
// uniform from `rng`. nullopt when every logit is NaN.
std::optional<int32_t> reference_sample(std::span<const float> logits, std::span<const int32_t> history,
                                        const SamplingParams& params, std::mt19937_64& rng);

// Checks that observed counts over n draws match probs: zero-probability tokens never
// appear and every other frequency is within `sigmas` standard errors (binomial).
void require_frequencies_match(std::span<const int64_t> counts, std::span<const double> probs, int64_t n,
                               double sigmas = 5.0);

}  // namespace inlay::test
