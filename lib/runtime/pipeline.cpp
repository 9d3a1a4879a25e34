// Engine's pipelined steps: while step N runs on the device, the scheduler plans step
// N+1 and queues it behind N, each decoding sequence's next token fed on the device from
// N's chosen ids (BatchDesc::fed_rows), and only then waits for N's ids and applies them.
// The device never idles while the host plans, samples bookkeeping or streams tokens.
//
// What makes it safe:
//  - Only steady decoding is pipelined: every sequence of the step decodes a token chosen
//    where the logits are (greedy, or sampled without penalties, whose rows need no
//    history the host has not seen yet), none speculates, no request waits to be admitted
//    and none is cancelled. A sequence about to hit max_tokens or its context, or to pause
//    (its caller behind), sits the next step out. Anything else drains the pipeline: the
//    queued step is applied, then a normal step is planned (also when a running request
//    outside the pipeline could run again).
//  - The successor's blocks come from free (or evictable) blocks only: planning it never
//    preempts or releases a sequence that the running step still writes.
//  - A request that stops at step N (end of generation, an error) had step N+1 computed
//    for nothing: its entry is dropped when N+1 is applied (Request::done_). The block
//    each entry of N+1 writes is pinned (one more reference) until N+1's ids are back, so
//    however its sequence releases it meanwhile (the request's end, or the caller closing
//    or truncating the idle sequence), no other sequence or engine sharing the pool can
//    be given it while N+1 still writes it, and Engine::finish hands the request back to
//    its caller only once N+1 is done. What else N+1 reads of such a sequence may change
//    under it: only rows that are thrown away read it.
#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "core/log.h"
#include "runtime/engine.h"
#include "runtime/engine_entry.h"

