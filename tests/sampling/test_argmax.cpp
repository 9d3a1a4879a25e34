#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "core/error.h"
#include "core/argmax.h"
#include "sampling/sampler.h"

using namespace inlay;

namespace {

// Reference: a plain scan written for clarity, not speed.
int32_t argmax_reference(const std::vector<float>& v) {
    int32_t best = -1;
    for (size_t i = 0; i < v.size(); ++i) {
        if (std::isnan(v[i])) continue;
        if (best < 0 || v[i] > v[static_cast<size_t>(best)]) best = static_cast<int32_t>(i);
    }
    return best;
}

}  // namespace

TEST_CASE("argmax: largest value, lowest index on ties", "[argmax]") {
    REQUIRE(argmax(std::vector<float>{1.0f, 3.0f, 2.0f}) == 1);
    REQUIRE(argmax(std::vector<float>{5.0f, 1.0f, 5.0f, 5.0f}) == 0);
    REQUIRE(argmax(std::vector<float>{-2.0f, 0.0f, -0.0f, 0.0f}) == 1);  // -0 == +0: a tie
    REQUIRE(argmax(std::vector<float>{7.0f}) == 0);
}

TEST_CASE("argmax: NaN never wins, -inf can, empty and all-NaN give -1", "[argmax]") {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    REQUIRE(argmax(std::vector<float>{nan, 1.0f, nan, 2.0f, nan}) == 3);
    REQUIRE(argmax(std::vector<float>{nan, -inf, -inf}) == 1);
    REQUIRE(argmax(std::vector<float>{1.0f, inf, nan, inf}) == 1);
    REQUIRE(argmax(std::vector<float>{nan, nan}) == -1);
    REQUIRE(argmax(std::vector<float>{}) == -1);
}

TEST_CASE("argmax: matches a plain scan on random rows with ties and NaN", "[argmax]") {
    std::mt19937 rng(7);
    for (int round = 0; round < 500; ++round) {
        std::vector<float> v(1 + rng() % 300);
        for (float& x : v) {
            const uint32_t r = rng() % 100;
            x = r < 3 ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(static_cast<int>(rng() % 20) - 10);
        }
        REQUIRE(argmax(v) == argmax_reference(v));
    }
}

TEST_CASE("greedy sampling is argmax", "[argmax][sampler]") {
    SamplingParams p;
    p.temperature = 0.0f;
    std::mt19937 rng(3);
    std::vector<float> logits(1000);
    for (int round = 0; round < 50; ++round) {
        for (float& x : logits) x = static_cast<float>(rng() % 64) * 0.125f;
        logits[rng() % logits.size()] = std::numeric_limits<float>::quiet_NaN();
        p.temperature = round % 2 == 0 ? 0.0f : -1.0f;  // negative temperature is greedy too
        Sampler s(p, static_cast<int32_t>(logits.size()));
        REQUIRE(s.sample(logits, {}) == argmax_reference(logits));
    }
    std::vector<float> all_nan(4, std::numeric_limits<float>::quiet_NaN());
    Sampler s(p, 4);
    REQUIRE_THROWS_AS(s.sample(all_nan, {}), Error);
}

TEST_CASE("plain_argmax: greedy without penalties; from_argmax is sample() on those logits", "[argmax][sampler]") {
    SamplingParams p;
    p.temperature = 0.0f;
    p.repeat_penalty = 1.0f;
    REQUIRE(Sampler(p, 8).plain_argmax());
    p.repeat_penalty = 1.1f;
    REQUIRE_FALSE(Sampler(p, 8).plain_argmax());  // greedy, but after the penalties
    p.penalty_last_n = 0;
    REQUIRE(Sampler(p, 8).plain_argmax());  // penalties over no history: none
    p.temperature = 0.5f;
    REQUIRE_FALSE(Sampler(p, 8).plain_argmax());

    p.temperature = 0.0f;
    Sampler s(p, 4);
    const std::vector<float> logits{0.5f, 2.0f, 2.0f, -1.0f};
    REQUIRE(s.from_argmax(argmax(logits)) == s.sample(logits, {}));
    // -1 (every logit NaN) is sample()'s error for all-NaN logits, with its status.
    const std::vector<float> all_nan(4, std::numeric_limits<float>::quiet_NaN());
    inlay_status from_sample = INLAY_OK, from_ids = INLAY_OK;
    try {
        (void)s.sample(all_nan, {});
    } catch (const Error& e) {
        from_sample = e.status();
    }
    try {
        (void)s.from_argmax(-1);
    } catch (const Error& e) {
        from_ids = e.status();
    }
    REQUIRE(from_sample != INLAY_OK);
    REQUIRE(from_ids == from_sample);
    REQUIRE_THROWS_AS(s.from_argmax(4), Error);  // outside the vocabulary
    p.temperature = 1.0f;
    REQUIRE_THROWS_AS(Sampler(p, 4).from_argmax(1), Error);  // not a plain argmax
}
