#include "speculative/draft_policy.h"

#include <algorithm>
#include <cmath>

namespace inlay {

DraftPolicy::DraftPolicy(int32_t n_max, int32_t n_min, double prior_acceptance)
    : n_max_(std::max<int32_t>(1, n_max)),
      n_min_(std::clamp<int32_t>(n_min, 0, n_max_)),
      successes_(kPriorWeight * std::clamp(prior_acceptance, 0.01, 0.99)),
      failures_(kPriorWeight - successes_) {}

double DraftPolicy::acceptance() const { return successes_ / (successes_ + failures_); }

double DraftPolicy::gain(double a, int32_t k, const SpeculationCosts& costs) {
    const double expected = a >= 1.0 ? static_cast<double>(k + 1) : (1.0 - std::pow(a, k + 1)) / (1.0 - a);
    return expected / (1.0 + static_cast<double>(k) * (costs.verify_token + costs.draft_token));
}

int32_t DraftPolicy::next(const SpeculationCosts& costs, int32_t limit) {
    const int32_t k_max = std::min(n_max_, limit);
    if (k_max <= 0) return 0;
    return std::max(std::min(n_min_, k_max), choose(costs, k_max));
}

int32_t DraftPolicy::choose(const SpeculationCosts& costs, int32_t k_max) {
    const double a = acceptance();
    int32_t best_k = 0;
    double best = 1.0;
    for (int32_t k = 1; k <= k_max; ++k) {
        const double g = gain(a, k, costs);
        if (g > best) {
            best = g;
            best_k = k;
        }
    }
    if (best >= kMinGain) {
        probe_interval_ = kFirstProbe;
        steps_since_probe_ = 0;
        return best_k;
    }
    // Not worth it even if every proposal were kept: what a pass costs rules it out, and a
    // probe could only tell what is known (probes measure acceptance, not cost).
    if (gain(1.0, k_max, costs) < kMinGain) return 0;
    // Not worth it at the rate seen so far: decode plainly, probing now and then.
    if (++steps_since_probe_ < probe_interval_) return 0;
    steps_since_probe_ = 0;
    probe_interval_ = std::min(kMaxProbe, probe_interval_ * 2);
    return 1;
}

void DraftPolicy::record(int32_t proposed, int32_t accepted) {
    if (proposed <= 0) return;
    successes_ = successes_ * kDecay + static_cast<double>(accepted);
    failures_ = failures_ * kDecay + (accepted < proposed ? 1.0 : 0.0);
}

}  // namespace inlay
