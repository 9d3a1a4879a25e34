// DraftPolicy and StepCostModel: the expected-gain formula, growth on acceptance, back-off
// to sparse probes on rejection and none when costs rule speculation out, the minimum,
// the veto; the cost model's fit on passes of known cost and its indifference to
// a slow pass now and then.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "speculative/draft_policy.h"
#include "speculative/step_cost_model.h"

using namespace inlay;

TEST_CASE("gain: expected tokens per cost", "[speculative][policy]") {
    const SpeculationCosts free_verify = SpeculationCosts::linear(0.0, 0.0);
    REQUIRE(DraftPolicy::gain(0.5, 0, free_verify) == 1.0);
    REQUIRE(DraftPolicy::gain(0.5, 2, free_verify) == Approx(1.75));  // 1 + 0.5 + 0.25
    REQUIRE(DraftPolicy::gain(1.0, 3, free_verify) == Approx(4.0));
    const SpeculationCosts costly = SpeculationCosts::linear(0.1, 0.4);
    REQUIRE(DraftPolicy::gain(0.9, 4, costly) == Approx((1 - std::pow(0.9, 5)) / 0.1 / 3.0));
}

TEST_CASE("the policy grows k with acceptance and backs off to sparse probes on rejection", "[speculative][policy]") {
    const SpeculationCosts costs = SpeculationCosts::linear(0.05, 0.1);
    DraftPolicy p(8);
    for (int i = 0; i < 4; ++i) REQUIRE(p.next(costs, 100) == 0);  // plain steps measured first
    for (int i = 0; i < 20; ++i) {
        const int32_t k = p.next(costs, 100);
        REQUIRE(k >= 1);
        p.record(k, k);  // every proposal kept
    }
    REQUIRE(p.acceptance() > 0.95);
    REQUIRE(p.next(costs, 100) == 8);
    REQUIRE(p.next(costs, 3) == 3);  // bounded by the room the step has
    REQUIRE(p.next(costs, 0) == 0);

    // Everything rejected: speculation stops, then only probes of one token remain, and
    // they thin out (intervals 4, 8, 16, 32, 64, 64, ...).
    DraftPolicy q(8);
    int64_t proposals = 0, probes = 0;
    for (int step = 0; step < 1000; ++step) {
        const int32_t k = q.next(costs, 100);
        if (k > 0) {
            proposals += k;
            probes += step > 20;
            q.record(k, 0);
        }
    }
    REQUIRE(q.acceptance() < 0.05);
    INFO("proposals " << proposals << ", late probes " << probes);
    REQUIRE(proposals < 60);
    REQUIRE(probes >= 10);  // speculation is retried now and then
    REQUIRE(probes <= 20);
}

TEST_CASE("no probes when costs rule speculation out; n_min forces proposals", "[speculative][policy]") {
    const SpeculationCosts hopeless = SpeculationCosts::linear(0.9, 0.9);  // a proposal costs more than a decode step
    DraftPolicy p(8);
    for (int step = 0; step < 500; ++step) REQUIRE(p.next(hopeless, 100) == 0);
    DraftPolicy forced(8, 3);
    for (int i = 0; i < 4; ++i) REQUIRE(forced.next(hopeless, 100) == 3);  // the warm-up too
    REQUIRE(forced.next(hopeless, 100) == 3);
    REQUIRE(forced.next(hopeless, 2) == 2);
    forced.record(3, 3);
    REQUIRE(forced.next(SpeculationCosts::linear(0.0, 0.0), 100) == 8);
}

