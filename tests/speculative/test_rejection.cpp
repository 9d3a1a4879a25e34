// The acceptance rule on distributions written out by hand: the token it yields follows
// the target p for any draft q (chi-square over many draws with fixed seeds), point-mass
// proposals (prompt lookup) included; acceptance is min(1, p/q); draw_token is an inverse
// CDF; top_probability is the softmax maximum.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "speculative/rejection.h"

using namespace inlay;

namespace {

TokenDistribution dist(std::vector<int32_t> ids, std::vector<double> w) {
    double total = 0;
    for (double x : w) total += x;
    for (double& x : w) x /= total;
    return {std::move(ids), std::move(w)};
}

double uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

// Pearson's chi-square of `counts` (over ids 0..n) against p; every p > 0 expects >= 20.
double chi_square(const std::vector<int64_t>& counts, const TokenDistribution& p, int64_t n) {
    double chi2 = 0;
    for (size_t id = 0; id < counts.size(); ++id) {
        const double expected = p.prob(static_cast<int32_t>(id)) * static_cast<double>(n);
        if (expected == 0.0) {
            REQUIRE(counts[id] == 0);  // never a token the target excludes
            continue;
        }
        const double d = static_cast<double>(counts[id]) - expected;
        chi2 += d * d / expected;
    }
    return chi2;
}

}  // namespace

TEST_CASE("speculative sampling yields the target's distribution whatever the draft's", "[speculative][rejection]") {
    // p over 6 tokens (id 4 excluded); drafts: close, far, disjoint in part, uniform.
    const TokenDistribution p = dist({0, 1, 2, 3, 5, 6}, {0.30, 0.05, 0.25, 0.10, 0.20, 0.10});
    const std::vector<TokenDistribution> drafts = {
        dist({0, 1, 2, 3, 5, 6}, {0.28, 0.07, 0.25, 0.10, 0.20, 0.10}),
        dist({0, 1, 2, 3, 5, 6}, {0.02, 0.60, 0.02, 0.30, 0.03, 0.03}),
        dist({1, 4, 6, 7}, {0.4, 0.3, 0.2, 0.1}),
        dist({0, 1, 2, 3, 4, 5, 6, 7}, {1, 1, 1, 1, 1, 1, 1, 1}),
    };
    constexpr int64_t kDraws = 200000;
    // 7 bins (6 degrees of freedom): P(chi2 > 27.9) = 1e-4.
    constexpr double kLimit = 27.9;
    for (size_t k = 0; k < drafts.size(); ++k) {
        INFO("draft " << k);
        const TokenDistribution& q = drafts[k];
        std::mt19937_64 rng(42 + k);
        std::vector<int64_t> counts(8, 0);
        int64_t accepted = 0;
        for (int64_t i = 0; i < kDraws; ++i) {
            const int32_t d = draw_token(q, uniform(rng));
            const double u1 = uniform(rng), u2 = uniform(rng);
            const DraftVerdict v = verify_draft_token(p, &q, d, u1, u2);
            REQUIRE(v.token >= 0);
            if (v.accepted) {
                REQUIRE(v.token == d);
                ++accepted;
            }
            ++counts[static_cast<size_t>(v.token)];
        }
        INFO("chi2 " << chi_square(counts, p, kDraws));
        REQUIRE(chi_square(counts, p, kDraws) < kLimit);
        // The acceptance rate is sum_x min(p(x), q(x)).
        double overlap = 0;
        for (int32_t id = 0; id < 8; ++id) overlap += std::min(p.prob(id), q.prob(id));
        const double rate = static_cast<double>(accepted) / kDraws;
        REQUIRE(std::fabs(rate - overlap) < 5 * std::sqrt(overlap * (1 - overlap) / kDraws) + 1e-9);
    }
}

