// Request: one generate (or teacher-forced logits) call handed to an Engine, and the
// per-request queue through which the scheduler thread hands tokens back to the caller.
//
// The caller fills the inputs, Engine::submit()s it, then reads tokens with next() on
// its own thread (so its callbacks never run on the scheduler thread), and finally calls
// Engine::finish() before reading the results. The scheduler samples at most `lookahead`
// tokens ahead of what the caller has taken, so a slow caller only pauses itself.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "inlay/inlay.h"
#include "runtime/speculation.h"
#include "sampling/sampler.h"
#include "sampling/sampling_params.h"
#include "speculative/draft_policy.h"

namespace inlay {

enum class StopReason { none, end_of_generation, max_tokens, stop_string, callback, cancelled, context_full };

class Sequence;

class Request {
public:
    enum class Kind {
        generate,  // evaluate the input, then sample up to max_tokens tokens
        logits,    // evaluate the input and return the logits after each input token
    };
    using Clock = std::chrono::steady_clock;

    // --- inputs: set before Engine::submit, not changed afterwards ---------------------
    Kind kind = Kind::generate;
    std::vector<int32_t> input;       // appended to the sequence
    SamplingParams sampling;
    int32_t max_tokens = 0;
    bool ignore_eos = false;
    int32_t lookahead = 4;            // >= 1

    // Blocks until the next token is available; nullopt once the request has ended or
    // cancel() was called (queued tokens are then dropped). Caller thread only.
    std::optional<int32_t> next();
    // Blocks until the request has ended or cancel was requested. Caller thread.
    void wait();
    // Tokens taken through next() so far.
    [[nodiscard]] int64_t taken() const { return taken_.load(std::memory_order_acquire); }
    [[nodiscard]] bool cancel_requested() const { return cancel_.load(std::memory_order_acquire); }

    // --- results: valid after Engine::finish ------------------------------------------
    StopReason reason = StopReason::none;
    inlay_status status = INLAY_OK;   // INLAY_ERR_KV_FULL, INLAY_ERR_CANCELLED, ... with `error`
    std::string error;
    std::vector<int32_t> generated;   // every token sampled (finish() may keep fewer)
    std::vector<float> logits;        // Kind::logits: input.size() * n_vocab
    int64_t prefilled = 0;            // tokens computed before the first sample
    int64_t reused = 0;               // prompt tokens whose KV came from the prefix cache
    int64_t preemptions = 0;
    SpeculationStats speculation;     // proposals checked and kept (speculating sequences)
    Clock::time_point submitted{}, first_token{}, ended{};

private:
    friend class Engine;

    // Scheduler side (engine thread; under the engine mutex unless noted).
    Sequence* seq_ = nullptr;
    uint64_t arrival_ = 0;         // submit order: larger is younger
    int64_t prompt_end_ = 0;       // sequence length after the input was appended
    bool admitted_ = false;
    bool done_ = false;            // ended (end_locked): a pipelined step's entry for it is dropped
    bool counted_prefill_ = false;
    int64_t reuse_pending_ = 0;    // prefix-cache tokens found while still waiting
    std::unique_ptr<Sampler> sampler_;
    // Speculation (scheduler thread): how many to propose, the draft's own sampler (same
    // params, another seed), and this step's proposals with the distributions they were
    // drawn from (draft model, sampling) and the verified chunk (last token + proposals);
    // which proposals the draft was unsure of (under p_min), and the unsure token it cut
    // off at, if any (its position is the one after the proposals).
    DraftPolicy* policy_ = nullptr;  // the sequence's
    std::unique_ptr<Sampler> draft_sampler_;
    std::vector<int32_t> drafts_;
    std::vector<char> draft_unsure_;
    // Drafting stopped at this token, under p_min (-1: it did not); when sampled, its
    // distribution is draft_q_[drafts_.size()].
    int32_t cut_token_ = -1;
    std::vector<TokenDistribution> draft_q_;
    std::vector<int32_t> verify_;
    TokenDistribution target_p_;
    std::atomic<int64_t> produced_{0};

    // Shared with the caller.
    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<int32_t> queue_;
    bool ended_ = false;           // under mutex_: the scheduler is done with the request
    int queued_steps_ = 0;         // under mutex_: pipelined steps queued with an entry for it,
                                   // still writing its KV (Engine::finish waits for them)
    std::atomic<bool> cancel_{false};
    std::atomic<int64_t> taken_{0};
    std::function<void()> on_taken_;  // wakes the scheduler when the caller catches up
};

}  // namespace inlay
