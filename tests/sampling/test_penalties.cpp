#include <catch2/catch.hpp>

#include <vector>

#include "core/error.h"
#include "sampling/penalties.h"
#include "sampling/sampler.h"

using namespace inlay;

TEST_CASE("penalties: exact logits for a hand-computed case, window respected", "[penalties]") {
    SamplingParams p;
    p.repeat_penalty = 2.0f;
    p.frequency_penalty = 0.25f;
    p.presence_penalty = 0.5f;
    p.penalty_last_n = 6;
    std::vector<float> logits{1.0f, -1.0f, 2.0f, 0.5f, 0.0f, 3.0f};
    // The window is the last 6: {0, 1, 2, 2, 2, 4}; token 5 is older and token 3 absent.
    const std::vector<int32_t> history{5, 0, 0, 1, 2, 2, 2, 4};
    std::vector<int32_t> counts;
    apply_penalties(logits, history, p, counts);
    // By hand: t0 1/2 - (1*0.25 + 0.5); t1 -1*2 - 0.75; t2 2/2 - (3*0.25 + 0.5); t4 0*2 - 0.75.
    REQUIRE(logits == std::vector<float>{-0.25f, -2.75f, -0.25f, 0.5f, -0.75f, 3.0f});
    REQUIRE(counts == std::vector<int32_t>(6, 0));  // scratch left clean

    SECTION("-1 is the whole history") {
        std::vector<float> all{1.0f, -1.0f, 2.0f, 0.5f, 0.0f, 3.0f};
        p.penalty_last_n = -1;
        apply_penalties(all, history, p, counts);
        // t0 now appears twice: 1/2 - (2*0.25 + 0.5); t5: 3/2 - 0.75.
        REQUIRE(all == std::vector<float>{-0.5f, -2.75f, -0.25f, 0.5f, -0.75f, 0.75f});
    }
    SECTION("a window longer than the history is the whole history") {
        std::vector<float> all{1.0f, -1.0f, 2.0f, 0.5f, 0.0f, 3.0f};
        p.penalty_last_n = 1000;
        apply_penalties(all, history, p, counts);
        REQUIRE(all == std::vector<float>{-0.5f, -2.75f, -0.25f, 0.5f, -0.75f, 0.75f});
    }
    SECTION("0 turns penalties off") {
        std::vector<float> all{1.0f, -1.0f, 2.0f, 0.5f, 0.0f, 3.0f};
        p.penalty_last_n = 0;
        apply_penalties(all, history, p, counts);
        REQUIRE(all == std::vector<float>{1.0f, -1.0f, 2.0f, 0.5f, 0.0f, 3.0f});
    }
}

TEST_CASE("penalties: negative frequency/presence raise logits (as llama.cpp allows)", "[penalties]") {
    SamplingParams p;
    p.frequency_penalty = -1.0f;
    p.presence_penalty = -0.5f;
    std::vector<float> logits{0.0f, 1.0f};
    const std::vector<int32_t> history{1, 1, 1};
    std::vector<int32_t> counts;
    apply_penalties(logits, history, p, counts);
    REQUIRE(logits == std::vector<float>{0.0f, 4.5f});
}

TEST_CASE("penalties: invalid tokens in the window are rejected, older ones ignored", "[penalties]") {
    SamplingParams p;
    p.presence_penalty = 1.0f;
    p.penalty_last_n = 2;
    std::vector<float> logits{0.0f, 0.0f, 0.0f};
    std::vector<int32_t> counts;
    try {
        apply_penalties(logits, std::vector<int32_t>{0, 3}, p, counts);
        FAIL("no throw");
    } catch (const Error& e) {
        REQUIRE(e.status() == INLAY_ERR_INVALID_TOKEN);
    }
    REQUIRE_THROWS_AS(apply_penalties(logits, std::vector<int32_t>{-1, 0}, p, counts), Error);
    REQUIRE(logits == std::vector<float>{0.0f, 0.0f, 0.0f});  // unchanged on failure
    apply_penalties(logits, std::vector<int32_t>{99, 1, 2}, p, counts);  // 99 is outside the window
    REQUIRE(logits == std::vector<float>{0.0f, -1.0f, -1.0f});
}

TEST_CASE("penalties: the sampler applies them inside the window only", "[penalties][sampler]") {
    SamplingParams p;
    p.temperature = 0.0f;
    p.presence_penalty = 2.0f;
    const std::vector<float> logits{3.0f, 2.0f};
    const std::vector<int32_t> history{1, 0};
    auto pick = [&](int32_t last_n) {
        p.penalty_last_n = last_n;
        Sampler s(p, 2);
        return s.sample(logits, history);
    };
    REQUIRE(pick(0) == 0);   // off: {3, 2}
    REQUIRE(pick(1) == 1);   // window {0}: {1, 2}
    REQUIRE(pick(2) == 0);   // window {1, 0}: {1, 0}
    REQUIRE(pick(-1) == 0);
    REQUIRE(logits == std::vector<float>{3.0f, 2.0f});  // the caller's logits are untouched
}