TEST_CASE("a point-mass proposal is kept with probability p(d) and replaced from p without d",
          "[speculative][rejection]") {
    const TokenDistribution p = dist({0, 1, 2, 3}, {0.5, 0.2, 0.2, 0.1});
    for (const int32_t d : {0, 3, 7}) {  // likely, unlikely, impossible
        INFO("proposal " << d);
        std::mt19937_64 rng(7 + static_cast<uint64_t>(d));
        std::vector<int64_t> counts(8, 0);
        int64_t accepted = 0;
        constexpr int64_t kDraws = 100000;
        for (int64_t i = 0; i < kDraws; ++i) {
            const double u1 = uniform(rng), u2 = uniform(rng);
            const DraftVerdict v = verify_draft_token(p, nullptr, d, u1, u2);
            accepted += v.accepted;
            if (!v.accepted) REQUIRE(v.token != d);
            ++counts[static_cast<size_t>(v.token)];
        }
        REQUIRE(chi_square(counts, p, kDraws) < 21.1);  // 3 degrees of freedom at most, 1e-4
        const double pd = p.prob(d);
        REQUIRE(std::fabs(static_cast<double>(accepted) / kDraws - pd) < 5 * std::sqrt(pd * (1 - pd) / kDraws) + 1e-9);
    }
    // Exact cases: u below p(d) keeps it, above replaces it.
    REQUIRE(verify_draft_token(p, nullptr, 0, 0.49, 0.0).accepted);
    REQUIRE_FALSE(verify_draft_token(p, nullptr, 0, 0.51, 0.0).accepted);
    // The residual p without token 0 is {1: 0.4, 2: 0.4, 3: 0.2}: u = 0.5 falls in token 2.
    REQUIRE(verify_draft_token(p, nullptr, 0, 0.9, 0.5).token == 2);
}

TEST_CASE("draw_token is the inverse CDF; top_probability is the softmax maximum", "[speculative][rejection]") {
    const TokenDistribution d = dist({2, 5, 9}, {0.25, 0.5, 0.25});
    REQUIRE(draw_token(d, 0.0) == 2);
    REQUIRE(draw_token(d, 0.2499) == 2);
    REQUIRE(draw_token(d, 0.2501) == 5);
    REQUIRE(draw_token(d, 0.7501) == 9);
    REQUIRE(draw_token(d, 0.999999) == 9);
    REQUIRE(d.prob(5) == 0.5);
    REQUIRE(d.prob(4) == 0.0);

    const float nan = std::numeric_limits<float>::quiet_NaN();
    const std::vector<float> logits = {0.0f, std::log(3.0f), nan, -std::numeric_limits<float>::infinity()};
    REQUIRE(top_probability(logits) == Approx(0.75).epsilon(1e-6));
    const std::vector<float> all_nan = {nan, nan};
    REQUIRE(top_probability(all_nan) == 0.0);
    const float inf = std::numeric_limits<float>::infinity();
    REQUIRE(top_probability(std::vector<float>{1.0f, inf, 2.0f, inf}) == 0.5);
    REQUIRE(top_probability(std::vector<float>{-inf, -inf, nan}) == 0.5);

    // Against a float64 softmax on vocabularies of every length around the vectorised
    // lanes, with NaN, -inf and logits far below the maximum mixed in.
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 4.0f);
    for (const size_t n : {size_t{1}, size_t{15}, size_t{16}, size_t{17}, size_t{33}, size_t{32000}}) {
        std::vector<float> v(n);
        for (float& x : v) x = normal(rng);
        if (n > 16) {
            v[3] = nan;
            v[n - 1] = -inf;
            v[n / 2] = -200.0f;
        }
        float max_logit = -inf;
        for (const float x : v)
            if (!std::isnan(x)) max_logit = std::max(max_logit, x);
        double sum = 0.0;
        for (const float x : v)
            if (!std::isnan(x)) sum += std::exp(static_cast<double>(x) - static_cast<double>(max_logit));
        INFO("vocabulary of " << n);
        REQUIRE(top_probability(v) == Approx(1.0 / sum).epsilon(1e-5));
    }
}

TEST_CASE("acceptance_chance is the overlap of p and q; a distribution's top probability", "[speculative][rejection]") {
    const TokenDistribution p = dist({0, 1, 3}, {0.5, 0.3, 0.2});
    const TokenDistribution q = dist({0, 2, 3}, {0.8, 0.1, 0.1});
    // min(0.5, 0.8) + min(0, 0.1) + min(0.2, 0.1)
    REQUIRE(acceptance_chance(p, &q, 0) == Approx(0.6));
    REQUIRE(acceptance_chance(p, &p, 1) == Approx(1.0));
    REQUIRE(acceptance_chance(p, nullptr, 1) == Approx(0.3));  // a point mass on the proposal
    REQUIRE(acceptance_chance(p, nullptr, 2) == 0.0);
    REQUIRE(top_probability(q) == 0.8);
    REQUIRE(top_probability(TokenDistribution{}) == 0.0);
    // It is what the rule keeps on average: draws from q, kept or not, with fixed seeds.
    std::mt19937_64 rng(11);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    constexpr int kDraws = 200000;
    int kept = 0;
    for (int i = 0; i < kDraws; ++i) {
        const int32_t d = draw_token(q, u(rng));
        kept += verify_draft_token(p, &q, d, u(rng), u(rng)).accepted ? 1 : 0;
    }
    REQUIRE(std::fabs(static_cast<double>(kept) / kDraws - 0.6) < 0.005);
}
