// DraftPolicy: how many tokens one sequence should have drafted in its next step.
//
// Verifying k draft tokens costs one target pass over k+1 tokens plus, with a draft
// model, k draft passes; it yields 1 + (accepted tokens). With a per-token acceptance
// rate a, the expected yield of k proposals is (1 - a^(k+1)) / (1 - a) tokens, against a
// cost of 1 + v(k) + f + (k - 1) * d target decode steps, v(k) being what k more tokens
// add to the target's pass, f the draft's first pass (which also feeds the tokens it has
// not seen since the last step: the last kept proposal and the target's bonus token) and
// d each further draft pass, relative to a decode step (SpeculationCosts; v is measured
// per pass size, far from linear on a CPU). The policy proposes the k in [1, n_max] with
// the best yield per cost, and nothing when even that is no gain; then
// it probes with k = 1 now and again (less often while probes keep failing, and with a
// draft model only once the catch-up its first pass carries is a small share of the steps
// since the last probe), so a sequence whose text becomes predictable gets speculation
// back. When the costs rule speculation out even at full acceptance, it does not probe.
//
// The cost model can be wrong (two models' weights evicting each other from the cache
// make both slower than either alone), so the policy also watches the outcome: the time
// per token of its recent steps with and without proposals (seconds over tokens of the
// last kWindow of each). Its first decode steps are plain (to measure them), and the first
// speculating step of a request or after a veto is not counted (it carries the draft's
// cold start or its catch-up on the tokens decoded without it); when speculating turns
// out slower, it is vetoed for a while (the veto doubling while it keeps being right),
// then measured again.
//
// The acceptance rate is estimated from the verifications so far, the recent ones
// weighing most: each round adds its accepted tokens to a success count and, when a token
// was rejected, one failure (the geometric model's maximum likelihood), both decaying,
// starting from a prior worth two tokens. A draft that stops at a token under p_min ends
// the run as a rejection does, so that counts as a failure too: the rate is that of a
// run going on, which is what the expected yield needs (a high p_min that cuts most
// drafts at their first token made every step pay a draft pass for nothing, 5% slower
// than plain decoding, while the rate of the few proposals made stayed at 100%).
//
// A draft model stops proposing at a token it is unsure of (its probability under p_min):
// the confidence stands in for the chance the target agrees. For a draft that is a
// quantized copy of the target the two agree on most unsure tokens too, and the cut costs
// a draft pass for nothing (and often the whole step's proposals). So the policy also
// keeps the acceptance of unsure tokens, learnt from the ones proposed and from each
// cut-off one against the target at its position (greedy: its own token; sampling: the
// chance the rejection rule would have kept a draw from the draft's distribution there);
// when that rate reaches p_min, unsure tokens are proposed like the others. (A sampled
// draft is unsure by its distribution's top probability, never by the token drawn: a
// choice to propose that depended on the draw would bias what the rejection rule keeps.)
#pragma once

#include <cstdint>
#include <vector>

#include "speculative/recent_window.h"

namespace inlay {

struct SpeculationCosts {
    // verify[k]: what k more tokens add to the target's pass, in target decode steps
    // (verify[0] = 0); past the table, its last entry's cost per token.
    std::vector<double> verify;
    double draft_first = 0.0;  // the first draft pass, in target decode steps (0: prompt lookup)
    double draft_token = 0.0;  // each further draft pass
    // The first draft pass this step, feeding every token the draft has not seen (after
    // plain steps, all of them since its last pass; for a new request, the prompt): paid
    // once, then speculating steps keep the draft in step, so only probes weigh it.
    double draft_catch_up = 0.0;

    // Every further token in the target's pass costing `verify_token`, every draft pass
    // `draft_token`.
    static SpeculationCosts linear(double verify_token, double draft_token, int32_t k_max = 64);
    [[nodiscard]] double verify_cost(int32_t k) const;
    [[nodiscard]] double draft_cost(int32_t k) const;
};

class DraftPolicy {
public:
    // n_max >= 1 proposals per step at most, n_min at least (0: the policy may skip).
    // prior_acceptance in (0, 1): the rate assumed before any verification (weighing as two
    // observed tokens).
    explicit DraftPolicy(int32_t n_max, int32_t n_min = 0, double prior_acceptance = 0.75);

