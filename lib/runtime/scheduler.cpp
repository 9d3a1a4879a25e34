// Engine's scheduler thread: admission, step planning (decode tokens first, then
// prefill chunks, within the token and logit-row budgets), KV block reservation with
// copy-on-write, eviction and preemption, the forward pass, and sampling.
#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "core/log.h"
#include "core/utf8.h"
#include "runtime/engine.h"
#include "runtime/engine_entry.h"

namespace inlay {

namespace {

using Clock = std::chrono::steady_clock;

// Kind::logits returns rows for the input tokens only: positions [prompt_end - input, prompt_end).
int64_t first_logit_position(const Request& req, int64_t prompt_end) {
    return prompt_end - static_cast<int64_t>(req.input.size());
}

}  // namespace

bool Engine::paused(const Request& req, int64_t in_flight) const {
    return req.kind == Request::Kind::generate && (!req.generated.empty() || in_flight > 0) &&
           req.produced_.load(std::memory_order_acquire) + in_flight - req.taken() >= req.lookahead;
}

Request* Engine::youngest_running_after(const Request& req) const {
    for (auto it = running_.rbegin(); it != running_.rend(); ++it)
        if ((*it)->arrival_ > req.arrival_) return it->get();
    return nullptr;
}

void Engine::scheduler_loop() {
    std::vector<Entry> plan;
    std::unique_lock lock(mutex_);
    while (!stop_) {
        if (queued_.active) {  // a pipelined step runs: plan the next, then apply it
            pipeline_turn(lock);
            continue;
        }
        const uint64_t seen = events_;
        if (cap_changed_.exchange(false, std::memory_order_acq_rel)) enforce_cap_locked();
        reap_cancelled_locked();
        admit_locked();
        plan.clear();
        plan_locked(plan, lock);
        if (plan.empty()) {
            // Nothing can run: wait for a submit, a cancel, a caller catching up, a cap
            // change or a release (the timeout only bounds a missed wake-up).
            wake_.wait_for(lock, std::chrono::milliseconds(200), [&] { return stop_ || events_ != seen; });
            continue;
        }
        if (pipelining() && std::all_of(plan.begin(), plan.end(), [&](const Entry& e) { return pipelinable(e); })) {
            lock.unlock();
            launch_queued(plan, queued_);  // applied by the next turns, after its successor is queued
            lock.lock();
            continue;
        }
        lock.unlock();
        run_step(plan);
        lock.lock();
        apply_locked(plan);
    }
    if (queued_.active) {  // stopping: the device's last step is waited for, not applied
        lock.unlock();
        std::vector<int32_t> ids(static_cast<size_t>(options_.max_logit_rows));
        try {
            if (queued_.status == INLAY_OK)
                model_->executor().finish_step(*workspace_, queued_.n_rows, ids.data());
        } catch (const std::exception&) {
        }
        release_queued(queued_);
        queued_ = QueuedStep{};
    }
}

void Engine::reap_cancelled_locked() {
    std::vector<std::shared_ptr<Request>> cancelled;
    for (const auto& r : waiting_)
        if (r->cancel_requested()) cancelled.push_back(r);
    for (const auto& r : running_)
        if (r->cancel_requested()) cancelled.push_back(r);
    for (const auto& r : cancelled) end_locked(*r, StopReason::cancelled, INLAY_ERR_CANCELLED, "cancelled");
}

void Engine::admit_locked() {
    const int64_t bs = block_size_;
    while (!waiting_.empty() && static_cast<int64_t>(running_.size()) < options_.max_running) {
        std::shared_ptr<Request> req = waiting_.front();
        Sequence& seq = *req->seq_;
        if (!req->admitted_) {
            seq.tokens_.insert(seq.tokens_.end(), req->input.begin(), req->input.end());
            req->prompt_end_ = static_cast<int64_t>(seq.tokens_.size());
            req->admitted_ = true;
        }
        const auto n_tokens = static_cast<int64_t>(seq.tokens_.size());
        const bool wants_logits = req->kind == Request::Kind::generate ? req->max_tokens > 0 : !req->input.empty();
        if (seq.n_cached_ >= n_tokens) {
            if (!wants_logits || n_tokens == 0) {
                end_locked(*req, StopReason::none, INLAY_OK, "");
                continue;
            }
            // Everything is cached but the logits are needed: recompute the last token.
            release_from(seq, n_tokens - 1);
        }
        // Automatic prefix reuse: full blocks of the pending tokens (never the last token,
        // whose logits are needed) that the prefix cache holds.
        if (seq.n_cached_ % bs == 0 && static_cast<int64_t>(seq.blocks_.size()) == seq.n_cached_ / bs) {
            while (seq.n_cached_ + bs <= n_tokens - 1) {
                const BlockId parent = seq.blocks_.empty() ? -1 : seq.blocks_.back();
                const auto hit = pool_->lookup(
                    owner_, parent, std::span<const int32_t>(seq.tokens_.data() + seq.n_cached_, static_cast<size_t>(bs)));
                if (!hit) break;
                seq.blocks_.push_back(*hit);
                seq.n_cached_ += bs;
                req->reuse_pending_ += bs;
            }
        }
        // Blocks for the first chunk, with one block of headroom per running sequence so
        // that admitting does not immediately force a preemption.
        const int64_t chunk = std::min(n_tokens - seq.n_cached_, options_.step_tokens);
        const int64_t need = Sequence::blocks_for(seq.n_cached_ + chunk, bs) -
                             static_cast<int64_t>(seq.blocks_.size()) + (seq.n_cached_ % bs != 0 ? 1 : 0);
        const int64_t want = need + static_cast<int64_t>(running_.size());
        if (pool_->available(owner_) < want) release_idle_locked(want);
        if (pool_->available(owner_) < want && !running_.empty()) break;  // wait for memory
        // Alone (or with room): admit; reserve() fails it with KV_FULL if nothing fits.
        // Reuse counts once admitted: a request that waits may lose (and find again) its
        // prefix blocks several times.
        req->reused += req->reuse_pending_;
        counters_.prefix_tokens_reused += req->reuse_pending_;
        req->reuse_pending_ = 0;
        waiting_.pop_front();
        const auto pos = std::upper_bound(running_.begin(), running_.end(), req,
                                          [](const auto& a, const auto& b) { return a->arrival_ < b->arrival_; });
        running_.insert(pos, req);
    }
}

void Engine::plan_locked(std::vector<Entry>& plan, std::unique_lock<std::mutex>& lock) {
    int64_t budget = options_.step_tokens;
    int64_t rows = options_.max_logit_rows;
    spec_tokens_planned_ = 0;
    for (const auto& ctx : drafts_) ctx->planned_tokens = 0;
    // Decode tokens first (one each, lowest latency), then prefill chunks, oldest first.
    std::vector<std::shared_ptr<Request>> order;
    for (const auto& r : running_)
        if (static_cast<int64_t>(r->seq_->tokens_.size()) - r->seq_->n_cached_ == 1) order.push_back(r);
    const auto n_decode = static_cast<int64_t>(order.size());
    for (const auto& r : running_)
        if (static_cast<int64_t>(r->seq_->tokens_.size()) - r->seq_->n_cached_ != 1) order.push_back(r);

    for (const auto& req : order) {
        if (budget <= 0) break;
        // A preemption during this loop may have sent it back to waiting, or ended it.
        if (std::find(running_.begin(), running_.end(), req) == running_.end()) continue;
        if (paused(*req)) continue;
        const Sequence& seq = *req->seq_;
        const auto n_tokens = static_cast<int64_t>(seq.tokens_.size());
        int64_t n = std::min(n_tokens - seq.n_cached_, budget);
        if (n <= 0) continue;
        Entry e;
        e.req = req;
        e.start = seq.n_cached_;
        if (req->kind == Request::Kind::logits) {
            e.first_logit_pos = first_logit_position(*req, req->prompt_end_);
            const int64_t first = std::max(e.start, e.first_logit_pos);
            // Rows for input tokens in this chunk; shorten the chunk to the rows left.
            if (e.start + n > first) {
                if (rows <= 0) continue;
                n = std::min(n, first - e.start + rows);
                e.n_rows = e.start + n - first;
            }
        } else if (e.start + n == n_tokens && req->max_tokens > 0) {
            if (rows <= 0) continue;
            e.n_rows = 1;
        }
        e.n = n;
        if (!reserve_locked(*req, n, plan, lock)) continue;
        // A decoding sequence that speculates: its proposals ride along with its token.
        if (e.n == 1 && e.n_rows == 1 && e.start + 1 == n_tokens) plan_speculation_locked(e, budget, rows, n_decode);
        plan.push_back(std::move(e));
        // Recount: a preemption may have removed earlier entries.
        budget = options_.step_tokens;
        rows = options_.max_logit_rows;
        for (const Entry& p : plan) {
            budget -= p.n + p.k_max;
            rows -= p.n_rows + p.k_max;
        }
    }
}

bool Engine::reserve_locked(Request& req, int64_t n, std::vector<Entry>& plan, std::unique_lock<std::mutex>& lock) {
    Sequence& seq = *req.seq_;
    const int64_t bs = block_size_;
    bool signalled = false;
    const Executor& ex = model_->executor();
    for (;;) {
        const bool cow = seq.n_cached_ % bs != 0 && !pool_->writable(seq.blocks_.back());
        const int64_t grow = Sequence::blocks_for(seq.n_cached_ + n, bs) - static_cast<int64_t>(seq.blocks_.size());
        const int64_t need = grow + (cow ? 1 : 0);
        if (need <= 0) return true;
        std::vector<BlockId> fresh;
        if (pool_->allocate_n(owner_, need, fresh)) {
            if (cow) {
                // Copy-on-write: the partly filled last block is shared (a fork) or cached.
                const BlockId old = seq.blocks_.back();
                ex.copy_block(pool_->store(), old, fresh.back());
                seq.blocks_.back() = fresh.back();
                fresh.pop_back();
                pool_->release(old);
            }
            seq.blocks_.insert(seq.blocks_.end(), fresh.begin(), fresh.end());
            return true;
        }
        if (release_idle_locked(need) > 0) continue;
        if (!signalled && pool_->held_by_others(owner_) > 0) {
            // Other engines of a shared pool may hold idle KV: ask them (without our lock,
            // so two engines asking each other cannot deadlock).
            signalled = true;
            lock.unlock();
            pool_->signal_pressure(owner_);
            lock.lock();
            continue;
        }
        if (Request* victim = youngest_running_after(req)) {
            plan.erase(std::remove_if(plan.begin(), plan.end(), [&](const Entry& e) { return e.req.get() == victim; }),
                       plan.end());
            preempt_locked(*victim);
            continue;
        }
        if (running_.size() > 1) {  // the youngest waits for older ones to finish
            preempt_locked(req);
            return false;
        }
        ++counters_.kv_full_failures;
        end_locked(req, StopReason::none, INLAY_ERR_KV_FULL,
                   fmt::format("the KV cache is full: this sequence needs {} more block(s) of {} tokens for {} "
                               "tokens, and no other sequence of this model can give way ({} blocks in the pool, "
                               "{} held here, cap {})",
                               need, bs, seq.n_cached_ + n, pool_->n_blocks(), pool_->held(owner_),
                               pool_->cap(owner_)));
        return false;
    }
}

void Engine::preempt_locked(Request& req) {
    Sequence& seq = *req.seq_;
    pool_->release_all(seq.blocks_);
    seq.n_cached_ = 0;
    trim_draft(seq, seq.draft_cached_);  // blocks reserved for this step's drafting
    const auto it = std::find_if(running_.begin(), running_.end(), [&](const auto& r) { return r.get() == &req; });
    if (it == running_.end()) return;
    std::shared_ptr<Request> keep = *it;
    running_.erase(it);
    const auto pos = std::upper_bound(waiting_.begin(), waiting_.end(), keep,
                                      [](const auto& a, const auto& b) { return a->arrival_ < b->arrival_; });
    waiting_.insert(pos, keep);
    ++req.preemptions;
    ++counters_.preemptions;
}

int64_t Engine::release_idle_locked(int64_t want) {
    int64_t released = 0;
    auto enough = [&] { return want >= 0 && pool_->available(owner_) >= want; };
    if (enough()) return 0;
    // Idle sequences, least recently used first.
    std::vector<Sequence*> idle;
    for (const auto& s : sequences_)
        if (!s->active_ && !s->blocks_.empty()) idle.push_back(s.get());
    std::sort(idle.begin(), idle.end(), [](const Sequence* a, const Sequence* b) { return a->last_used_ < b->last_used_; });
    for (Sequence* s : idle) {
        released += static_cast<int64_t>(s->blocks_.size());
        release_from(*s, 0);
        if (enough()) return released;
    }
    // Then queued requests' old KV, youngest first (they hold it but are not running).
    for (auto it = waiting_.rbegin(); it != waiting_.rend(); ++it) {
        Sequence& s = *(*it)->seq_;
        if (s.blocks_.empty()) continue;
        released += static_cast<int64_t>(s.blocks_.size());
        release_waiting_locked(**it);
        if (enough()) return released;
    }
    return released;
}

void Engine::release_waiting_locked(Request& req) {
    release_from(*req.seq_, 0);
    req.reuse_pending_ = 0;  // its prefix blocks are gone: admission finds (and counts) them anew
}

void Engine::enforce_cap_locked() {
    const int64_t cap = pool_->cap(owner_);
    if (cap == 0) return;
    auto over = [&] { return pool_->held(owner_) > cap; };
    std::vector<Sequence*> idle;
    for (const auto& s : sequences_)
        if (!s->active_ && !s->blocks_.empty()) idle.push_back(s.get());
    std::sort(idle.begin(), idle.end(), [](const Sequence* a, const Sequence* b) { return a->last_used_ < b->last_used_; });
    for (Sequence* s : idle) {
        if (!over()) return;
        release_from(*s, 0);
    }
    for (auto it = waiting_.rbegin(); it != waiting_.rend() && over(); ++it) release_waiting_locked(**it);
    while (over() && running_.size() > 1) preempt_locked(*running_.back());
}

void Engine::register_full_blocks(Sequence& seq, int64_t from_tokens) {
    const int64_t bs = block_size_;
    for (int64_t i = from_tokens / bs; i < seq.n_cached_ / bs; ++i) {
        const BlockId block = seq.blocks_[static_cast<size_t>(i)];
        if (pool_->is_cached(block)) continue;
        const BlockId parent = i > 0 ? seq.blocks_[static_cast<size_t>(i - 1)] : -1;
        if (!pool_->register_full(owner_, parent, block,
                                  std::span<const int32_t>(seq.tokens_.data() + i * bs, static_cast<size_t>(bs))))
            return;  // the chain is broken (a duplicate or an uncached parent): later blocks cannot key
    }
}

bool Engine::samples_token(const Entry& e) {
    const Request& req = *e.req;
    const Sequence& seq = *req.seq_;
    // A fed token is the sequence's last, though the host may not have it yet (pipelined).
    const int64_t n_tokens = e.fed_row >= 0 ? e.start + e.n : static_cast<int64_t>(seq.tokens_.size());
    return req.kind == Request::Kind::generate && req.drafts_.empty() && req.sampler_ && e.n_rows > 0 &&
           e.start + e.n == n_tokens && req.max_tokens != 0 && n_tokens < seq.context_length_;
}

void Engine::plan_step_output(std::vector<Entry>& plan) {
    // Ids alone come back when the device can choose every row's token (a GPU then sends
    // a few bytes per sequence instead of n_vocab floats): argmax when every row is plain
    // greedy (a greedy verification of proposals included: it compares each row's argmax
    // with the proposal), sample_rows when every row's chain allows it.
    bool argmax = true, device = options_.sample_on_device;
    for (Entry& e : plan) {
        e.device_sampled = false;
        if (e.n_rows == 0) continue;
        const Request& req = *e.req;
        const bool generates = req.kind == Request::Kind::generate && req.sampler_;
        if (!(generates && req.sampler_->plain_argmax())) argmax = false;
        if (!(generates && req.drafts_.empty() && req.sampler_->device_samplable())) device = false;
    }
    step_output_ = argmax ? StepOutput::argmax : StepOutput::logits;
    if (argmax || !device) return;
    // Every row gets a description (greedy for rows whose entry samples nothing); only
    // the rows that sample consume a random number, as sample() would.
    step_rows_.assign(static_cast<size_t>(step_batch_.n_logit_rows()), RowSampling{});
    step_penalties_.clear();
    try {
        for (Entry& e : plan) {
            if (!samples_token(e)) continue;
            Request& req = *e.req;
            const auto begin = static_cast<int64_t>(step_penalties_.size());
            req.sampler_->device_penalties(req.seq_->tokens_, step_penalties_);
            step_rows_[static_cast<size_t>(e.row)].penalty_begin = static_cast<int32_t>(begin);
            step_rows_[static_cast<size_t>(e.row)].penalty_count =
                static_cast<int32_t>(static_cast<int64_t>(step_penalties_.size()) - begin);
            if (static_cast<int64_t>(step_penalties_.size()) > kMaxSamplePenalties) return;  // the host samples
        }
    } catch (const Error&) {
        return;  // a bad history: the host's sample() reports it for its request
    }
    for (Entry& e : plan) {
        if (!samples_token(e)) continue;
        RowSampling& row = step_rows_[static_cast<size_t>(e.row)];
        row = e.req->sampler_->device_row(row.penalty_begin, row.penalty_count);
        e.device_sampled = true;
    }
    step_output_ = StepOutput::sampled;
}

void Engine::build_batch(std::vector<Entry>& plan) {
    BatchBuilder& batch = step_batch_;
    batch.clear();
    for (Entry& e : plan) {
        Request& req = *e.req;
        const Sequence& seq = *req.seq_;
        if (e.fed_row >= 0) {  // a pipelined decode token: the step before chose it on the device
            const int32_t s = batch.add_sequence(seq.blocks_, e.start + 1);
            e.row = batch.n_logit_rows();
            batch.add_fed_token(static_cast<int32_t>(e.fed_row), static_cast<int32_t>(e.start), s, true);
            continue;
        }
        std::span<const int32_t> tokens =
            std::span<const int32_t>(seq.tokens_).subspan(static_cast<size_t>(e.start), static_cast<size_t>(e.n));
        if (!req.drafts_.empty()) {
            // The base token and its proposals, each with a logit row.
            req.verify_.assign(1, seq.tokens_.back());
            req.verify_.insert(req.verify_.end(), req.drafts_.begin(), req.drafts_.end());
            tokens = req.verify_;
            e.n_rows = static_cast<int64_t>(tokens.size());
        }
        const auto n = static_cast<int64_t>(tokens.size());
        const int32_t s = batch.add_sequence(seq.blocks_, e.start + n);
        if (e.n_rows > 0) e.row = batch.n_logit_rows();
        batch.add_tokens(s, tokens, e.start, e.n_rows);
    }
}

void Engine::run_step(std::vector<Entry>& plan) {
    // Built without the lock: the planned sequences belong to this thread until apply.
    const auto t_draft = Clock::now();
    draft_step(plan);
    const double draft_seconds = std::chrono::duration<double>(Clock::now() - t_draft).count();
    build_batch(plan);
    const BatchBuilder& batch = step_batch_;
    plan_step_output(plan);
    const auto t0 = Clock::now();
    step_status_ = INLAY_OK;
    step_error_.clear();
    run_step_call(
        [&] {
            const Executor& ex = model_->executor();
            switch (step_output_) {
            case StepOutput::argmax: ex.step_argmax(pool_->store(), *workspace_, batch.desc(), step_ids_.data()); break;
            case StepOutput::sampled:
                ex.step_sample(pool_->store(), *workspace_, batch.desc(), SampleRows{step_rows_, step_penalties_},
                               step_ids_.data());
                break;
            case StepOutput::logits: ex.step(pool_->store(), *workspace_, batch.desc(), step_logits_.data()); break;
            }
        },
        step_status_, step_error_);
    step_seconds_ = std::chrono::duration<double>(Clock::now() - t0).count();
    if (step_status_ == INLAY_OK) step_cost_.add(batch.n_tokens(), step_seconds_);
    step_seconds_ += draft_seconds;  // the step's time includes its drafting
}

void Engine::apply_locked(std::vector<Entry>& plan) {
    const auto t0 = Clock::now();
    const int64_t n_vocab = model_->spec().n_vocab;
    for (Entry& e : plan) {
        Request& req = *e.req;
        if (req.done_) continue;  // ended by the step before (pipelined): this step computed it for nothing
        Sequence& seq = *req.seq_;
        if (step_status_ != INLAY_OK) {
            release_from(seq, seq.n_cached_);
            trim_draft(seq, static_cast<int64_t>(seq.tokens_.size()));
            end_locked(req, StopReason::none, step_status_, step_error_);
            continue;
        }
        const bool decode = e.n == 1 && e.start >= req.prompt_end_;
        if (!decode) counters_.tokens_prefilled += e.n;
        if (req.generated.empty()) req.prefilled += e.n;
        if (!req.drafts_.empty()) {
            verify_locked(e);
            continue;
        }
        seq.n_cached_ = e.start + e.n;
        // Blocks reserved for proposals that did not come; a queued successor's stay.
        if (!e.followed) release_from(seq, seq.n_cached_);
        register_full_blocks(seq, e.start);
        if (e.drafts()) trim_draft(seq, static_cast<int64_t>(seq.tokens_.size()));
        const auto n_tokens = static_cast<int64_t>(seq.tokens_.size());

        if (req.kind == Request::Kind::logits) {
            if (e.n_rows > 0) {
                const int64_t first = e.start + e.n - e.n_rows;
                req.logits.resize(req.input.size() * static_cast<size_t>(n_vocab));
                std::copy_n(step_logits_.data() + e.row * n_vocab, e.n_rows * n_vocab,
                            req.logits.data() + (first - e.first_logit_pos) * n_vocab);
            }
            if (seq.n_cached_ == n_tokens) end_locked(req, StopReason::none, INLAY_OK, "");
            continue;
        }
        if (seq.n_cached_ < n_tokens) continue;  // more prompt to go
        if (req.max_tokens == 0 || e.n_rows == 0) {
            end_locked(req, StopReason::none, INLAY_OK, "");
            continue;
        }
        if (n_tokens >= seq.context_length_) {  // the input filled the context: no room for a token
            end_locked(req, StopReason::context_full, INLAY_OK, "");
            continue;
        }
        int32_t token = -1;
        try {
            const int32_t id = step_ids_[static_cast<size_t>(e.row)];
            switch (step_output_) {
            case StepOutput::argmax: token = req.sampler_->from_argmax(id); break;
            case StepOutput::sampled:
                if (!e.device_sampled) fail(INLAY_ERR_INTERNAL, "a step sampled on the device skipped a sampling row");
                token = req.sampler_->from_device(id);
                break;
            case StepOutput::logits:
                token = req.sampler_->sample(
                    std::span<const float>(step_logits_.data() + e.row * n_vocab, static_cast<size_t>(n_vocab)),
                    seq.tokens_);
                break;
            }
        } catch (const Error& err) {
            end_locked(req, StopReason::none, err.status(), sampling_failure(err));
            continue;
        }
        // The draft was unsure of its first token and proposed nothing: was it right?
        learn_from_cut(req, token,
                       step_output_ == StepOutput::logits
                           ? std::span<const float>(step_logits_.data() + e.row * n_vocab, static_cast<size_t>(n_vocab))
                           : std::span<const float>());
        seq.tokens_.push_back(token);
        // A decode step without proposals is what speculation is compared with (one whose
        // drafting proposed nothing counts as speculating: it paid for the draft).
        if (req.policy_ && e.n == 1 && e.start >= req.prompt_end_) {
            req.policy_->observe(e.drafts(), 1, step_seconds_);
            if (req.cut_token_ >= 0) req.policy_->record(0, 0, true);
            if (log_enabled(LogLevel::debug))
                log(LogLevel::debug, "speculation: {} step, nothing proposed (k {}, catch-up {}): {:.3f} ms, draft {} passes {:.3f} ms",
                    e.drafts() ? "drafting" : "plain", e.k_max, e.draft_catchup, step_seconds_ * 1e3,
                    step_draft_passes_, step_draft_seconds_ * 1e3);
        }
        emit_locked(req, token, static_cast<int64_t>(seq.tokens_.size()));
    }
    const double seconds = step_seconds_ + std::chrono::duration<double>(Clock::now() - t0).count();
    ++counters_.steps;
    if (step_output_ == StepOutput::argmax) ++counters_.argmax_steps;
    if (step_output_ == StepOutput::sampled) ++counters_.sampled_steps;
    counters_.step_seconds_total += seconds;
    counters_.step_seconds_last = seconds;
    counters_.step_seconds_max = std::max(counters_.step_seconds_max, seconds);
    counters_.draft_passes += step_draft_passes_;
    counters_.draft_seconds += step_draft_seconds_;
}

bool Engine::emit_locked(Request& req, int32_t token, int64_t length) {
    const Sequence& seq = *req.seq_;
    if (req.generated.empty()) req.first_token = Clock::now();
    req.generated.push_back(token);
    ++counters_.tokens_generated;
    {
        std::lock_guard qlock(req.mutex_);
        req.queue_.push_back(token);
    }
    req.produced_.fetch_add(1, std::memory_order_acq_rel);
    req.cv_.notify_all();
    StopReason reason = StopReason::none;
    if (!req.ignore_eos && model_->tokenizer().is_eog(token)) reason = StopReason::end_of_generation;
    else if (static_cast<int64_t>(req.generated.size()) >= req.max_tokens) reason = StopReason::max_tokens;
    else if (length >= seq.context_length_) reason = StopReason::context_full;
    if (reason == StopReason::none) return false;
    end_locked(req, reason, INLAY_OK, "");
    return true;
}

std::string Engine::sampling_failure(const Error& err) const {
    if (err.status() != INLAY_ERR_BAD_WEIGHTS) return err.what();
    const std::string& name = model_->name();
    return fmt::format("model {}{}: {}", utf8::quoted(model_->source()),
                       name.empty() ? "" : fmt::format(" ({})", utf8::quoted(name)), err.what());
}

void Engine::end_locked(Request& req, StopReason reason, inlay_status status, std::string error) {
    req.done_ = true;
    req.reason = reason;
    req.status = status;
    req.error = std::move(error);
    req.ended = Clock::now();
    std::shared_ptr<Request> keep;
    auto drop = [&](auto& container) {
        const auto it = std::find_if(container.begin(), container.end(), [&](const auto& r) { return r.get() == &req; });
        if (it != container.end()) {
            keep = *it;
            container.erase(it);
        }
    };
    drop(running_);
    drop(waiting_);
    Sequence& seq = *req.seq_;
    release_from(seq, seq.n_cached_);  // drop blocks reserved beyond what was computed
    trim_draft(seq, seq.draft_cached_);
    seq.active_ = false;
    seq.last_used_ = ++clock_;
    if (running_.empty() && waiting_.empty())
        counters_.busy_seconds += std::chrono::duration<double>(Clock::now() - busy_since_).count();
    {
        std::lock_guard qlock(req.mutex_);
        req.ended_ = true;
    }
    req.cv_.notify_all();
}

}  // namespace inlay
