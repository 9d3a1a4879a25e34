#include "sampling/sampler.h"

#include <algorithm>

#include "core/argmax.h"
#include "core/error.h"
#include "sampling/penalties.h"

namespace inlay {

namespace {

// No logit is a number: the model's computation is broken (not the sampler's input
// handling), so the status says the weights are at fault.
[[noreturn]] void fail_all_nan() {
    fail(INLAY_ERR_BAD_WEIGHTS, "every logit is NaN: the model's weights (or their quantization) compute no numbers");
}

// Uniform in [0, 1) from the top 53 bits: std::uniform_real_distribution is not specified
// bit-for-bit, this is.
double uniform53(std::mt19937_64& rng) {
    return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

}  // namespace

Sampler::Sampler(const SamplingParams& params, int32_t n_vocab) : params_(params), n_vocab_(n_vocab), rng_(params.seed) {
    validate(params);
    if (n_vocab <= 0) fail(INLAY_ERR_INVALID_ARGUMENT, "sampling: n_vocab must be positive (got {})", n_vocab);
}

double TokenDistribution::prob(int32_t id) const noexcept {
    const auto it = std::lower_bound(ids.begin(), ids.end(), id);
    return it != ids.end() && *it == id ? probs[static_cast<size_t>(it - ids.begin())] : 0.0;
}

std::span<const float> Sampler::penalized(std::span<const float> logits, std::span<const int32_t> history) {
    if (logits.size() != static_cast<size_t>(n_vocab_))
        fail(INLAY_ERR_INVALID_ARGUMENT, "sampling: got {} logits for a vocabulary of {}", logits.size(), n_vocab_);
    if (!penalties_active(params_)) return logits;
    penalized_.assign(logits.begin(), logits.end());
    apply_penalties(penalized_, history, params_, counts_);
    return penalized_;
}

double Sampler::uniform() { return uniform53(rng_); }

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> history) {
    const std::span<const float> src = penalized(logits, history);
    if (greedy()) {
        const int32_t token = argmax(src);
        if (token < 0) fail_all_nan();
        return token;
    }
    const double u = uniform53(rng_);  // drawn first so each sample consumes exactly one
    const int32_t token = chain_.pick(src, params_, u);
    if (token < 0) fail_all_nan();
    return token;
}

int32_t Sampler::from_argmax(int32_t id) const {
    if (!plain_argmax()) fail(INLAY_ERR_INTERNAL, "from_argmax: this sampler is not a plain argmax");
    return from_device(id);  // a plain argmax is greedy, which a device samples too
}

bool Sampler::device_samplable() const noexcept {
    if (greedy()) return true;
    return params_.top_k >= 1 && params_.top_k <= kMaxSampleTopK && params_.top_k < n_vocab_;
}

void Sampler::device_penalties(std::span<const int32_t> history, std::vector<PenaltyEntry>& out) {
    append_penalty_entries(history, params_, n_vocab_, counts_, out);
}

RowSampling Sampler::device_row(int32_t penalty_begin, int32_t penalty_count) {
    if (!device_samplable()) fail(INLAY_ERR_INTERNAL, "device_row: this sampler's chain stays on the host");
    RowSampling row;
    row.temperature = params_.temperature;
    row.repeat_penalty = params_.repeat_penalty;
    row.frequency_penalty = params_.frequency_penalty;
    row.presence_penalty = params_.presence_penalty;
    row.penalty_begin = penalty_begin;
    row.penalty_count = penalty_count;
    if (greedy()) return row;
    row.top_k = params_.top_k;
    row.top_p = params_.top_p;
    row.min_p = params_.min_p;
    const ChainScalars scalars = chain_scalars(params_);
    row.inv_temperature = scalars.inv_temperature;
    row.log_min_p = scalars.log_min_p;
    row.u = uniform53(rng_);  // sample() draws its one number before the chain, too
    return row;
}

int32_t Sampler::from_device(int32_t id) const {
    if (!device_samplable()) fail(INLAY_ERR_INTERNAL, "from_device: this sampler's chain stays on the host");
    if (id < 0) fail_all_nan();
    if (id >= n_vocab_) fail(INLAY_ERR_INTERNAL, "a device's id {} outside the vocabulary of {}", id, n_vocab_);
    return id;
}

void Sampler::distribution(std::span<const float> logits, std::span<const int32_t> history, TokenDistribution& out) {
    const std::span<const float> src = penalized(logits, history);
    if (greedy()) {
        const int32_t token = argmax(src);
        if (token < 0) fail_all_nan();
        out.set_point(token);
        return;
    }
    if (!chain_.distribution(src, params_, out)) fail_all_nan();
}

}  // namespace inlay