    // A sequence keeps its policy across its requests; each request's first speculating
    // step is left out of the comparison again (it carries the draft's catch-up on the
    // new input).
    void begin_request() { spec_started_ = false; }

    // The proposals to make this step (0: decode without speculation), at most `limit`.
    // Call once per step in which the sequence decodes.
    int32_t next(const SpeculationCosts& costs, int32_t limit);
    // The outcome of a step's drafting: `proposed` tokens checked, the first `accepted`
    // kept; `cut`: the draft stopped at a token under p_min before the step's k (with
    // nothing proposed, too: the draft pass was paid for no proposal).
    void record(int32_t proposed, int32_t accepted, bool cut = false);
    // The wall time of a step of this sequence and the tokens it gave it, with or without
    // proposals in it.
    void observe(bool speculated, int64_t tokens, double seconds);
    [[nodiscard]] bool vetoed() const { return veto_left_ > 0; }
    // The fate of a token the draft was unsure of: proposed and checked, or cut off and
    // compared with the target's at its position; `accepted` is 0 or 1, or the chance a
    // sampled proposal there would have been kept (acceptance_chance).
    void record_unsure(double accepted);
    // Whether unsure tokens are accepted at least `p_min` of the time.
    [[nodiscard]] bool propose_unsure(double p_min) const { return unsure_acceptance() >= p_min; }
    [[nodiscard]] double unsure_acceptance() const { return unsure_successes_ / (unsure_successes_ + unsure_failures_); }

    [[nodiscard]] double acceptance() const;
    [[nodiscard]] int32_t n_max() const { return n_max_; }
    // Expected tokens per cost of proposing k at acceptance a (k = 0 gives 1).
    [[nodiscard]] static double gain(double a, int32_t k, const SpeculationCosts& costs);

private:
    int32_t choose(const SpeculationCosts& costs, int32_t k_max);

    static constexpr double kDecay = 0.8;        // weight of the past per verification
    static constexpr double kMinGain = 1.03;     // speculate only for a 3% gain or more
    static constexpr int32_t kFirstProbe = 4;    // decode steps between probes, at first
    static constexpr int32_t kMaxProbe = 64;     // ... and at most
    // A probe's first draft pass feeds the draft every token since its last one (20-70
    // tokens: 1.5-4 decode steps of SmolLM2's Q4_K_M draft, 6-10% of a 64-token reply at
    // the intervals above): a probe waits until that is this share of the steps since the
    // last one.
    static constexpr double kProbeShare = 0.03;
    static constexpr int32_t kWarmup = 4;        // plain decode steps measured first
    static constexpr int32_t kJudge = 6;         // speculating steps before comparing (3 were
                                                 // too few: a start that learns which unsure
                                                 // tokens to propose looked slow and was vetoed)
    static constexpr int32_t kFirstVeto = 16;    // decode steps without speculation, at first
    static constexpr int32_t kMaxVeto = 512;
    static constexpr int kWindow = 12;           // recent steps of each kind timed (8 were noisy)

    struct Step {
        int64_t tokens = 0;
        double seconds = 0.0;
    };
    using StepWindow = RecentWindow<Step, kWindow>;
    [[nodiscard]] static double seconds_per_token(const StepWindow& steps);

    int32_t n_max_;
    int32_t n_min_;
    // The prior enters as observations that decay like the others, so a run of failures
    // can bring the estimate near 0.
    static constexpr double kPriorWeight = 2.0;
    double successes_;
    double failures_;
    // Unsure tokens: a prior of one success in five, so that it takes a run of agreements
    // (three with p_min 0.5) before they are proposed; the last ten or so outcomes weigh most.
    static constexpr double kUnsureDecay = 0.9;
    double unsure_successes_ = 1.0;
    double unsure_failures_ = 4.0;
    int32_t probe_interval_ = kFirstProbe;
    int32_t steps_since_probe_ = 0;
    int32_t decode_steps_ = 0;
    // Recent steps without and with proposals.
    StepWindow plain_, spec_;
    bool spec_started_ = false;  // the first speculating step was seen (and left out)
    int32_t veto_left_ = 0;
    int32_t veto_interval_ = kFirstVeto;
};

}  // namespace inlay
