#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <string>

#include "core/error.h"
#include "sampling/sampler.h"
#include "sampling/sampling_params.h"

using namespace inlay;

namespace {

void require_rejected(const std::function<void(SamplingParams&)>& change, const std::string& field) {
    SamplingParams p;
    change(p);
    INFO("field " << field);
    try {
        validate(p);
        FAIL("accepted");
    } catch (const Error& e) {
        REQUIRE(e.status() == INLAY_ERR_INVALID_ARGUMENT);
        REQUIRE(std::string(e.what()).find(field) != std::string::npos);
    }
    REQUIRE_THROWS_AS(Sampler(p, 10), Error);
}

}  // namespace

TEST_CASE("validate accepts the defaults and documented edge values", "[params]") {
    SamplingParams p;
    REQUIRE_NOTHROW(validate(p));
    p.temperature = -1.0f;  // greedy
    p.top_k = -5;           // off
    p.top_p = 1.0f;         // off
    p.min_p = 0.0f;         // off
    p.penalty_last_n = -1;  // whole history
    p.frequency_penalty = -0.5f;
    p.presence_penalty = -0.5f;
    REQUIRE_NOTHROW(validate(p));
    p.min_p = -0.1f;  // <= 0 is off
    p.top_p = 1e-6f;
    p.repeat_penalty = 1e-3f;
    REQUIRE_NOTHROW(validate(p));
}

TEST_CASE("validate names the offending field", "[params]") {
    require_rejected([](SamplingParams& p) { p.temperature = NAN; }, "temperature");
    require_rejected([](SamplingParams& p) { p.temperature = INFINITY; }, "temperature");
    require_rejected([](SamplingParams& p) { p.top_p = NAN; }, "top_p");
    require_rejected([](SamplingParams& p) { p.top_p = 0.0f; }, "top_p");
    require_rejected([](SamplingParams& p) { p.top_p = 1.5f; }, "top_p");
    require_rejected([](SamplingParams& p) { p.min_p = NAN; }, "min_p");
    require_rejected([](SamplingParams& p) { p.min_p = 1.01f; }, "min_p");
    require_rejected([](SamplingParams& p) { p.repeat_penalty = 0.0f; }, "repeat_penalty");
    require_rejected([](SamplingParams& p) { p.repeat_penalty = -1.0f; }, "repeat_penalty");
    require_rejected([](SamplingParams& p) { p.repeat_penalty = NAN; }, "repeat_penalty");
    require_rejected([](SamplingParams& p) { p.frequency_penalty = NAN; }, "frequency_penalty");
    require_rejected([](SamplingParams& p) { p.presence_penalty = -INFINITY; }, "presence_penalty");
    require_rejected([](SamplingParams& p) { p.penalty_last_n = -2; }, "penalty_last_n");
}
