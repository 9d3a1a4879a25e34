// StepCostModel: what a forward pass costs as a function of the tokens in it, learnt from
// the passes an engine runs: seconds = fixed + per_token * tokens, fitted by least squares
// with exponential forgetting (recent passes weigh most; the machine's load changes).
// Speculation asks it what one more verified token costs relative to a decode step.
#pragma once

#include <cstdint>

namespace inlay {

class StepCostModel {
public:
    // `fallback_ratio`: the per-token share assumed until the passes seen vary enough in
    // size to tell fixed and per-token cost apart.
    explicit StepCostModel(double fallback_ratio = 0.1) : fallback_(fallback_ratio) {}

    void add(int64_t tokens, double seconds);
    // Seconds of a pass of one token (a decode step); 0 before any pass.
    [[nodiscard]] double decode_seconds() const;
    // The cost of one more token in a pass of `batch_tokens` tokens, relative to what that
    // pass yields per sequence (its time / batch_tokens), in [0, 1]. At 1 token this is the
    // slope over the time of a decode step; in a large batch that is already bound by
    // compute it nears 1, and speculation stops paying.
    [[nodiscard]] double token_ratio(int64_t batch_tokens = 1) const;
    [[nodiscard]] bool fitted() const;

private:
    [[nodiscard]] double variance() const;           // of the pass sizes seen
    [[nodiscard]] double per_token_seconds() const;  // the fitted slope (fitted() only)

    static constexpr double kForget = 0.97;
    double fallback_;
    double w_ = 0, n_ = 0, nn_ = 0, t_ = 0, nt_ = 0;  // decayed sums of 1, n, n^2, t, n*t
};

}  // namespace inlay
