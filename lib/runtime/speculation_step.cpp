// Engine's speculative decoding: binding sequences to draft models, planning how many
// tokens each speculating decode entry proposes (and reserving their KV), drafting, and
// verifying the proposals against the target's rows. See runtime/speculation.h.
#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "core/log.h"
#include "runtime/engine.h"
#include "runtime/engine_entry.h"
#include "runtime/kv_pool_set.h"
#include "sampling/penalties.h"
#include "speculative/draft_vocabulary.h"
#include "speculative/rejection.h"
#include "tokenizer/tokenizer.h"

namespace inlay {

namespace {

using Clock = std::chrono::steady_clock;

// The share of a GPU's free memory a draft model's KV pool may take.
constexpr double kDraftDeviceKvFraction = 0.5;

// The history a sampler sees for the token after `tokens` + `drafts` (only its penalty
// window is read, so nothing is copied when no penalty is active).
std::span<const int32_t> history_with(const Sampler& sampler, const std::vector<int32_t>& tokens,
                                      const std::vector<int32_t>& drafts, size_t n_drafts,
                                      std::vector<int32_t>& scratch) {
    if (!penalties_active(sampler.params()) || n_drafts == 0) return tokens;
    scratch.assign(tokens.begin(), tokens.end());
    scratch.insert(scratch.end(), drafts.begin(), drafts.begin() + static_cast<std::ptrdiff_t>(n_drafts));
    return scratch;
}

}  // namespace

// --- binding ----------------------------------------------------------------------------

void Engine::set_speculation(Sequence& seq, const SpeculationOptions& options) {
    validate(options);
    const bool with_draft = options.mode == SpeculationOptions::Mode::draft_model;
    if (with_draft) require_same_vocabulary(*model_, *options.draft);
    std::lock_guard lock(mutex_);
    if (seq.active_) fail(INLAY_ERR_BUSY, "set_speculation: the session is in use by a running request");
    DraftContext* ctx = with_draft ? &draft_context_locked(options.draft) : nullptr;
    if (seq.draft_ != ctx) {
        unbind_draft_locked(seq);
        if (ctx) {
            seq.draft_ = ctx;
            ++ctx->users;
        }
    }
    seq.spec_ = options;
    if (!with_draft) seq.spec_.draft.reset();
    seq.policy_.reset();  // learnt for other options
}

DraftContext& Engine::draft_context_locked(const std::shared_ptr<const Model>& draft) {
    for (const auto& c : drafts_)
        if (c->model == draft) return *c;
    auto ctx = std::make_unique<DraftContext>();
    ctx->model = draft;
    const Executor& ex = draft->executor();
    KvPoolOptions po;
    po.block_size = block_size_;
    po.dtype = pool_->geometry().dtype;
    // As many token slots as the target's pool: every token the target holds can have
    // its draft counterpart. On a GPU, no more than a share of what is free.
    po.budget_blocks = pool_->n_blocks();
    if (draft->device() != "cpu") {
        const size_t block_bytes = ex.kv_block_bytes(ex.kv_geometry(block_size_, po.dtype));
        const auto fit = static_cast<int64_t>(kDraftDeviceKvFraction *
                                              static_cast<double>(ex.memory_info().free_bytes) /
                                              static_cast<double>(std::max<size_t>(1, block_bytes)));
        po.budget_blocks = std::min(po.budget_blocks, fit);
        if (po.budget_blocks <= 0)
            fail(INLAY_ERR_KV_FULL, "the draft model's device {} has no free memory for its KV cache", draft->device());
    }
    ctx->pool = make_kv_pool(ex, po);
    ctx->owner = ctx->pool->add_owner({});
    ctx->workspace = ex.new_workspace(options_.step_tokens, options_.max_logit_rows);
    ctx->logits = ZeroedArray<float>(static_cast<size_t>(options_.max_logit_rows * draft->spec().n_vocab));
    // Decode is bound by reading the weights: until a pass is timed, price a draft pass
    // by the weight bytes it reads against the target's.
    const auto target_bytes = static_cast<double>(std::max<uint64_t>(1, model_->weights().file_bytes()));
    ctx->prior_cost = std::clamp(static_cast<double>(draft->weights().file_bytes()) / target_bytes, 0.01, 2.0);
    drafts_.push_back(std::move(ctx));
    return *drafts_.back();
}

void Engine::unbind_draft_locked(Sequence& seq) {
    DraftContext* ctx = seq.draft_;
    if (!ctx) return;
    ctx->pool->release_all(seq.draft_blocks_);
    seq.draft_cached_ = 0;
    seq.draft_ = nullptr;
    if (--ctx->users > 0) return;
    const auto it = std::find_if(drafts_.begin(), drafts_.end(), [&](const auto& c) { return c.get() == ctx; });
    if (it == drafts_.end()) return;
    try {
        ctx->pool->remove_owner(ctx->owner);
    } catch (...) {  // bookkeeping only; the pool goes away with the context
    }
    drafts_.erase(it);
}

void Engine::trim_draft(Sequence& seq, int64_t n_tokens) {
    if (!seq.draft_) return;
    seq.draft_cached_ = std::min(seq.draft_cached_, std::max<int64_t>(0, n_tokens));
    seq.draft_->pool->release_tail(seq.draft_blocks_,
                                   static_cast<size_t>(Sequence::blocks_for(seq.draft_cached_, block_size_)));
}

void Engine::release_idle_drafts_locked(DraftContext& ctx, int64_t want) {
    auto enough = [&] { return ctx.pool->available(ctx.owner) >= want; };
    std::vector<Sequence*> idle;
    for (const auto& s : sequences_)
        if (s->draft_ == &ctx && !s->active_ && !s->draft_blocks_.empty()) idle.push_back(s.get());
    std::sort(idle.begin(), idle.end(), [](const Sequence* a, const Sequence* b) { return a->last_used_ < b->last_used_; });
    for (Sequence* s : idle) {
        if (enough()) return;
        trim_draft(*s, 0);
    }
    for (auto it = waiting_.rbegin(); it != waiting_.rend() && !enough(); ++it)
        if ((*it)->seq_->draft_ == &ctx) trim_draft(*(*it)->seq_, 0);
}

bool Engine::grow_draft_locked(Sequence& seq, int64_t n_tokens) {
    DraftContext& ctx = *seq.draft_;
    const int64_t grow = Sequence::blocks_for(n_tokens, block_size_) - static_cast<int64_t>(seq.draft_blocks_.size());
    if (grow <= 0) return true;
    std::vector<BlockId> fresh;
    if (!ctx.pool->allocate_n(ctx.owner, grow, fresh)) {
        release_idle_drafts_locked(ctx, grow);
        if (!ctx.pool->allocate_n(ctx.owner, grow, fresh)) return false;
    }
    seq.draft_blocks_.insert(seq.draft_blocks_.end(), fresh.begin(), fresh.end());
    return true;
}

// --- planning ---------------------------------------------------------------------------

void Engine::plan_speculation_locked(Entry& e, int64_t budget, int64_t rows, int64_t n_decode) {
    Request& req = *e.req;
    Sequence& seq = *req.seq_;
    if (!req.policy_) return;
    const int64_t bs = block_size_;
    const auto n_tokens = static_cast<int64_t>(seq.tokens_.size());
    // Room for the proposals and the token after them: the request's budget, the context,
    // this step's token and row budgets, and half of a step for all proposals together.
    int64_t limit = std::min({static_cast<int64_t>(req.max_tokens) - static_cast<int64_t>(req.generated.size()) - 1,
                              seq.context_length_ - n_tokens - 1, budget - 1, rows - 1,
                              options_.step_tokens / 2 - spec_tokens_planned_});
    if (limit <= 0) return;

    // What 1..limit proposals would add to this step's pass (of n_decode decode tokens).
    SpeculationCosts costs;
    costs.verify.resize(static_cast<size_t>(std::min<int64_t>(limit, req.policy_->n_max())) + 1);
    for (size_t k = 1; k < costs.verify.size(); ++k)
        costs.verify[k] = step_cost_.added_ratio(n_decode, static_cast<int64_t>(k));
    DraftContext* ctx = seq.draft_;
    if (seq.spec_.mode == SpeculationOptions::Mode::draft_model) {
        if (!ctx) return;
        // The draft's first pass feeds what it has not seen yet and ends on the last token.
        // A long catch-up (a new prompt) goes in chunks over several steps, without drafting,
        // so that it never stalls the step.
        const int64_t lag = n_tokens - seq.draft_cached_;
        const int64_t room = options_.step_tokens - ctx->planned_tokens;
        const int64_t chunk = std::max<int64_t>(1, options_.step_tokens / 2);
        if (lag > std::min(room, chunk)) {
            const int64_t n = std::min({lag - 1, room, chunk});
            if (n <= 0) return;
            if (!grow_draft_locked(seq, seq.draft_cached_ + n)) return;
            e.draft_catchup = n;
            ctx->planned_tokens += n;
            return;
        }
        // A draft pass of n tokens in target decode steps: measured, or the prior (the
        // target's own pass of n tokens scaled by the weight bytes). The draft's first
        // passes of a size can be cold (its weights not yet touched, or evicted by the
        // target's): until three are timed, the prior caps them, and after that the
        // fastest recent pass prices them. With their median, a reply whose first few
        // draft passes all ran cold (stories15M F32 + Q8_0 on Zen 5: 1.1-1.9 ms against
        // 0.25 warm) ruled speculation out at full acceptance, and with no more draft
        // passes to time it never came back: 3 runs of 5 without a proposal. Where the
        // fastest pass is still too slow (a draft and a target that evict each other from
        // the cache), the outcome check vetoes what the costs let through.
        const double target_step = step_cost_.decode_seconds();
        auto draft_pass = [&](int64_t n) {
            const double prior = target_step > 0.0
                                     ? ctx->prior_cost * step_cost_.pass_seconds(n) / target_step
                                     : ctx->prior_cost * static_cast<double>(n);
            const double measured = ctx->cost.fastest_pass_seconds(n);
            if (!(target_step > 0.0 && measured > 0.0)) return prior;
            const double ratio = measured / target_step;
            return ctx->cost.timed(n) < 3 ? std::min(ratio, prior) : ratio;
        };
        // The first pass feeds every token the draft has not seen (at least the last one):
        // in steady speculation the last kept proposal and the bonus token; now, whatever
        // it missed (the prompt, plain steps), which only a probe has to weigh.
        costs.draft_first = draft_pass(std::clamp<int64_t>(lag, 1, 2));
        costs.draft_token = draft_pass(1);
        costs.draft_catch_up = draft_pass(std::max<int64_t>(1, lag));
    }
    int64_t k = req.policy_->next(costs, static_cast<int32_t>(limit));
    if (k <= 0) return;

    // Target blocks for the proposals: slots left in the blocks held (the base token's
    // are reserved already), then fresh blocks if free ones exist.
    const int64_t slots = static_cast<int64_t>(seq.blocks_.size()) * bs - (seq.n_cached_ + 1);
    if (k > slots) {
        const int64_t grow = Sequence::blocks_for(seq.n_cached_ + 1 + k, bs) - static_cast<int64_t>(seq.blocks_.size());
        std::vector<BlockId> fresh;
        if (pool_->available(owner_) >= grow && pool_->allocate_n(owner_, grow, fresh))
            seq.blocks_.insert(seq.blocks_.end(), fresh.begin(), fresh.end());
        else
            k = std::max<int64_t>(0, slots);
    }
    // Draft blocks: its passes write positions up to n_tokens - 2 + k.
    if (ctx && k > 0) {
        if (grow_draft_locked(seq, n_tokens + k - 1)) ctx->planned_tokens += n_tokens - seq.draft_cached_;
        else k = 0;
    }
    if (k <= 0) {
        // Give back what was reserved for proposals beyond the base token.
        pool_->release_tail(seq.blocks_, static_cast<size_t>(Sequence::blocks_for(seq.n_cached_ + 1, bs)));
        return;
    }
    e.k_max = static_cast<int32_t>(k);
    spec_tokens_planned_ += k;
}

// --- drafting ---------------------------------------------------------------------------

void Engine::draft_step(std::vector<Entry>& plan) {
    step_draft_passes_ = 0;
    step_draft_seconds_ = 0.0;
    std::vector<DraftContext*> contexts;
    for (Entry& e : plan) {
        Request& req = *e.req;
        req.drafts_.clear();
        req.draft_unsure_.clear();
        req.cut_token_ = -1;
        if (!e.drafts()) continue;
        const Sequence& seq = *req.seq_;
        if (seq.spec_.mode == SpeculationOptions::Mode::prompt_lookup) {
            propose_by_lookup(seq.tokens_, e.k_max, seq.spec_.lookup, req.drafts_);
        } else if (seq.draft_ && std::find(contexts.begin(), contexts.end(), seq.draft_) == contexts.end()) {
            contexts.push_back(seq.draft_);
        }
    }

    std::vector<Entry*> rows;     // the entry of each logit row of a pass
    std::vector<char> drafting;   // per plan entry: still proposing
    std::vector<int32_t> scratch;
    for (DraftContext* ctx : contexts) {
        const Executor& ex = ctx->model->executor();
        drafting.assign(plan.size(), 0);
        for (size_t i = 0; i < plan.size(); ++i)
            drafting[i] = plan[i].k_max > 0 && plan[i].req->seq_->draft_ == ctx;
        for (int32_t pass = 0;; ++pass) {
            BatchBuilder& batch = ctx->batch;
            batch.clear();
            rows.clear();
            for (size_t i = 0; i < plan.size(); ++i) {
                Entry& e = plan[i];
                Sequence& seq = *e.req->seq_;
                if (seq.draft_ != ctx) continue;
                const auto n_tokens = static_cast<int64_t>(seq.tokens_.size());
                if (pass == 0 && e.draft_catchup > 0) {
                    const int32_t s = batch.add_sequence(seq.draft_blocks_, seq.draft_cached_ + e.draft_catchup);
                    batch.add_tokens(s, std::span<const int32_t>(seq.tokens_).subspan(static_cast<size_t>(seq.draft_cached_),
                                                                                      static_cast<size_t>(e.draft_catchup)),
                                     seq.draft_cached_, 0);
                } else if (drafting[i] && pass == 0) {
                    const int32_t s = batch.add_sequence(seq.draft_blocks_, n_tokens);
                    batch.add_tokens(s, std::span<const int32_t>(seq.tokens_).subspan(static_cast<size_t>(seq.draft_cached_)),
                                     seq.draft_cached_, 1);
                    rows.push_back(&e);
                } else if (drafting[i]) {
                    const int64_t pos = n_tokens - 1 + pass;
                    const int32_t s = batch.add_sequence(seq.draft_blocks_, pos + 1);
                    batch.add_token(e.req->drafts_.back(), static_cast<int32_t>(pos), s, true);
                    rows.push_back(&e);
                }
            }
            if (batch.n_tokens() == 0) break;
            const auto t0 = Clock::now();
            try {
                ex.step(ctx->pool->store(), *ctx->workspace, batch.desc(), ctx->logits.data());
            } catch (const std::exception& err) {
                // A draft that fails only costs the speculation: these entries decode plainly.
                log(LogLevel::warn, "draft model pass failed; decoding without speculation this step: {}", err.what());
                for (Entry& e : plan)
                    if (e.req->seq_->draft_ == ctx) e.req->drafts_.clear();
                break;
            }
            const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
            ctx->cost.add(batch.n_tokens(), seconds);
            ++step_draft_passes_;
            step_draft_seconds_ += seconds;
            // The draft's KV now holds what this pass fed.
            for (size_t i = 0; i < plan.size(); ++i) {
                Entry& e = plan[i];
                Sequence& seq = *e.req->seq_;
                if (seq.draft_ != ctx) continue;
                if (pass == 0 && e.draft_catchup > 0) seq.draft_cached_ += e.draft_catchup;
                else if (drafting[i]) seq.draft_cached_ = static_cast<int64_t>(seq.tokens_.size()) + pass;
            }
            const auto n_vocab = static_cast<size_t>(ctx->model->spec().n_vocab);
            for (size_t r = 0; r < rows.size(); ++r) {
                Entry& e = *rows[r];
                Request& req = *e.req;
                const size_t index = static_cast<size_t>(&e - plan.data());
                const std::span<const float> logits(ctx->logits.data() + r * n_vocab, n_vocab);
                Sampler& ds = *req.draft_sampler_;
                const auto history = history_with(ds, req.seq_->tokens_, req.drafts_, req.drafts_.size(), scratch);
                int32_t token = -1;
                double confidence = 0.0;
                try {
                    if (ds.greedy()) {
                        token = ds.sample(logits, history);
                        confidence = top_probability(logits);
                    } else {
                        // One distribution per proposal, kept for the verification (grown, never shrunk).
                        if (req.draft_q_.size() <= req.drafts_.size()) req.draft_q_.resize(req.drafts_.size() + 1);
                        TokenDistribution& q = req.draft_q_[req.drafts_.size()];
                        ds.distribution(logits, history, q);
                        token = draw_token(q, ds.uniform());
                        // The distribution's certainty, not the drawn token's probability:
                        // stopping on the draw would bias what the rejection rule keeps.
                        confidence = top_probability(q);
                    }
                } catch (const Error&) {
                    token = -1;  // NaN rows from the draft: stop proposing
                }
                if (token < 0) {
                    drafting[index] = 0;
                    continue;
                }
                const double p_min = static_cast<double>(req.seq_->spec_.p_min);
                const bool unsure = confidence < p_min;
                if (unsure && !req.policy_->propose_unsure(p_min)) {
                    // Cut here; what the target does at this position tells the policy how
                    // often unsure tokens are right after all (DraftPolicy::record_unsure).
                    req.cut_token_ = token;
                    drafting[index] = 0;
                    continue;
                }
                req.drafts_.push_back(token);
                req.draft_unsure_.push_back(unsure ? 1 : 0);
                if (static_cast<int32_t>(req.drafts_.size()) >= e.k_max) drafting[index] = 0;
            }
        }
    }
}

// --- verification -----------------------------------------------------------------------

void Engine::learn_from_cut(Request& req, int32_t token, std::span<const float> row) {
    if (!req.policy_ || req.cut_token_ < 0) return;
    if (req.sampler_->greedy()) {
        req.policy_->record_unsure(token == req.cut_token_ ? 1.0 : 0.0);
        return;
    }
    if (row.empty()) return;
    const TokenDistribution* q =
        req.draft_sampler_->greedy() ? nullptr : &req.draft_q_[req.drafts_.size()];  // the cut token's
    try {
        req.sampler_->distribution(row, req.seq_->tokens_, req.target_p_);
    } catch (const Error&) {  // the row was sampled already; a failure here only skips the lesson
        return;
    }
    req.policy_->record_unsure(acceptance_chance(req.target_p_, q, req.cut_token_));
}

void Engine::verify_locked(Entry& e) {
    Request& req = *e.req;
    Sequence& seq = *req.seq_;
    const int64_t n_vocab = model_->spec().n_vocab;
    const auto n_before = static_cast<int64_t>(seq.tokens_.size());
    const auto m = static_cast<int64_t>(req.drafts_.size());
    Sampler& sampler = *req.sampler_;
    const bool point_drafts = seq.spec_.mode == SpeculationOptions::Mode::prompt_lookup;
    // Greedy rows came back as their argmax ids when the step could (plan_step_output).
    auto greedy_token = [&](int64_t i, std::span<const float> row) {
        return step_output_ == StepOutput::argmax ? sampler.from_argmax(step_ids_[static_cast<size_t>(e.row + i)])
                                                  : sampler.sample(row, seq.tokens_);
    };
    int64_t accepted = 0;
    int64_t produced = static_cast<int64_t>(req.generated.size());
    try {
        for (int64_t i = 0; i <= m; ++i) {
            const std::span<const float> row(step_logits_.data() + (e.row + i) * n_vocab, static_cast<size_t>(n_vocab));
            int32_t token = -1;
            bool kept = false;
            if (i < m) {
                const int32_t draft = req.drafts_[static_cast<size_t>(i)];
                const bool unsure =
                    static_cast<size_t>(i) < req.draft_unsure_.size() && req.draft_unsure_[static_cast<size_t>(i)];
                if (sampler.greedy()) {
                    token = greedy_token(i, row);
                    kept = token == draft;
                    if (unsure) req.policy_->record_unsure(kept ? 1.0 : 0.0);  // (prompt lookup marks none)
                } else {
                    sampler.distribution(row, seq.tokens_, req.target_p_);
                    const TokenDistribution* q = point_drafts || req.draft_sampler_->greedy()
                                                     ? nullptr
                                                     : &req.draft_q_[static_cast<size_t>(i)];
                    if (unsure) req.policy_->record_unsure(acceptance_chance(req.target_p_, q, draft));
                    const double u_accept = sampler.uniform();
                    const double u_residual = sampler.uniform();
                    const DraftVerdict v = verify_draft_token(req.target_p_, q, draft, u_accept, u_residual);
                    token = v.token;
                    kept = v.accepted;
                }
            } else {
                // Every proposal kept: one more from the last row.
                token = sampler.greedy() ? greedy_token(i, row) : sampler.sample(row, seq.tokens_);
                learn_from_cut(req, token, row);
            }
            seq.tokens_.push_back(token);
            ++produced;
            if (kept) ++accepted;
            const bool ends = (!req.ignore_eos && model_->tokenizer().is_eog(token)) || produced >= req.max_tokens ||
                              static_cast<int64_t>(seq.tokens_.size()) >= seq.context_length_;
            if (ends || !kept) break;
        }
    } catch (const Error& err) {
        seq.tokens_.resize(static_cast<size_t>(n_before));
        release_from(seq, seq.n_cached_);
        trim_draft(seq, n_before);
        end_locked(req, StopReason::none, err.status(), sampling_failure(err));
        return;
    }
    // KV: the base token and the kept proposals are the sequence's tokens now; the
    // proposals after the first rejection (and the blocks reserved for them) are dropped.
    seq.n_cached_ = e.start + 1 + accepted;
    release_from(seq, seq.n_cached_);
    register_full_blocks(seq, e.start);
    trim_draft(seq, n_before + accepted);
    req.policy_->observe(true, static_cast<int64_t>(seq.tokens_.size()) - n_before, step_seconds_);
    if (log_enabled(LogLevel::debug))
        log(LogLevel::debug, "speculation: {} proposed (k {}), {} kept, acceptance estimate {:.2f}: {:.3f} ms, draft {} passes {:.3f} ms",
            m, e.k_max, accepted, req.policy_->acceptance(), step_seconds_ * 1e3, step_draft_passes_,
            step_draft_seconds_ * 1e3);
    req.policy_->record(static_cast<int32_t>(m), static_cast<int32_t>(accepted), req.cut_token_ >= 0);
    if (m > 0) {
        const SpeculationStats round{1, m, accepted};
        req.speculation += round;
        counters_.speculation += round;
    }
    for (auto i = static_cast<size_t>(n_before); i < seq.tokens_.size(); ++i)
        if (emit_locked(req, seq.tokens_[i], static_cast<int64_t>(i + 1))) break;
}

}  // namespace inlay
