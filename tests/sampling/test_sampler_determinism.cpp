#include <catch2/catch.hpp>

#include <cmath>
#include <optional>
#include <random>
#include <vector>

#include "core/error.h"
#include "sampling/sampler.h"
#include "sampling_reference.h"
#include "support/random_logits.h"

using namespace inlay;

TEST_CASE("std::mt19937_64 is the engine the standard specifies", "[sampler][determinism]") {
    // [rand.predef]: the 10000th output of a default-constructed mt19937_64.
    std::mt19937_64 engine;
    engine.discard(9999);
    REQUIRE(engine() == 9981545732273789042ull);
}

TEST_CASE("every draw equals the documented algorithm (independent reference)", "[sampler][determinism]") {
    // Random configurations and logits (ties, NaN, +-inf, large and tiny vocabularies),
    // 30 steps each with a growing history; tokens must match the reference exactly.
    std::mt19937 gen(2024);
    auto pick = [&](auto... values) {
        const std::vector<std::common_type_t<decltype(values)...>> v{values...};
        return v[gen() % v.size()];
    };
    int compared = 0;
    for (int config = 0; config < 300; ++config) {
        SamplingParams p;
        p.temperature = pick(0.0f, 0.3f, 0.8f, 1.0f, 1.7f);
        p.top_k = pick(0, 1, 3, 40, 100000);
        p.top_p = pick(1.0f, 0.5f, 0.9f, 0.95f);
        p.min_p = pick(0.0f, 0.05f, 0.2f);
        p.repeat_penalty = pick(1.0f, 1.1f, 1.5f);
        p.frequency_penalty = pick(0.0f, 0.3f);
        p.presence_penalty = pick(0.0f, 0.5f, -0.25f);
        p.penalty_last_n = pick(0, 4, 64, -1);
        p.seed = gen();
        const size_t n_vocab = pick(size_t{1}, size_t{2}, size_t{7}, size_t{100}, size_t{3000});
        const bool coarse = gen() % 2 == 0;  // coarse values make many exact ties

        Sampler sampler(p, static_cast<int32_t>(n_vocab));
        std::mt19937_64 reference_rng(p.seed);
        std::vector<int32_t> history;
        std::vector<float> logits(n_vocab);
        for (int step = 0; step < 30; ++step) {
            test::fill_edge_logits(logits, gen, coarse);
            const std::optional<int32_t> expected = test::reference_sample(logits, history, p, reference_rng);
            if (!expected) {
                REQUIRE_THROWS_AS(sampler.sample(logits, history), Error);
                continue;
            }
            const int32_t got = sampler.sample(logits, history);
            INFO("config " << config << " step " << step << " T=" << p.temperature << " k=" << p.top_k
                           << " p=" << p.top_p << " min_p=" << p.min_p << " vocab=" << n_vocab);
            REQUIRE(got == *expected);
            history.push_back(got);
            ++compared;
        }
    }
    REQUIRE(compared > 8000);
}

TEST_CASE("same seed gives the same sequence, different seeds differ", "[sampler][determinism]") {
    std::vector<float> logits(500);
    for (size_t i = 0; i < logits.size(); ++i) logits[i] = std::sin(static_cast<float>(i)) * 0.5f;
    auto run = [&](uint64_t seed) {
        SamplingParams p;
        p.seed = seed;
        p.top_k = 100;
        p.top_p = 1.0f;
        p.min_p = 0.0f;
        p.repeat_penalty = 1.1f;
        Sampler s(p, static_cast<int32_t>(logits.size()));
        std::vector<int32_t> tokens;
        for (int i = 0; i < 64; ++i) tokens.push_back(s.sample(logits, tokens));
        return tokens;
    };
    REQUIRE(run(1) == run(1));
    REQUIRE(run(0xFFFFFFFFFFFFFFFFull) == run(0xFFFFFFFFFFFFFFFFull));
    REQUIRE(run(1) != run(2));
    REQUIRE(run(0) != run(0xFFFFFFFFFFFFFFFFull));
}

TEST_CASE("sample rejects a logits row of the wrong size", "[sampler]") {
    Sampler s(SamplingParams{}, 4);
    try {
        s.sample(std::vector<float>(3, 0.0f), {});
        FAIL("no throw");
    } catch (const Error& e) {
        REQUIRE(e.status() == INLAY_ERR_INVALID_ARGUMENT);
    }
    REQUIRE_THROWS_AS(Sampler(SamplingParams{}, 0), Error);
}
