// Speculative decoding in the engine: what a sequence asks for (SpeculationOptions), the
// counters it reports (SpeculationStats), and the draft model's side inside one engine
// (DraftContext).
//
// A speculating sequence that is decoding gets up to k proposed tokens in a step, from a
// draft model (k cheap forward passes of a smaller model with the same vocabulary, batched
// over every sequence drafting with it) or from its own context (prompt lookup). Its last
// token and the proposals then go through the target as one chunk with k+1 logit rows,
// beside the other sequences' tokens in the same forward pass. The rows are checked in
// order: greedy keeps a proposal when it is the target's argmax, sampling applies the
// rejection rule (speculative/rejection.h), so the output is the target's either way. The
// first mismatch is replaced by the target's own token; when all k pass, the last row
// gives one more. The KV of rejected proposals is dropped (target and draft).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/common/batch.h"
#include "core/zeroed_array.h"
#include "model/model.h"
#include "runtime/kv_block_pool.h"
#include "speculative/prompt_lookup.h"
#include "speculative/step_cost_model.h"

namespace inlay {

struct SpeculationOptions {
    enum class Mode { none, draft_model, prompt_lookup };
    Mode mode = Mode::none;
    std::shared_ptr<const Model> draft;  // Mode::draft_model: same vocabulary as the target
    int32_t n_draft = 8;                 // proposals per step at most (adapted below that)
    int32_t n_draft_min = 0;             // proposals per step at least, whatever the policy says
    float p_min = 0.5f;                  // draft model: stop drafting at a token it gives less
    LookupOptions lookup;                // Mode::prompt_lookup
};

inline constexpr int32_t kMaxDraftTokens = 64;

// Throws INLAY_ERR_INVALID_ARGUMENT for options that cannot run: no draft model for
// Mode::draft_model, n_draft outside [1, kMaxDraftTokens], n_draft_min outside [0, n_draft], p_min outside [0, 1] or NaN,
// lookup n-gram sizes outside 1 <= ngram_min <= ngram_max <= 16.
void validate(const SpeculationOptions& options);

struct SpeculationStats {
    int64_t rounds = 0;    // verifications (steps in which proposals were checked)
    int64_t proposed = 0;  // tokens proposed
    int64_t accepted = 0;  // of them, kept

    SpeculationStats& operator+=(const SpeculationStats& o) {
        rounds += o.rounds;
        proposed += o.proposed;
        accepted += o.accepted;
        return *this;
    }
    [[nodiscard]] double acceptance_rate() const {
        return proposed > 0 ? static_cast<double>(accepted) / static_cast<double>(proposed) : 0.0;
    }
};

// One draft model as an engine uses it: its own KV pool (the draft's geometry), scratch
// for its passes, and what those passes cost. Sequences drafting with it hold blocks of its
// pool. Scheduler thread only, except binding (under the engine's mutex).
struct DraftContext {
    std::shared_ptr<const Model> model;
    std::shared_ptr<KvBlockPool> pool;
    int32_t owner = -1;
    std::unique_ptr<StepWorkspace> workspace;
    ZeroedArray<float> logits;  // resident as rows are used
    BatchBuilder batch;
    StepCostModel cost;
    double prior_cost = 0.0;     // a draft pass per target decode step, until measured
    int64_t planned_tokens = 0;  // tokens of this step's first draft pass (plan)
    int64_t users = 0;           // sequences bound to it
};

}  // namespace inlay
