// Sampler: picks the next token from a row of logits with llama.cpp's default chain
//   penalties -> top_k -> top_p -> min_p -> temperature -> random draw.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "backend/common/sample_rows.h"
#include "sampling/sample_chain.h"
#include "sampling/sampling_params.h"

namespace inlay {

// A distribution over token ids: ids ascending, probs summing to 1 (only the tokens with
// a chance; speculative decoding compares a draft's and the target's).
struct TokenDistribution {
    std::vector<int32_t> ids;
    std::vector<double> probs;

    // The probability of `id` (0 when it is not in the support).
    [[nodiscard]] double prob(int32_t id) const noexcept;
    void set_point(int32_t id) {
        ids.assign(1, id);
        probs.assign(1, 1.0);
    }
};

// One per generation. Owns its random state and scratch buffers (no allocation per token
// after the first). Not thread-safe.
//
// The draw is specified exactly so that a seed gives the same tokens on every platform:
// u = (next mt19937_64 output >> 11) * 2^-53; each survivor of the chain gets the weight
// w = exp((logit - max) / temperature) in double; walking the survivors in id order, the
// token is the first whose running weight sum exceeds u * sum(w). Exactly one random
// number is consumed per non-greedy sample; greedy consumes none. Truncation ties (equal
// logits at a top_k / top_p / min_p boundary) keep the lower ids.
class Sampler {
public:
    // Throws INLAY_ERR_INVALID_ARGUMENT for invalid params (see validate) or n_vocab <= 0.
    Sampler(const SamplingParams& params, int32_t n_vocab);

    // Picks the next token from raw `logits` (n_vocab of them; not modified). `history` is
    // the conversation so far; only its last penalty_last_n tokens are read, and those must
    // be valid ids (INLAY_ERR_INVALID_TOKEN otherwise). NaN logits are never picked; if all
    // are NaN this throws INLAY_ERR_INTERNAL. Deterministic for a given seed and inputs.
    int32_t sample(std::span<const float> logits, std::span<const int32_t> history);

    // The distribution sample() draws from for these inputs: what survives the chain, with
    // its weights normalised; a point mass where sample() has no choice (greedy, every
    // logit -inf). Consumes no random numbers. Same errors as sample().
    void distribution(std::span<const float> logits, std::span<const int32_t> history, TokenDistribution& out);
    // The next uniform in [0, 1) from this sampler's random state (speculative decoding's
    // acceptance tests draw from the target's sampler, so a seed fixes them too).
    double uniform();
    // Whether sample() is an argmax (temperature <= 0).
    [[nodiscard]] bool greedy() const noexcept { return params_.temperature <= 0.0f; }
    // Whether sample() is the argmax of the raw logits (greedy and no penalty), which the
    // device that holds the logits can compute (Executor::step_argmax).
    [[nodiscard]] bool plain_argmax() const noexcept { return greedy() && !penalties_active(params_); }
    // What sample() returns when the argmax of the logits, computed elsewhere, is `id`:
    // the id, or sample()'s error when it is -1 (every logit NaN). Only for plain_argmax().
    [[nodiscard]] int32_t from_argmax(int32_t id) const;

    // Sampling where the logits are (Backend::sample_rows) takes greedy rows and rows
    // with top_k in [1, min(kMaxSampleTopK, n_vocab - 1)]; the rest sort much of the
    // vocabulary and stay with sample().
    [[nodiscard]] bool device_samplable() const noexcept;
    // The next sample()'s penalised tokens (history as for sample()), appended to `out`;
    // consumes no random numbers. Same errors as sample()'s penalties.
    void device_penalties(std::span<const int32_t> history, std::vector<PenaltyEntry>& out);
    // The next sample() described for a backend, its penalties being
    // out[penalty_begin, +penalty_count) of device_penalties: consumes the random number
    // sample() would (none when greedy), so the backend draws the same token. Only for
    // device_samplable().
    [[nodiscard]] RowSampling device_row(int32_t penalty_begin, int32_t penalty_count);
    // What sample() returns when the backend's sample_rows gave `id` for device_row():
    // the id, or sample()'s error when it is -1 (every logit NaN).
    [[nodiscard]] int32_t from_device(int32_t id) const;

    [[nodiscard]] const SamplingParams& params() const noexcept { return params_; }
    [[nodiscard]] int32_t n_vocab() const noexcept { return n_vocab_; }

private:
    // The logits after the penalties (a view of `logits` when none are active).
    std::span<const float> penalized(std::span<const float> logits, std::span<const int32_t> history);

    SamplingParams params_;
    int32_t n_vocab_;
    std::mt19937_64 rng_;
    std::vector<float> penalized_;  // logits after penalties (only when penalties are active)
    std::vector<int32_t> counts_;   // penalty scratch, kept all zero between calls
    SampleChain chain_;
};

}  // namespace inlay
