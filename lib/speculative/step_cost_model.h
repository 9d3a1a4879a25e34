// StepCostModel: what a forward pass costs as a function of the tokens in it, learnt from
// the passes an engine runs. Speculation asks it what k more tokens in a pass cost
// relative to a decode step.
//
// Two estimates, both following the machine's load:
// - the time of each pass size seen up to kTracked tokens: the lower median of its last
//   kRecent passes, so that one slow pass (a cold cache, page faults on first touch, the
//   machine busy for a moment) does not set it; a mean let a draft model's first pass,
//   ten times its usual time, rule speculation out for good; and
// - a straight line, seconds = fixed + per_token * tokens, fitted by least squares with
//   exponential forgetting.
// On a CPU the cost is far from a straight line at small sizes: the second token of a
// pass can cost half a decode step (one-token passes stream each weight row once; a few
// tokens take the small tiles), the sixteenth a tenth of one. A line fitted through
// decode steps and prompt chunks prices a verification of one or two proposals at the
// large batches' slope, which is what made speculation that lost 5-8% look like a gain.
// So a pass's cost is read from the sizes seen, interpolated between them, and the line
// serves only beyond them or before any were seen.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "speculative/recent_window.h"

namespace inlay {

class StepCostModel {
public:
    static constexpr int64_t kTracked = 80;  // pass sizes timed one by one (drafts of up to 64, plus a batch)

    // `fallback_ratio`: the per-token share assumed until the passes seen vary enough in
    // size to tell fixed and per-token cost apart.
    explicit StepCostModel(double fallback_ratio = 0.1) : fallback_(fallback_ratio) {}

    void add(int64_t tokens, double seconds);
    // Seconds of a pass of one token (a decode step); 0 before any pass.
    [[nodiscard]] double decode_seconds() const;
    // Seconds of a pass of `tokens` tokens; 0 before any pass.
    [[nodiscard]] double pass_seconds(int64_t tokens) const;
    // The same from the fastest of a size's recent passes where that size was timed: what
    // the pass costs when nothing slows it down. Nothing makes a pass faster than it is,
    // so this estimate is never fooled by cold starts; it serves a draft model, whose
    // first passes of a reply can all be cold (its weights evicted by the target's) and
    // would otherwise price speculation out before any warm pass is timed.
    [[nodiscard]] double fastest_pass_seconds(int64_t tokens) const;
    // The cost of `more` tokens added to a pass of `batch_tokens`, relative to what that
    // pass yields per sequence (its time / batch_tokens): at 1 token, in decode steps.
    [[nodiscard]] double added_ratio(int64_t batch_tokens, int64_t more) const;
    [[nodiscard]] bool fitted() const;
    // Passes of `tokens` tokens whose times the estimate holds (at most kRecent).
    [[nodiscard]] int timed(int64_t tokens) const {
        return tokens >= 1 && tokens <= kTracked ? recent_[static_cast<size_t>(tokens)].size() : 0;
    }
    static constexpr int kRecent = 5;  // passes of a size kept for its time

private:
    [[nodiscard]] double variance() const;           // of the pass sizes seen
    [[nodiscard]] double per_token_seconds() const;  // the fitted slope, or the fallback's
    [[nodiscard]] double line_seconds(int64_t tokens) const;
    [[nodiscard]] bool seen(int64_t tokens) const { return timed(tokens) > 0; }
    [[nodiscard]] double time_at(int64_t tokens) const { return lower_median(recent_[static_cast<size_t>(tokens)]); }

    static constexpr double kForget = 0.97;  // per pass, for the line

    using Recent = RecentWindow<double, kRecent>;  // the last times of one pass size
    [[nodiscard]] static double lower_median(const Recent& times);  // of a size seen

    double fallback_;
    double w_ = 0, n_ = 0, nn_ = 0, t_ = 0, nt_ = 0;  // decayed sums of 1, n, n^2, t, n*t
    std::array<Recent, kTracked + 1> recent_{};
};

}  // namespace inlay
