// Speculative sampling's acceptance rule (Leviathan et al. 2023; Chen et al. 2023): a
// token d drawn from the draft's distribution q is kept with probability
// min(1, p(d) / q(d)), where p is the target's distribution at the same position; when it
// is not, the replacement is drawn from max(0, p - q), normalised. The token that results
// is distributed exactly as p, whatever q is, so speculation never changes what the
// target would sample.
#pragma once

#include <cstdint>
#include <span>

#include "sampling/sampler.h"

namespace inlay {

struct DraftVerdict {
    bool accepted = false;
    int32_t token = -1;  // the draft token when accepted, else the replacement
};

// `q` is the distribution the draft token came from; nullptr is a point mass on it (a
// proposal copied from the context, as prompt lookup makes). u_accept and u_residual are
// uniforms in [0, 1) (the target sampler's, so a seed fixes the outcome); u_residual is
// used only on rejection. Pure function.
[[nodiscard]] DraftVerdict verify_draft_token(const TokenDistribution& p, const TokenDistribution* q, int32_t draft,
                                              double u_accept, double u_residual);

// The chance that verify_draft_token keeps a token drawn from q: sum over tokens of
// min(p, q) (1 - the total variation distance). nullptr q: a point mass on `draft`.
[[nodiscard]] double acceptance_chance(const TokenDistribution& p, const TokenDistribution* q, int32_t draft);

// The largest probability in a distribution (0 when empty).
[[nodiscard]] double top_probability(const TokenDistribution& dist);

// Inverse CDF: the first id (ascending) whose running probability exceeds u in [0, 1).
[[nodiscard]] int32_t draw_token(const TokenDistribution& dist, double u);

// The softmax probability of the largest logit (at temperature 1): how sure a greedy
// draft is of its token. NaN logits count as absent; 0 when all are NaN.
[[nodiscard]] double top_probability(std::span<const float> logits);

}  // namespace inlay