TEST_CASE("the step cost model fits fixed and per-token cost", "[speculative][cost]") {
    StepCostModel m(0.1);
    REQUIRE_FALSE(m.fitted());
    REQUIRE(m.decode_seconds() == 0.0);
    REQUIRE(m.added_ratio(1, 1) == Approx(0.1));
    // Passes of 1, 3 and 8 tokens costing 2 ms + 0.5 ms per token.
    for (int i = 0; i < 30; ++i)
        for (const int64_t n : {1, 3, 8}) m.add(n, 0.002 + 0.0005 * static_cast<double>(n));
    REQUIRE(m.fitted());
    REQUIRE(m.decode_seconds() == Approx(0.0025).epsilon(1e-6));
    REQUIRE(m.added_ratio(1, 1) == Approx(0.2).epsilon(1e-6));  // 0.5 / 2.5
    REQUIRE(m.added_ratio(1, 4) == Approx(0.8).epsilon(1e-6));
    // In a batch of 16 tokens a token costs 0.5 of the 10 ms pass's 0.625 ms per token.
    REQUIRE(m.added_ratio(16, 1) == Approx(16 * 0.0005 / (0.002 + 16 * 0.0005)).epsilon(1e-6));
    REQUIRE(m.pass_seconds(100) == Approx(0.052).epsilon(1e-6));  // past the sizes timed: the line
    // Only decode steps: not fitted, priced with the fallback.
    StepCostModel d(0.1);
    for (int i = 0; i < 10; ++i) d.add(1, 0.003);
    REQUIRE_FALSE(d.fitted());
    REQUIRE(d.decode_seconds() == Approx(0.003));
    REQUIRE(d.added_ratio(1, 2) == Approx(0.2));
    // Nonsense is ignored.
    d.add(0, 1.0);
    d.add(1, -1.0);
    REQUIRE(d.decode_seconds() == Approx(0.003));
}

TEST_CASE("the step cost model prices small passes by the sizes it has timed", "[speculative][cost]") {
    // As on a CPU: the second token costs half a decode step, the sixteenth far less. A
    // line through these points would price one more token at ~0.2 decode steps.
    StepCostModel m(0.1);
    for (int i = 0; i < 20; ++i) {
        m.add(1, 0.002);
        m.add(2, 0.003);
        m.add(6, 0.004);
        m.add(16, 0.006);
    }
    REQUIRE(m.decode_seconds() == Approx(0.002));
    REQUIRE(m.pass_seconds(2) == Approx(0.003));
    REQUIRE(m.pass_seconds(4) == Approx(0.0035));  // between 2 and 6
    REQUIRE(m.added_ratio(1, 1) == Approx(0.5));
    REQUIRE(m.added_ratio(1, 3) == Approx(0.75));
    REQUIRE(m.added_ratio(2, 4) == Approx((0.004 - 0.003) / 0.0015));  // batch of 2: per sequence 1.5 ms
    REQUIRE(m.pass_seconds(20) > m.pass_seconds(16));  // beyond: the fitted slope
    // The policy sees it: at 50% acceptance one proposal yields 1.5 tokens for 1.5 steps.
    SpeculationCosts costs;
    costs.verify.resize(9);
    for (size_t k = 1; k < costs.verify.size(); ++k) costs.verify[k] = m.added_ratio(1, static_cast<int64_t>(k));
    REQUIRE(DraftPolicy::gain(0.5, 1, costs) == Approx(1.0));
    REQUIRE(costs.verify_cost(12) == Approx(costs.verify[8] * 1.5));  // past the table: its last cost per token
    // A size timed again moves towards its new cost (the load changed).
    for (int i = 0; i < 10; ++i) m.add(2, 0.0025);
    REQUIRE(m.pass_seconds(2) < 0.0026);
}

TEST_CASE("the fastest recent pass of a size is what it costs undisturbed", "[speculative][cost]") {
    // A draft's first passes of a reply, all cold, then one warm: the median says cold,
    // the fastest says warm; sizes not timed fall back to pass_seconds.
    StepCostModel m(0.1);
    for (double t : {0.0019, 0.0011, 0.0011, 0.00057}) m.add(1, t);
    REQUIRE(m.pass_seconds(1) == Approx(0.0011));
    REQUIRE(m.fastest_pass_seconds(1) == Approx(0.00057));
    m.add(1, 0.00048);
    REQUIRE(m.fastest_pass_seconds(1) == Approx(0.00048));
    for (int i = 0; i < StepCostModel::kRecent; ++i) m.add(1, 0.0009);  // the fast one left the window
    REQUIRE(m.fastest_pass_seconds(1) == Approx(0.0009));
    m.add(8, 0.004);
    REQUIRE(m.fastest_pass_seconds(4) == Approx(m.pass_seconds(4)));
}

