#include "speculative/rejection.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>

#include "core/expf_poly.h"

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

namespace {

// e^x for x <= 0 (core/expf_poly.h), 0 for NaN and below kExpMin (where e^x is under
// 2^-126 and cannot move a sum that holds the maximum's 1). Branch-free, so that the
// compiler vectorises the loop that calls it: std::exp in double took 200 us for a
// 32000-token vocabulary, a third of a small draft model's pass.
inline float exp_nonpositive(float x) {
    const bool keep = x >= expf_poly::kExpMin;  // false for NaN too
    const float e = expf_poly::exp_in_range(keep ? x : 0.0f);
    return keep ? e : 0.0f;
}

}  // namespace

double top_probability(std::span<const float> logits) {
    // Lane-wise maxima and sums over kLanes independent lanes: the compiler vectorises
    // these loops without reassociating anything (NaN fails every comparison: skipped).
    constexpr size_t kLanes = 16;
    const float* v = logits.data();
    const size_t n = logits.size();
    const size_t n_full = n / kLanes * kLanes;
    constexpr float kNegInf = -std::numeric_limits<float>::infinity();
    float lane_max[kLanes];
    std::fill(std::begin(lane_max), std::end(lane_max), kNegInf);
    for (size_t i = 0; i < n_full; i += kLanes)
        for (size_t j = 0; j < kLanes; ++j) lane_max[j] = v[i + j] > lane_max[j] ? v[i + j] : lane_max[j];
    float max_logit = kNegInf;
    for (const float m : lane_max) max_logit = m > max_logit ? m : max_logit;
    for (size_t i = n_full; i < n; ++i) max_logit = v[i] > max_logit ? v[i] : max_logit;
    if (std::isinf(max_logit)) {
        // +inf logits share all the mass; all -inf (or none but NaN) share it evenly.
        size_t tied = 0;
        for (const float x : logits) tied += x == max_logit ? 1 : 0;
        return tied > 0 ? 1.0 / static_cast<double>(tied) : 0.0;
    }
    float lane_sum[kLanes] = {};
    for (size_t i = 0; i < n_full; i += kLanes)
        for (size_t j = 0; j < kLanes; ++j) lane_sum[j] += exp_nonpositive(v[i + j] - max_logit);
    double sum = 0.0;
    for (const float s : lane_sum) sum += static_cast<double>(s);
    for (size_t i = n_full; i < n; ++i) sum += static_cast<double>(exp_nonpositive(v[i] - max_logit));
    return 1.0 / sum;
}

double acceptance_chance(const TokenDistribution& p, const TokenDistribution* q, int32_t draft) {
    if (!q) return p.prob(draft);
    double sum = 0.0;
    for (size_t i = 0; i < q->ids.size(); ++i) sum += std::min(q->probs[i], p.prob(q->ids[i]));
    return std::min(1.0, sum);
}

double top_probability(const TokenDistribution& dist) {
    double top = 0.0;
    for (const double v : dist.probs) top = std::max(top, v);
    return top;
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
