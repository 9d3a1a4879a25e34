#include "runtime/speculation.h"

#include <cmath>

#include "core/error.h"

namespace inlay {

void validate(const SpeculationOptions& o) {
    if (o.mode == SpeculationOptions::Mode::none) return;
    if (o.mode == SpeculationOptions::Mode::draft_model && !o.draft)
        fail(INLAY_ERR_INVALID_ARGUMENT, "speculative decoding with a draft model needs the draft model");
    if (o.n_draft < 1 || o.n_draft > kMaxDraftTokens)
        fail(INLAY_ERR_INVALID_ARGUMENT, "n_draft must be in [1, {}], not {}", kMaxDraftTokens, o.n_draft);
    if (o.n_draft_min < 0 || o.n_draft_min > o.n_draft)
        fail(INLAY_ERR_INVALID_ARGUMENT, "n_draft_min must be in [0, n_draft = {}], not {}", o.n_draft, o.n_draft_min);
    if (!(o.p_min >= 0.0f && o.p_min <= 1.0f))
        fail(INLAY_ERR_INVALID_ARGUMENT, "p_min must be in [0, 1], not {}", o.p_min);
    if (o.mode == SpeculationOptions::Mode::prompt_lookup &&
        !(o.lookup.ngram_min >= 1 && o.lookup.ngram_min <= o.lookup.ngram_max && o.lookup.ngram_max <= 16))
        fail(INLAY_ERR_INVALID_ARGUMENT, "prompt lookup n-gram sizes must satisfy 1 <= min <= max <= 16 (got {} and {})",
             o.lookup.ngram_min, o.lookup.ngram_max);
}

}  // namespace inlay