TEST_CASE("one slow pass does not set a size's cost", "[speculative][cost]") {
    // A draft model's first pass, cold (page faults, evicted cache), then its usual ones.
    StepCostModel m(0.1);
    m.add(1, 0.004);
    REQUIRE(m.decode_seconds() == Approx(0.004));
    m.add(1, 0.0004);
    REQUIRE(m.decode_seconds() == Approx(0.0004));  // of two, the lower
    m.add(1, 0.0005);
    REQUIRE(m.decode_seconds() == Approx(0.0005));  // the median of three
    for (int i = 0; i < 3; ++i) m.add(1, 0.0004);
    m.add(1, 0.01);  // the machine busy for a moment
    REQUIRE(m.decode_seconds() == Approx(0.0004));
    // A lasting change is followed within three passes.
    for (int i = 0; i < 3; ++i) m.add(1, 0.002);
    REQUIRE(m.decode_seconds() == Approx(0.002));
}

TEST_CASE("speculation that measures no faster than plain decoding is vetoed, then measured again",
          "[speculative][policy]") {
    const SpeculationCosts cheap = SpeculationCosts::linear(0.0, 0.0);  // the cost model says it pays
    DraftPolicy p(4);
    for (int i = 0; i < 4; ++i) {
        REQUIRE(p.next(cheap, 100) == 0);
        p.observe(false, 1, 0.010);  // 10 ms per token plainly
    }
    // Speculating: 3 tokens a step, but 45 ms a step: slower per token. The first such
    // step is not counted (a draft's cold start); six are, then it is judged.
    for (int i = 0; i < 7; ++i) {
        REQUIRE_FALSE(p.vetoed());
        const int32_t k = p.next(cheap, 100);
        REQUIRE(k == 4);
        p.record(k, 2);
        p.observe(true, 3, 0.045);
    }
    REQUIRE(p.vetoed());
    int plain = 0;
    while (p.vetoed()) {
        REQUIRE(p.next(cheap, 100) == 0);
        p.observe(false, 1, 0.010);
        ++plain;
    }
    REQUIRE(plain == 16);
    // Measured again; this time it pays (3 tokens in 20 ms): no veto. The first step
    // after the veto feeds the draft the 16 tokens decoded without it: left out.
    REQUIRE(p.next(cheap, 100) > 0);
    p.observe(true, 3, 0.200);
    for (int i = 0; i < 8; ++i) {
        REQUIRE(p.next(cheap, 100) > 0);
        p.observe(true, 3, 0.020);
    }
    REQUIRE_FALSE(p.vetoed());
    REQUIRE(p.next(cheap, 100) > 0);
}

TEST_CASE("unsure tokens are proposed once they prove right, and no longer once they prove wrong",
          "[speculative][policy]") {
    DraftPolicy p(8);
    REQUIRE_FALSE(p.propose_unsure(0.5));  // the prior: one in five
    p.record_unsure(true);
    p.record_unsure(true);
    REQUIRE_FALSE(p.propose_unsure(0.5));
    p.record_unsure(true);
    REQUIRE(p.propose_unsure(0.5));  // three agreements in a row
    REQUIRE_FALSE(p.propose_unsure(0.9));
    for (int i = 0; i < 20; ++i) p.record_unsure(true);
    REQUIRE(p.propose_unsure(0.9));
    REQUIRE(p.unsure_acceptance() > 0.9);
    // Then the text turns: at one in four, the estimate follows it down within a dozen.
    for (int i = 0; i < 12; ++i) p.record_unsure(i % 4 == 0);
    REQUIRE_FALSE(p.propose_unsure(0.5));
    REQUIRE(p.unsure_acceptance() > 0.15);
    REQUIRE(p.unsure_acceptance() < 0.5);
    // The overall acceptance estimate is a separate matter.
    REQUIRE(p.acceptance() == Approx(0.75));
}

