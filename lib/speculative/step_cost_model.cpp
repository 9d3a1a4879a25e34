#include "speculative/step_cost_model.h"

#include <algorithm>

namespace inlay {

void StepCostModel::add(int64_t tokens, double seconds) {
    if (tokens <= 0 || !(seconds >= 0.0)) return;
    const auto n = static_cast<double>(tokens);
    w_ = w_ * kForget + 1.0;
    n_ = n_ * kForget + n;
    nn_ = nn_ * kForget + n * n;
    t_ = t_ * kForget + seconds;
    nt_ = nt_ * kForget + n * seconds;
}

double StepCostModel::variance() const {
    if (w_ <= 0.0) return 0.0;
    const double mean_n = n_ / w_;
    return nn_ / w_ - mean_n * mean_n;
}

bool StepCostModel::fitted() const { return variance() > 0.25; }  // sizes that differ by about a token or more

double StepCostModel::per_token_seconds() const {
    const double mean_n = n_ / w_;
    const double mean_t = t_ / w_;
    return std::max(0.0, (nt_ / w_ - mean_n * mean_t) / variance());
}

double StepCostModel::decode_seconds() const {
    if (w_ <= 0.0) return 0.0;
    const double mean_n = n_ / w_;
    const double mean_t = t_ / w_;
    // Unfitted: every pass priced as a decode step plus fallback_ per further token.
    if (!fitted()) return mean_t / (1.0 + fallback_ * std::max(0.0, mean_n - 1.0));
    const double per_token = per_token_seconds();
    return std::max(mean_t - per_token * (mean_n - 1.0), 1e-9);
}

double StepCostModel::token_ratio(int64_t batch_tokens) const {
    const double n = static_cast<double>(std::max<int64_t>(1, batch_tokens));
    if (!fitted()) return std::clamp(n * fallback_ / (1.0 + fallback_ * (n - 1.0)), 0.0, 1.0);
    const double per_token = per_token_seconds();
    const double fixed = std::max(0.0, decode_seconds() - per_token);
    const double pass = fixed + per_token * n;
    return pass > 0.0 ? std::clamp(n * per_token / pass, 0.0, 1.0) : 0.0;
}

}  // namespace inlay