namespace inlay {

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

bool resolve_pipelining(EngineOptions::Pipelining choice, bool executor_queues) {
    switch (choice) {
        case EngineOptions::Pipelining::always: return true;
        case EngineOptions::Pipelining::never: return false;
        case EngineOptions::Pipelining::automatic: break;
    }
    if (const char* env = std::getenv("INLAY_PIPELINING")) {
        const std::string_view v(env);
        if (v == "always") return true;
        if (v == "never") return false;
        if (!v.empty() && v != "auto")
            log(LogLevel::warn, "INLAY_PIPELINING='{}' is not always, never or auto: ignored", v);
    }
    return executor_queues;
}

bool Engine::pipelining() const { return pipelining_; }

bool Engine::pipelinable(const Entry& e) const {
    const Request& req = *e.req;
    if (req.kind != Request::Kind::generate || req.policy_ || !req.drafts_.empty() || e.drafts()) return false;
    if (!samples_token(e) || e.n_rows != 1 || !req.sampler_) return false;
    const Sampler& sampler = *req.sampler_;
    if (sampler.plain_argmax()) return true;
    return options_.sample_on_device && sampler.device_samplable() && !penalties_active(sampler.params());
}

bool Engine::plan_successor_locked(std::vector<Entry>& next, std::vector<BlockId>& pins) {
    std::vector<Entry>& prev = queued_.plan;
    if (queued_.status != INLAY_OK || !pipelining() || stop_ || !waiting_.empty() ||
        cap_changed_.load(std::memory_order_acquire))
        return false;
    auto queued = [&](const Request* r) {
        return std::any_of(prev.begin(), prev.end(), [&](const Entry& e) { return e.req.get() == r; });
    };
    // A running request outside the queued step that could run now is planned by a normal
    // step: drain (one that is paused, its caller behind, waits either way).
    for (const auto& r : running_)
        if (!queued(r.get()) && !paused(*r)) return false;
    // The queued step's requests that go on: not ended, not cancelled (reaped by a normal
    // turn), and not about to stop or pause with the token being computed (those simply
    // sit this step out).
    std::vector<Entry*> go;
    int64_t need = 0;
    for (Entry& e : prev) {
        const Request& req = *e.req;
        if (req.done_) continue;
        if (req.cancel_requested() || !pipelinable(e)) return false;
        const Sequence& seq = *req.seq_;
        // The length once e's token (not known yet) joins the sequence.
        const auto length = static_cast<int64_t>(seq.tokens_.size()) + 1;
        if (static_cast<int64_t>(req.generated.size()) + 1 >= req.max_tokens) continue;  // e's token is the last
        if (length >= seq.context_length_) continue;                                      // no room after it
        if (paused(req, 1)) continue;  // e's token pauses it
        need += Sequence::blocks_for(length, block_size_) - static_cast<int64_t>(seq.blocks_.size());
        go.push_back(&e);
    }
    if (go.empty() || pool_->available(owner_) < need) return false;
    for (Entry* e : go) {
        Sequence& seq = *e->req->seq_;
        const int64_t grow =
            Sequence::blocks_for(e->start + e->n + 1, block_size_) - static_cast<int64_t>(seq.blocks_.size());
        if (grow <= 0) continue;
        std::vector<BlockId> fresh;
        // available() counted them; should the pool still say no, the sequences already
        // extended keep their extra block until their entry's apply releases it.
        if (!pool_->allocate_n(owner_, grow, fresh)) return false;
        seq.blocks_.insert(seq.blocks_.end(), fresh.begin(), fresh.end());
    }
    next.clear();
    for (Entry* e : go) {
        Request& req = *e->req;
        const Sequence& seq = *req.seq_;
        Entry n;
        n.req = e->req;
        n.start = e->start + e->n;
        n.n = 1;
        n.n_rows = 1;
        n.fed_row = e->row;
        const BlockId written = seq.blocks_[static_cast<size_t>(n.start / block_size_)];
        pool_->retain(written);
        pins.push_back(written);
        {
            std::lock_guard rlock(req.mutex_);
            ++req.queued_steps_;
        }
        next.push_back(std::move(n));
        e->followed = true;
    }
    return true;
}

void Engine::launch_queued(std::vector<Entry>& plan, QueuedStep& step) {
    step.launched = Clock::now();
    build_batch(plan);
    plan_step_output(plan);
    step.status = INLAY_OK;
    step.error.clear();
    step.output = static_cast<int>(step_output_);
    step.n_rows = step_batch_.n_logit_rows();
    run_step_call(
        [&] {
            if (step_output_ == StepOutput::logits)
                fail(INLAY_ERR_INTERNAL, "a pipelined step must choose its tokens where the logits are");
            const SampleRows rows{step_rows_, step_penalties_};
            model_->executor().launch_step(pool_->store(), *workspace_, step_batch_.desc(),
                                           step_output_ == StepOutput::sampled ? &rows : nullptr);
        },
        step.status, step.error);
    step.plan = std::move(plan);
    step.active = true;
}

void Engine::finish_queued(QueuedStep& step, std::unique_lock<std::mutex>& lock) {
    if (step.status == INLAY_OK)
        run_step_call([&] { model_->executor().finish_step(*workspace_, step.n_rows, step_ids_.data()); },
                      step.status, step.error);
    release_queued(step);  // the step is done (or never ran): its blocks are free to go
    // A step's time: from when the device could start on it (its launch, or the end of
    // the step before it) to its ids.
    const auto now = Clock::now();
    step_seconds_ = std::chrono::duration<double>(now - std::max(step.launched, last_finish_)).count();
    last_finish_ = now;
    lock.lock();
    step_output_ = static_cast<StepOutput>(step.output);
    step_status_ = step.status;
    step_error_ = step.error;
    apply_locked(step.plan);
}

void Engine::release_queued(QueuedStep& step) {
    pool_->release_all(step.pinned);
    if (step.plan.empty() || step.plan.front().fed_row < 0) return;  // not a successor: nothing counted
    for (const Entry& e : step.plan) {
        {
            std::lock_guard rlock(e.req->mutex_);
            --e.req->queued_steps_;
        }
        e.req->cv_.notify_all();
    }
}

void Engine::pipeline_turn(std::unique_lock<std::mutex>& lock) {
    std::vector<Entry> next;
    std::vector<BlockId> pins;
    const bool more = plan_successor_locked(next, pins);
    lock.unlock();
    QueuedStep successor;
    if (more) {
        launch_queued(next, successor);
        successor.pinned = std::move(pins);
    }
    // queued_ is applied under the lock; its successor (if any) is on the device meanwhile.
    QueuedStep done = std::move(queued_);
    queued_ = QueuedStep{};
    finish_queued(done, lock);  // returns with the lock held
    if (more) {
        queued_ = std::move(successor);
        ++counters_.pipelined_steps;
    }
}

}  // namespace inlay
