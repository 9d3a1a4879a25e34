// Empirical distribution of Sampler draws against float64 references computed here.
// Each check allows 5 standard errors per token over 200k draws (fixed seeds, so a pass
// is reproducible; a correct sampler fails a given token with probability ~6e-7).
#include <catch2/catch.hpp>

#include <cmath>
#include <numeric>
#include <vector>

#include "sampling/sampler.h"
#include "sampling_reference.h"

using namespace inlay;
using inlay::test::order_desc;
using inlay::test::reference_probs;
using inlay::test::require_frequencies_match;
using inlay::test::softmax64;

namespace {

constexpr int64_t kDraws = 200000;

SamplingParams plain(float temperature, uint64_t seed) {
    SamplingParams p;
    p.temperature = temperature;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.seed = seed;
    return p;
}

std::vector<int64_t> draw_counts(const SamplingParams& params, const std::vector<float>& logits,
                                 int64_t n = kDraws) {
    Sampler s(params, static_cast<int32_t>(logits.size()));
    std::vector<int64_t> counts(logits.size(), 0);
    for (int64_t i = 0; i < n; ++i) ++counts[static_cast<size_t>(s.sample(logits, {}))];
    return counts;
}

// Ten logits with distinct, well-separated probabilities and one NaN (never drawn).
const std::vector<float> kLogits{1.0f, 2.5f, -0.5f, 0.2f, 3.0f, NAN, 1.7f, -2.0f, 0.9f, 2.2f, -1.0f};

}  // namespace

TEST_CASE("temperature 1, everything else off: frequencies match softmax", "[sampler][distribution]") {
    const auto counts = draw_counts(plain(1.0f, 11), kLogits);
    require_frequencies_match(counts, softmax64(kLogits, 1.0), kDraws);
}

TEST_CASE("temperature 0.5 matches softmax(l / 0.5); 2.0 matches softmax(l / 2)", "[sampler][distribution]") {
    require_frequencies_match(draw_counts(plain(0.5f, 12), kLogits), softmax64(kLogits, 0.5), kDraws);
    require_frequencies_match(draw_counts(plain(2.0f, 13), kLogits), softmax64(kLogits, 2.0), kDraws);
}

TEST_CASE("top_k: only the k largest are drawn, in softmax proportion", "[sampler][distribution]") {
    for (const int32_t k : {1, 3, 6}) {
        SamplingParams p = plain(1.0f, 20 + static_cast<uint64_t>(k));
        p.top_k = k;
        const std::vector<int32_t> order = order_desc(kLogits);
        std::vector<float> kept(kLogits.size(), NAN);
        for (size_t i = 0; i < static_cast<size_t>(k); ++i) kept[static_cast<size_t>(order[i])] = kLogits[static_cast<size_t>(order[i])];
        INFO("k = " << k);
        require_frequencies_match(draw_counts(p, kLogits), softmax64(kept, 1.0), kDraws);
    }
}

TEST_CASE("top_k keeps the lowest ids among tied logits", "[sampler][distribution]") {
    SamplingParams p = plain(1.0f, 5);
    p.top_k = 2;
    const std::vector<float> ties{1.0f, 2.0f, 1.0f, 2.0f, 2.0f};
    const auto counts = draw_counts(p, ties, 20000);
    REQUIRE(counts[1] > 0);
    REQUIRE(counts[3] > 0);
    REQUIRE(counts[1] + counts[3] == 20000);
}

TEST_CASE("top_p: only the smallest prefix with mass >= p", "[sampler][distribution]") {
    // Cut halfway between two cumulative masses so the expected prefix is unambiguous,
    // with top_k off (the whole vocabulary) and with top_k on (mass renormalised over k).
    const std::vector<int32_t> order = order_desc(kLogits);
    for (const int32_t top_k : {0, 8}) {
        std::vector<float> base = kLogits;
        if (top_k > 0) {
            for (size_t i = static_cast<size_t>(top_k); i < order.size(); ++i) base[static_cast<size_t>(order[i])] = NAN;
        }
        const std::vector<double> p1 = softmax64(base, 1.0);
        for (const size_t prefix : {size_t{1}, size_t{3}, size_t{5}}) {
            double below = 0.0;
            for (size_t i = 0; i + 1 < prefix; ++i) below += p1[static_cast<size_t>(order[i])];
            const double at = below + p1[static_cast<size_t>(order[prefix - 1])];
            SamplingParams p = plain(1.0f, 30 + prefix);
            p.top_k = top_k;
            p.top_p = static_cast<float>((below + at) / 2.0);
            std::vector<float> kept(kLogits.size(), NAN);
            for (size_t i = 0; i < prefix; ++i) kept[static_cast<size_t>(order[i])] = kLogits[static_cast<size_t>(order[i])];
            INFO("top_k = " << top_k << ", expected prefix " << prefix << ", top_p = " << p.top_p);
            require_frequencies_match(draw_counts(p, kLogits), softmax64(kept, 1.0), kDraws);
        }
    }
}

TEST_CASE("min_p: only tokens with p >= min_p * p_max", "[sampler][distribution]") {
    const std::vector<double> p1 = softmax64(kLogits, 1.0);
    const double p_max = *std::max_element(p1.begin(), p1.end());
    for (const float min_p : {0.05f, 0.3f, 0.9f}) {
        SamplingParams p = plain(1.0f, 40);
        p.min_p = min_p;
        std::vector<float> kept(kLogits.size(), NAN);
        for (size_t i = 0; i < kLogits.size(); ++i) {
            if (p1[i] > 0.0 && p1[i] >= static_cast<double>(min_p) * p_max) kept[i] = kLogits[i];
        }
        INFO("min_p = " << min_p);
        require_frequencies_match(draw_counts(p, kLogits), softmax64(kept, 1.0), kDraws);
    }
}

TEST_CASE("full chain with default params at temperature 0.7", "[sampler][distribution]") {
    SamplingParams p;
    p.temperature = 0.7f;
    p.seed = 77;
    // 3000 logits: a few strong candidates over a long tail, so every stage cuts something.
    std::vector<float> logits(3000);
    for (size_t i = 0; i < logits.size(); ++i) logits[i] = -3.0f + 0.001f * static_cast<float>(i % 997);
    const float heads[] = {4.0f, 3.6f, 3.1f, 2.9f, 2.0f, 1.2f, 0.4f};
    for (size_t i = 0; i < std::size(heads); ++i) logits[i * 401 + 5] = heads[i];
    const std::vector<double> expected = reference_probs(logits, p);
    require_frequencies_match(draw_counts(p, logits), expected, kDraws);
}

TEST_CASE("+inf logits take all of the mass; all -inf falls back to the lowest id", "[sampler][distribution]") {
    const float inf = INFINITY;
    SamplingParams p = plain(1.0f, 50);
    const auto counts = draw_counts(p, {1.0f, inf, 3.0f, inf}, 20000);
    REQUIRE(counts[0] + counts[2] == 0);
    REQUIRE(counts[1] > 9000);
    REQUIRE(counts[3] > 9000);
    for (const int32_t k : {0, 2}) {
        p.top_k = k;
        Sampler s(p, 3);
        REQUIRE(s.sample(std::vector<float>{NAN, -inf, -inf}, {}) == 1);
    }
}
