#include "sampling_reference.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <catch2/catch.hpp>

namespace inlay::test {

std::vector<double> softmax64(std::span<const float> logits, double temperature) {
    double max = -INFINITY;
    for (const float l : logits) {
        if (!std::isnan(l)) max = std::max(max, static_cast<double>(l));
    }
    std::vector<double> p(logits.size(), 0.0);
    double sum = 0.0;
    for (size_t i = 0; i < logits.size(); ++i) {
        if (std::isnan(logits[i])) continue;
        p[i] = std::exp((static_cast<double>(logits[i]) - max) / temperature);
        sum += p[i];
    }
    for (double& v : p) v /= sum;
    return p;
}

std::vector<int32_t> order_desc(std::span<const float> logits) {
    std::vector<int32_t> ids;
    for (size_t i = 0; i < logits.size(); ++i) {
        if (!std::isnan(logits[i])) ids.push_back(static_cast<int32_t>(i));
    }
    std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
        return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)];
    });
    return ids;
}

namespace {

// The survivors of top_k -> top_p -> min_p, best first.
std::vector<int32_t> survivors(std::span<const float> logits, const SamplingParams& params) {
    std::vector<int32_t> ids = order_desc(logits);
    if (params.top_k > 0 && static_cast<size_t>(params.top_k) < ids.size()) ids.resize(static_cast<size_t>(params.top_k));
    const double max = logits[static_cast<size_t>(ids.front())];
    // Probabilities over the top_k set at temperature 1 (a +inf maximum shares all mass).
    std::vector<double> w(ids.size());
    double sum = 0.0;
    for (size_t i = 0; i < ids.size(); ++i) {
        const double l = logits[static_cast<size_t>(ids[i])];
        w[i] = l == max ? 1.0 : std::exp(l - max);
        sum += w[i];
    }
    if (params.top_p < 1.0f) {
        double cum = 0.0;
        for (size_t i = 0; i < ids.size(); ++i) {
            cum += w[i] / sum;
            if (cum >= static_cast<double>(params.top_p)) {
                ids.resize(i + 1);
                break;
            }
        }
    }
    if (params.min_p > 0.0f) {
        const double p_max = w[0] / sum;
        size_t keep = 0;
        while (keep < ids.size() && w[keep] / sum >= static_cast<double>(params.min_p) * p_max) ++keep;
        ids.resize(keep);
    }
    return ids;
}

}  // namespace

std::vector<double> reference_probs(std::span<const float> logits, const SamplingParams& params) {
    const std::vector<int32_t> ids = survivors(logits, params);
    std::vector<float> kept(logits.size(), NAN);
    for (const int32_t id : ids) kept[static_cast<size_t>(id)] = logits[static_cast<size_t>(id)];
    return softmax64(kept, static_cast<double>(params.temperature));
}

std::optional<int32_t> reference_sample(std::span<const float> raw, std::span<const int32_t> history,
                                        const SamplingParams& params, std::mt19937_64& rng) {
    std::vector<float> logits(raw.begin(), raw.end());
    const bool penalise = params.repeat_penalty != 1.0f || params.frequency_penalty != 0.0f ||
                          params.presence_penalty != 0.0f;
    if (penalise && params.penalty_last_n != 0) {
        size_t from = 0;
        if (params.penalty_last_n > 0 && static_cast<size_t>(params.penalty_last_n) < history.size())
            from = history.size() - static_cast<size_t>(params.penalty_last_n);
        std::map<int32_t, int> counts;
        for (size_t i = from; i < history.size(); ++i) ++counts[history[i]];
        for (const auto& [token, count] : counts) {
            float& l = logits[static_cast<size_t>(token)];
            l = l > 0.0f ? l / params.repeat_penalty : l * params.repeat_penalty;
            l -= static_cast<float>(count) * params.frequency_penalty + params.presence_penalty;
        }
    }
    const std::vector<int32_t> all = order_desc(logits);
    if (all.empty()) return std::nullopt;
    if (params.temperature <= 0.0f) return all.front();

    const double u = static_cast<double>(rng() >> 11) / 9007199254740992.0;  // 2^53
    const double max = logits[static_cast<size_t>(all.front())];
    if (max == -INFINITY) return all.front();
    std::vector<int32_t> ids = survivors(logits, params);
    std::sort(ids.begin(), ids.end());  // the draw walks the survivors in id order
    std::vector<double> w(ids.size());
    double sum = 0.0;
    for (size_t i = 0; i < ids.size(); ++i) {
        const double l = logits[static_cast<size_t>(ids[i])];
        w[i] = l == max ? 1.0 : std::exp((l - max) / static_cast<double>(params.temperature));
        sum += w[i];
    }
    double cum = 0.0;
    for (size_t i = 0; i < ids.size(); ++i) {
        cum += w[i];
        if (cum > u * sum) return ids[i];
    }
    return ids.back();
}

void require_frequencies_match(std::span<const int64_t> counts, std::span<const double> probs, int64_t n,
                               double sigmas) {
    REQUIRE(counts.size() == probs.size());
    const auto total = static_cast<double>(n);
    for (size_t i = 0; i < probs.size(); ++i) {
        INFO("token " << i << ": p = " << probs[i] << ", drawn " << counts[i] << " of " << n);
        if (probs[i] == 0.0) {
            REQUIRE(counts[i] == 0);
            continue;
        }
        const double freq = static_cast<double>(counts[i]) / total;
        const double se = std::sqrt(probs[i] * (1.0 - probs[i]) / total);
        REQUIRE(std::abs(freq - probs[i]) <= sigmas * se + 1e-12);
    }
}

}  // namespace inlay::test
