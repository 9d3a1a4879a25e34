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
    if (tokens <= kTracked) recent_[static_cast<size_t>(tokens)].add(seconds);
}

double StepCostModel::lower_median(const Recent& times) {
    // Insertion sort of at most kRecent values (std::sort's bounds confuse GCC 12's
    // -Warray-bounds on an array this small).
    std::array<double, kRecent> sorted{};
    for (int i = 0; i < times.size(); ++i) {
        int j = i;
        for (; j > 0 && sorted[static_cast<size_t>(j - 1)] > times[i]; --j)
            sorted[static_cast<size_t>(j)] = sorted[static_cast<size_t>(j - 1)];
        sorted[static_cast<size_t>(j)] = times[i];
    }
    return sorted[static_cast<size_t>((times.size() - 1) / 2)];
}

double StepCostModel::variance() const {
    if (w_ <= 0.0) return 0.0;
    const double mean_n = n_ / w_;
    return nn_ / w_ - mean_n * mean_n;
}

bool StepCostModel::fitted() const { return variance() > 0.25; }  // sizes that differ by about a token or more

double StepCostModel::per_token_seconds() const {
    if (!fitted()) return fallback_ * line_seconds(1);
    const double mean_n = n_ / w_;
    const double mean_t = t_ / w_;
    return std::max(0.0, (nt_ / w_ - mean_n * mean_t) / variance());
}

double StepCostModel::line_seconds(int64_t tokens) const {
    if (w_ <= 0.0) return 0.0;
    const double mean_n = n_ / w_;
    const double mean_t = t_ / w_;
    const auto n = static_cast<double>(tokens);
    // Unfitted: every pass priced as a decode step plus fallback_ per further token.
    if (!fitted()) return mean_t / (1.0 + fallback_ * std::max(0.0, mean_n - 1.0)) * (1.0 + fallback_ * (n - 1.0));
    const double per_token = per_token_seconds();
    const double decode = std::max(mean_t - per_token * (mean_n - 1.0), 1e-9);
    return decode + per_token * (n - 1.0);
}

double StepCostModel::decode_seconds() const { return pass_seconds(1); }

double StepCostModel::pass_seconds(int64_t tokens) const {
    tokens = std::max<int64_t>(1, tokens);
    if (w_ <= 0.0) return 0.0;
    if (seen(tokens)) return time_at(tokens);
    // The nearest sizes seen on either side.
    int64_t lo = std::min(tokens, kTracked);
    while (lo >= 1 && !seen(lo)) --lo;
    int64_t hi = tokens + 1;
    while (hi <= kTracked && !seen(hi)) ++hi;
    if (lo < 1) {  // nothing seen below: the line, through the smallest size seen if any
        if (hi > kTracked) return line_seconds(tokens);
        return std::max(0.0, time_at(hi) - per_token_seconds() * static_cast<double>(hi - tokens));
    }
    if (hi <= kTracked) {
        const double f = static_cast<double>(tokens - lo) / static_cast<double>(hi - lo);
        return time_at(lo) + f * (time_at(hi) - time_at(lo));
    }
    return time_at(lo) + per_token_seconds() * static_cast<double>(tokens - lo);  // beyond the sizes seen
}

double StepCostModel::fastest_pass_seconds(int64_t tokens) const {
    if (!seen(tokens)) return pass_seconds(tokens);
    const Recent& times = recent_[static_cast<size_t>(tokens)];
    double fastest = times[0];
    for (int i = 1; i < times.size(); ++i) fastest = std::min(fastest, times[i]);
    return fastest;
}

double StepCostModel::added_ratio(int64_t batch_tokens, int64_t more) const {
    batch_tokens = std::max<int64_t>(1, batch_tokens);
    if (more <= 0) return 0.0;
    const double pass = pass_seconds(batch_tokens);
    if (!(pass > 0.0)) return fallback_ * static_cast<double>(more);
    const double added = std::max(0.0, pass_seconds(batch_tokens + more) - pass);
    return added / (pass / static_cast<double>(batch_tokens));
}

}  // namespace inlay
