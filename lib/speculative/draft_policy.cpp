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

SpeculationCosts SpeculationCosts::linear(double verify_token, double draft_token, int32_t k_max) {
    SpeculationCosts c;
    c.draft_first = draft_token;
    c.draft_token = draft_token;
    c.verify.resize(static_cast<size_t>(std::max<int32_t>(1, k_max)) + 1);
    for (size_t k = 0; k < c.verify.size(); ++k) c.verify[k] = verify_token * static_cast<double>(k);
    return c;
}

double SpeculationCosts::verify_cost(int32_t k) const {
    if (k <= 0 || verify.empty()) return 0.0;
    const auto last = static_cast<int32_t>(verify.size()) - 1;
    if (k <= last) return verify[static_cast<size_t>(k)];
    const double per_token = last > 0 ? verify.back() / static_cast<double>(last) : 0.0;
    return verify.back() + per_token * static_cast<double>(k - last);
}

double SpeculationCosts::draft_cost(int32_t k) const {
    return k <= 0 ? 0.0 : draft_first + static_cast<double>(k - 1) * draft_token;
}

double DraftPolicy::gain(double a, int32_t k, const SpeculationCosts& costs) {
    const double expected = a >= 1.0 ? static_cast<double>(k + 1) : (1.0 - std::pow(a, k + 1)) / (1.0 - a);
    return expected / (1.0 + costs.verify_cost(k) + costs.draft_cost(k));
}

int32_t DraftPolicy::next(const SpeculationCosts& costs, int32_t limit) {
    const int32_t k_max = std::min(n_max_, limit);
    if (k_max <= 0) return 0;
    const int32_t forced = std::min(n_min_, k_max);
    if (decode_steps_ < kWarmup) {
        ++decode_steps_;
        return forced;
    }
    if (veto_left_ > 0) {
        --veto_left_;
        return forced;
    }
    return std::max(forced, choose(costs, k_max));
}

double DraftPolicy::seconds_per_token(const StepWindow& steps) {
    double s = 0.0;
    int64_t n = 0;
    for (int i = 0; i < steps.size(); ++i) {
        s += steps[i].seconds;
        n += steps[i].tokens;
    }
    return n > 0 ? s / static_cast<double>(n) : 0.0;
}

void DraftPolicy::observe(bool speculated, int64_t tokens, double seconds) {
    if (tokens <= 0 || !(seconds > 0.0)) return;
    if (speculated && !spec_started_) {
        spec_started_ = true;
        return;
    }
    (speculated ? spec_ : plain_).add({tokens, seconds});
    if (!speculated || plain_.size() < kWarmup || spec_.size() < kJudge) return;
    if (seconds_per_token(spec_) > seconds_per_token(plain_)) {
        // Slower than plain decoding. No margin here (the cost model asks for 3% before it
        // speculates): over a dozen steps of a few milliseconds the machine's noise alone
        // crossed 3% now and then, and each veto costs 16 to 512 steps of plain decoding.
        veto_left_ = veto_interval_;
        veto_interval_ = std::min(kMaxVeto, veto_interval_ * 2);
        spec_.clear();
        spec_started_ = false;  // the next one feeds the draft every vetoed token: left out
    } else {
        veto_interval_ = kFirstVeto;
    }
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
    // Not worth it at the rate seen so far: decode plainly, probing now and then, when the
    // probe's catch-up costs a small share of the steps since the last one.
    if (++steps_since_probe_ < probe_interval_) return 0;
    if (costs.draft_catch_up > kProbeShare * static_cast<double>(steps_since_probe_)) return 0;
    steps_since_probe_ = 0;
    probe_interval_ = std::min(kMaxProbe, probe_interval_ * 2);
    return 1;
}

void DraftPolicy::record_unsure(double accepted) {
    accepted = std::clamp(accepted, 0.0, 1.0);
    unsure_successes_ = unsure_successes_ * kUnsureDecay + accepted;
    unsure_failures_ = unsure_failures_ * kUnsureDecay + (1.0 - accepted);
}

void DraftPolicy::record(int32_t proposed, int32_t accepted, bool cut) {
    if (proposed <= 0 && !cut) return;
    successes_ = successes_ * kDecay + static_cast<double>(accepted);
    failures_ = failures_ * kDecay + (accepted < proposed || cut ? 1.0 : 0.0);
}

}  // namespace inlay
