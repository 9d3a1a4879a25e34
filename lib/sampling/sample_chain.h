// SampleChain: the truncation and draw of sampling (top_k -> top_p -> min_p ->
// temperature -> draw) over logits the penalties have already changed. Stateless apart
// from reusable scratch: the Sampler runs it with its own random numbers, and the CPU
// backend's sample_rows runs it with draws the host made (one rule, one implementation).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sampling/sampling_params.h"

namespace inlay {

struct TokenDistribution;

// The chain's scalars, as the host computes them once (a device computes nothing of
// them itself, so that its rule is the host's to the bit).
struct ChainScalars {
    double inv_temperature = 1.0;  // 1.0 / double(temperature)
    double log_min_p = 0.0;        // log(double(min_p)); used only when min_p > 0
};
[[nodiscard]] ChainScalars chain_scalars(const SamplingParams& params) noexcept;

class SampleChain {
public:
    // The token for the uniform draw u in [0, 1): each survivor of the chain gets the
    // weight exp((logit - max) / temperature) in double; walking the survivors in id order,
    // the token is the first whose running weight sum exceeds u * sum(w). Returns the
    // lowest id when every logit is -inf, and -1 when every logit is NaN. Needs
    // temperature > 0 (greedy is an argmax, not a chain). Reads only temperature, top_k,
    // top_p and min_p of `params`.
    int32_t pick(std::span<const float> logits, const SamplingParams& params, double u);

    // The distribution pick() draws from (survivors with normalised weights; a point mass
    // when there is no choice). Returns false when every logit is NaN.
    bool distribution(std::span<const float> logits, const SamplingParams& params, TokenDistribution& out);

private:
    struct Candidate {
        float logit;
        int32_t id;
        double weight;  // unnormalised probability: at temperature 1 for top_p, then at the temperature
    };
    static constexpr int32_t kSurvivorsReady = -1;
    static constexpr int32_t kAllNaN = -2;

    // Runs the chain: leaves the survivors in cands_, in id order, weighted at the
    // temperature, and returns kSurvivorsReady; or returns the token when there is no
    // choice (every logit -inf), or kAllNaN.
    int32_t survivors(std::span<const float> logits, const SamplingParams& params);
    void select_top_k(std::span<const float> logits, size_t k);
    size_t top_p_keep(double target_mass);
    void put_in_id_order(std::span<const float> logits);

    std::vector<Candidate> cands_;  // the survivors of the chain so far
    std::vector<uint8_t> kept_;     // id-order scratch for large survivor sets
};

}  // namespace inlay
