// The Sampler's description of a sample for a backend (Backend::sample_rows): which
// chains a backend takes, the penalised tokens it applies, and the one random number each
// non-greedy sample consumes, drawn on the host so that the seed fixes the tokens.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "sampling/penalties.h"
#include "sampling/sample_chain.h"
#include "sampling/sampler.h"

using namespace inlay;

TEST_CASE("penalty entries: the window's distinct tokens with counts, in first-occurrence order", "[penalties][device]") {
    SamplingParams p;
    p.repeat_penalty = 1.3f;
    p.penalty_last_n = 6;
    const std::vector<int32_t> history{5, 0, 0, 1, 2, 2, 2, 4};  // window {0, 1, 2, 2, 2, 4}
    std::vector<int32_t> counts;
    std::vector<PenaltyEntry> out{{9, 9}};  // entries are appended
    append_penalty_entries(history, p, 6, counts, out);
    REQUIRE(out.size() == 5);
    const int32_t want[][2] = {{9, 9}, {0, 1}, {1, 1}, {2, 3}, {4, 1}};
    for (size_t i = 0; i < out.size(); ++i) {
        REQUIRE(out[i].token == want[i][0]);
        REQUIRE(out[i].count == want[i][1]);
    }
    REQUIRE(counts == std::vector<int32_t>(6, 0));  // scratch left clean

    // The entries applied one by one give apply_penalties' logits.
    p.frequency_penalty = 0.25f;
    p.presence_penalty = 0.5f;
    std::vector<float> applied{1.0f, -1.0f, 2.0f, 0.5f, 0.0f, 3.0f}, by_entry = applied;
    apply_penalties(applied, history, p, counts);
    out.clear();
    append_penalty_entries(history, p, 6, counts, out);
    for (const PenaltyEntry& e : out) {
        float& v = by_entry[static_cast<size_t>(e.token)];
        v = penalized_logit(v, e.count, p.repeat_penalty, p.frequency_penalty, p.presence_penalty);
    }
    REQUIRE(by_entry == applied);

    // No penalty active: nothing; a window token outside the vocabulary: the sampler's error.
    out.clear();
    append_penalty_entries(history, SamplingParams{}, 6, counts, out);
    REQUIRE(out.empty());
    try {
        append_penalty_entries(history, p, 4, counts, out);  // the window holds token 4
        FAIL("a token outside the vocabulary was accepted");
    } catch (const Error& e) {
        REQUIRE(e.status() == INLAY_ERR_INVALID_TOKEN);
    }
}

TEST_CASE("penalized_logit rounds each operation (no fused multiply-add)", "[penalties][device]") {
    // 3 * 0.1f rounds to 0.3f exactly, so the unfused sum with -0.3f is 0; fused, the
    // product's low bits would survive as -7.45e-9.
    REQUIRE(penalized_logit(0.0f, 3, 1.0f, 0.1f, -0.3f) == 0.0f);
    REQUIRE(penalized_logit(-2.0f, 1, 2.0f, 0.0f, 0.0f) == -4.0f);
    REQUIRE(penalized_logit(2.0f, 1, 2.0f, 0.0f, 0.0f) == 1.0f);
}

TEST_CASE("device_samplable: greedy, or top_k in [1, min(1024, n_vocab - 1)]", "[sampler][device]") {
    auto samplable = [](float temperature, int32_t top_k, int32_t n_vocab) {
        SamplingParams p;
        p.temperature = temperature;
        p.top_k = top_k;
        return Sampler(p, n_vocab).device_samplable();
    };
    REQUIRE(samplable(0.0f, 0, 100));      // greedy, whatever top_k says
    REQUIRE(samplable(-1.0f, 5000, 100));
    REQUIRE(samplable(0.8f, 40, 32000));
    REQUIRE(samplable(0.8f, 1, 2));
    REQUIRE(samplable(0.8f, kMaxSampleTopK, 32000));
    REQUIRE_FALSE(samplable(0.8f, 0, 32000));  // top_k off: the whole vocabulary
    REQUIRE_FALSE(samplable(0.8f, kMaxSampleTopK + 1, 32000));
    REQUIRE_FALSE(samplable(0.8f, 100, 100));  // as much as the vocabulary is off
    SamplingParams p;
    p.top_k = 0;
    REQUIRE_THROWS_AS(Sampler(p, 100).device_row(0, 0), Error);
}

TEST_CASE("device_row consumes sample()'s random number; the chain with it draws sample()'s token",
          "[sampler][device]") {
    std::vector<float> logits(300);
    for (size_t i = 0; i < logits.size(); ++i) logits[i] = std::sin(static_cast<float>(i) * 0.7f) * 3.0f;
    SamplingParams p;
    p.seed = 1234;
    p.temperature = 0.9f;
    p.top_k = 50;
    p.repeat_penalty = 1.2f;
    Sampler host(p, 300), device(p, 300);
    std::vector<int32_t> history{4, 5, 6};
    SampleChain chain;
    std::vector<int32_t> counts;
    for (int step = 0; step < 200; ++step) {
        const int32_t want = host.sample(logits, history);
        std::vector<PenaltyEntry> entries;
        device.device_penalties(history, entries);
        const RowSampling row = device.device_row(0, static_cast<int32_t>(entries.size()));
        REQUIRE(row.u >= 0.0);
        REQUIRE(row.u < 1.0);
        REQUIRE(row.inv_temperature == 1.0 / static_cast<double>(p.temperature));
        std::vector<float> penalised = logits;
        for (const PenaltyEntry& e : entries) {
            float& v = penalised[static_cast<size_t>(e.token)];
            v = penalized_logit(v, e.count, row.repeat_penalty, row.frequency_penalty, row.presence_penalty);
        }
        REQUIRE(device.from_device(chain.pick(penalised, p, row.u)) == want);
        history.push_back(want);
    }
    // Greedy rows consume nothing: the next non-greedy draw is unchanged.
    SamplingParams g = p;
    g.temperature = 0.0f;
    Sampler greedy(g, 300);
    const RowSampling row = greedy.device_row(0, 0);
    REQUIRE(row.temperature == 0.0f);
    REQUIRE(greedy.uniform() == Sampler(g, 300).uniform());
    REQUIRE_THROWS_AS(device.from_device(-1), Error);   // every logit NaN
    REQUIRE_THROWS_AS(device.from_device(300), Error);  // outside the vocabulary
}