TEST_CASE("a sequence's next request leaves its first speculating step out again", "[speculative][policy]") {
    // The policy outlives a request (what it learnt about the pair holds for the next
    // one), but each request's first speculating step carries the draft's catch-up on the
    // new input and says nothing about the steady state.
    const SpeculationCosts cheap = SpeculationCosts::linear(0.0, 0.0);
    DraftPolicy p(4);
    for (int i = 0; i < 4; ++i) {
        REQUIRE(p.next(cheap, 100) == 0);
        p.observe(false, 1, 0.010);
    }
    for (int i = 0; i < 8; ++i) {
        REQUIRE(p.next(cheap, 100) > 0);
        p.observe(true, 3, 0.020);  // pays: 6.7 ms a token against 10
    }
    p.begin_request();
    REQUIRE(p.next(cheap, 100) > 0);  // no warm-up again
    p.observe(true, 3, 0.300);        // the catch-up on a long prompt
    for (int i = 0; i < 6; ++i) {
        REQUIRE(p.next(cheap, 100) > 0);
        p.observe(true, 3, 0.020);
    }
    REQUIRE_FALSE(p.vetoed());
    // Counted, the same step would have been judged a loss (13.5 ms a token over the window).
    DraftPolicy q(4);
    for (int i = 0; i < 4; ++i) {
        q.next(cheap, 100);
        q.observe(false, 1, 0.010);
    }
    q.next(cheap, 100);
    q.observe(true, 3, 0.020);  // the first, left out
    for (int i = 0; i < 6; ++i) {
        REQUIRE(q.next(cheap, 100) > 0);
        q.observe(true, 3, i == 0 ? 0.300 : 0.020);
    }
    REQUIRE(q.vetoed());
}

TEST_CASE("a draft that stops at p_min counts as a run ended, and speculation backs off", "[speculative][policy]") {
    // Every proposal made is kept, but most steps' drafts stop at their first token (the
    // draft under p_min): the rate of a run going on is low, so the policy stops drafting.
    const SpeculationCosts costs = SpeculationCosts::linear(0.05, 0.2);
    DraftPolicy p(8);
    for (int i = 0; i < 4; ++i) REQUIRE(p.next(costs, 100) == 0);
    int64_t drafting_steps = 0;
    for (int step = 0; step < 400; ++step) {
        const int32_t k = p.next(costs, 100);
        if (k == 0) continue;
        ++drafting_steps;
        if (step % 5 == 0) p.record(1, 1, true);  // one kept, then cut
        else p.record(0, 0, true);                // cut at the first token
    }
    INFO("drafting steps " << drafting_steps);
    REQUIRE(p.acceptance() < 0.3);
    REQUIRE(drafting_steps < 40);
    // Without the cuts the same proposals would have looked perfect.
    DraftPolicy q(8);
    for (int i = 0; i < 10; ++i) q.record(1, 1);
    REQUIRE(q.acceptance() > 0.95);
}

TEST_CASE("a probe waits until its draft catch-up is a small share of the steps since the last",
          "[speculative][policy]") {
    // Every proposal rejected: the policy only probes. Each probe's first draft pass feeds
    // the draft the tokens decoded since its last one, here 2 decode steps' worth: at
    // kProbeShare 3%, one probe per 67 steps or more, where the plain intervals (4 .. 64)
    // would have probed every 4-64 steps.
    SpeculationCosts costs = SpeculationCosts::linear(0.05, 0.2);
    costs.draft_catch_up = 2.0;
    DraftPolicy p(8);
    for (int i = 0; i < 4; ++i) REQUIRE(p.next(costs, 100) == 0);
    std::vector<int> probes;
    for (int step = 0; step < 1000; ++step) {
        const int32_t k = p.next(costs, 100);
        if (k == 0) continue;
        probes.push_back(step);
        p.record(k, 0);
    }
    INFO(probes.size() << " probes");
    REQUIRE(probes.size() >= 10);  // the first steps still try (the prior's 0.75)
    int late = 0;
    for (size_t i = 1; i < probes.size(); ++i) {
        if (probes[i - 1] < 100) continue;
        ++late;
        REQUIRE(probes[i] - probes[i - 1] >= 67);
    }
    REQUIRE(late >= 5);  // and it keeps probing
    // A cheap catch-up (prompt lookup: none) keeps the plain intervals.
    DraftPolicy q(8);
    const SpeculationCosts lookup = SpeculationCosts::linear(0.05, 0.0);
    int64_t lookup_probes = 0;
    for (int step = 0; step < 1000; ++step) {
        const int32_t k = q.next(lookup, 100);
        if (k == 0) continue;
        lookup_probes += step > 100;
        q.record(k, 0);
    }
    REQUIRE(lookup_probes >= 12);
}
