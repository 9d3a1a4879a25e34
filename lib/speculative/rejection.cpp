#include "speculative/rejection.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace inlay {

namespace {

// Inverse CDF over `weights` (ids ascending): the first id whose running sum exceeds
// u * total; the last positive one when rounding keeps the sum below.
template <class WeightOf>
int32_t draw(const TokenDistribution& p, double u, WeightOf weight_of) {
    double total = 0.0;
    for (size_t i = 0; i < p.ids.size(); ++i) total += weight_of(i);
    if (!(total > 0.0)) return -1;
    const double target = u * total;
    double sum = 0.0;
    int32_t last_positive = -1;
    for (size_t i = 0; i < p.ids.size(); ++i) {
        const double w = weight_of(i);
        if (w <= 0.0) continue;
        sum += w;
        last_positive = p.ids[i];
        if (sum > target) return p.ids[i];
    }
    return last_positive;
}

}  // namespace

int32_t draw_token(const TokenDistribution& dist, double u) {
    return draw(dist, u, [&](size_t i) { return dist.probs[i]; });
}

double top_probability(std::span<const float> logits) {
    float max_logit = -std::numeric_limits<float>::infinity();
    bool any = false;
    for (const float v : logits) {
        if (std::isnan(v)) continue;
        any = true;
        max_logit = std::max(max_logit, v);
    }
    if (!any) return 0.0;
    double sum = 0.0;
    for (const float v : logits)
        if (!std::isnan(v)) sum += v == max_logit ? 1.0 : std::exp(static_cast<double>(v) - static_cast<double>(max_logit));
    return 1.0 / sum;
}

DraftVerdict verify_draft_token(const TokenDistribution& p, const TokenDistribution* q, int32_t draft, double u_accept,
                                double u_residual) {
    const double p_d = p.prob(draft);
    const double q_d = q ? q->prob(draft) : 1.0;
    // u < p/q, written without the division (q_d is 0 only for a caller's bug: reject then).
    if (q_d > 0.0 && u_accept * q_d < p_d) return {true, draft};
    // The residual max(0, p - q) lives on p's support: where p is 0 it is 0.
    auto residual = [&](size_t i) {
        const double qi = q ? q->prob(p.ids[i]) : (p.ids[i] == draft ? 1.0 : 0.0);
        return std::max(0.0, p.probs[i] - qi);
    };
    int32_t token = draw(p, u_residual, residual);
    // p == q to the last bit leaves no residual, and then acceptance was certain; only
    // rounding can get here: fall back to p itself.
    if (token < 0) token = draw(p, u_residual, [&](size_t i) { return p.probs[i]; });
    return {false, token};
}

}  // namespace inlay
