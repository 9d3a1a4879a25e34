// Timing of Sampler::sample (hidden: run with `test_sampling "[.bench]"`). Prints
// CPU microseconds per sample; asserts nothing about speed, but checks that the draws it
// timed are the documented algorithm's.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "sampling/sampler.h"
#include "sampling_reference.h"

using namespace inlay;

namespace {

std::string n_vocab_name(size_t n) { return "n_vocab " + std::to_string(n); }

// The first draws checked against the independent reference of the sampling chain
// (sampling_reference.h, float64, sort everything): enough to show that what was timed
// is the documented sampler, few enough that the reference does not dominate the run.
constexpr int kChecked = 12;

double micros_per_sample(const SamplingParams& params, const std::vector<float>& logits, int n) {
    Sampler s(params, static_cast<int32_t>(logits.size()));
    std::vector<int32_t> history(200);
    for (size_t i = 0; i < history.size(); ++i) history[i] = static_cast<int32_t>((i * 7919) % logits.size());
    std::vector<int32_t> drawn;
    drawn.reserve(static_cast<size_t>(n) + 5);
    for (int i = 0; i < 5; ++i) drawn.push_back(s.sample(logits, history));  // warm-up (allocations)
    // Process CPU time, not wall time: the build machines are shared and often loaded.
    const std::clock_t start = std::clock();
    for (int i = 0; i < n; ++i) drawn.push_back(s.sample(logits, history));
    const std::clock_t stop = std::clock();
    // The same seed through the reference gives the same draws, in order.
    std::mt19937_64 rng(params.seed);
    for (size_t i = 0; i < std::min(drawn.size(), static_cast<size_t>(kChecked)); ++i) {
        INFO("draw " << i << " of " << n_vocab_name(logits.size()));
        const std::optional<int32_t> want = test::reference_sample(logits, history, params, rng);
        REQUIRE(want.has_value());
        REQUIRE(drawn[i] == *want);
    }
    return 1e6 * static_cast<double>(stop - start) / CLOCKS_PER_SEC / n;
}

}  // namespace

TEST_CASE("sampler timing", "[.bench]") {
    for (const size_t n_vocab : {size_t{32000}, size_t{151936}}) {
        // LLM-like logits: a broad normal body plus a handful of strong candidates.
        std::mt19937 gen(1);
        std::normal_distribution<float> body(0.0f, 2.0f);
        std::vector<float> logits(n_vocab);
        for (float& l : logits) l = body(gen);
        for (int i = 0; i < 8; ++i) logits[gen() % n_vocab] = 14.0f - static_cast<float>(i);

        SamplingParams defaults;
        SamplingParams greedy;
        greedy.temperature = 0.0f;
        SamplingParams penalised;
        penalised.repeat_penalty = 1.1f;
        SamplingParams no_top_k;
        no_top_k.top_k = 0;
        SamplingParams no_top_k_min_p;
        no_top_k_min_p.top_k = 0;
        no_top_k_min_p.min_p = 0.0f;
        SamplingParams all_off;
        all_off.top_k = 0;
        all_off.top_p = 1.0f;
        all_off.min_p = 0.0f;
        std::printf("n_vocab %zu: defaults %.1f us, greedy %.1f us, defaults+repeat_penalty %.1f us, "
                    "top_k off %.1f us, top_k+min_p off %.1f us, all off %.1f us\n",
                    n_vocab, micros_per_sample(defaults, logits, 2000), micros_per_sample(greedy, logits, 2000),
                    micros_per_sample(penalised, logits, 2000), micros_per_sample(no_top_k, logits, 200),
                    micros_per_sample(no_top_k_min_p, logits, 50), micros_per_sample(all_off, logits, 50));
    }
}
