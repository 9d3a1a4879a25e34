// Engine: continuous batching for one loaded model over a paged KV block pool.
//
// A scheduler thread runs steps. Each step is ONE forward pass over a ragged batch made
// of the next token of every running sequence that is decoding plus prefill chunks of
// those still evaluating their input, within a per-step token budget (chunked prefill:
// a long prompt never stalls the others). After the pass, each sequence whose input is
// done samples its next token with its own Sampler and hands it to its caller's queue.
// Numerics do not depend on the batch: every matmul row and every attention row reads
// only its own token and its own sequence's blocks, so a sequence's tokens are the same
// alone or among many (tests check this bit for bit).
//
// KV memory (KvBlockPool): fixed-size blocks, reference-counted; full blocks enter a
// prefix cache keyed by the token content up to their end, so a new prompt that starts
// like an earlier one reuses those blocks instead of computing them; forks share blocks
// and copy a shared block before writing into it (copy-on-write).
//
// When blocks run out the engine, in order: evicts unreferenced cached blocks (the pool
// does), releases the KV of idle sequences (least recently used first; they recompute
// or re-find it in the prefix cache on their next turn), asks the other engines of a
// shared pool to do the same, then preempts running sequences, youngest first (their
// blocks are released; they wait and later recompute their tokens, which gives the same
// KV). A sequence that cannot get a block while it is the only one running fails with
// INLAY_ERR_KV_FULL. Blocks held by other engines' running sequences are never taken.
//
// Speculative decoding (runtime/speculation.h): a sequence set to speculate gets draft
// tokens proposed in its decode steps and verified in the same forward pass as everyone
// else's tokens; how many is adapted per request (speculative/draft_policy.h) from its
// acceptance and from what passes cost here (learnt from the passes this engine runs).
//
// Thread-safety: every public method may be called from any thread. Methods on an idle
// sequence (fork, reset, truncate, snapshot, restore) require that no request of that
// sequence is running (the Session enforces it).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/zeroed_array.h"
#include "model/model.h"
#include "runtime/kv_block_pool.h"
#include "runtime/request.h"
#include "runtime/sequence.h"

namespace inlay {

struct EngineOptions {
    int64_t step_tokens = 512;    // tokens per forward pass (decode tokens + prefill chunks)
    int64_t max_running = 64;     // sequences in one step at most
    int64_t max_logit_rows = 128; // logit rows per step (decode rows + logits requests)
    // Sample on the device that holds the logits when every row of a step allows it
    // (Sampler::device_samplable): only token ids come back. Off: logits come back and
    // the host samples (the same tokens: the tests compare both).
    bool sample_on_device = true;
    // Pipelined steps: while step N runs on the device, step N+1 is planned and queued
    // behind it, its decode tokens fed from step N's ids on the device, so the device
    // does not wait for the host between steps. It applies to steps whose every sequence
    // decodes with a token chosen where the logits are (greedy, or sampled without
    // penalties) and not speculating, with nothing waiting to be admitted; a request that
    // stops at step N had step N+1 computed for nothing. automatic: where the executor
    // queues steps (Executor::queues_steps: a GPU); always: also on the CPU, where it
    // gains nothing (tests use it to check the same tokens come out); never: off.
    // automatic follows the environment variable INLAY_PIPELINING (always, never, auto)
    // when it is set.
    enum class Pipelining { automatic, always, never };
    Pipelining pipelining = Pipelining::automatic;
};

// Whether an engine with `choice` pipelines on an executor that does or does not queue
// its steps (reads INLAY_PIPELINING for automatic).
[[nodiscard]] bool resolve_pipelining(EngineOptions::Pipelining choice, bool executor_queues);

// Counters since the engine started, and the state now.
struct EngineMetrics {
    KvBlockPool::Stats blocks;        // the whole pool (all engines sharing it)
    int64_t blocks_held = 0;          // referenced by this engine's sequences
    int64_t block_cap = 0;            // this engine's cap in the pool (0: none)
    int64_t block_size = 0;
    int64_t sequences = 0;            // open sequences (sessions)
    int64_t running = 0;
    int64_t waiting = 0;
    int64_t preemptions = 0;          // sequences preempted so far
    int64_t kv_full_failures = 0;
    int64_t tokens_prefilled = 0;     // prompt tokens computed (recomputation included)
    int64_t tokens_generated = 0;     // tokens sampled
    int64_t prefix_tokens_reused = 0; // prompt tokens found in the prefix cache
    int64_t steps = 0;
    int64_t argmax_steps = 0;         // steps whose rows were all plain greedy: ids came back, not logits
    int64_t sampled_steps = 0;        // steps sampled where the logits are (sample_rows): ids came back
    int64_t pipelined_steps = 0;      // steps planned and queued while the step before was running
    double step_seconds_total = 0.0;  // forward passes, sampling included
    double step_seconds_max = 0.0;
    double step_seconds_last = 0.0;
    double busy_seconds = 0.0;        // wall time with at least one request running
    SpeculationStats speculation;     // every speculating request's proposals and acceptances
    int64_t draft_passes = 0;         // forward passes of draft models
    double draft_seconds = 0.0;       // their time
};

// Bytes and tokens of a sequence image (save/restore): tokens, n_cached and the KV of
// blocks_for(n_cached) blocks in the canonical layout, slots past n_cached zeroed.
struct SequenceImage {
    std::vector<int32_t> tokens;
    int64_t n_cached = 0;
    int64_t block_size = 0;
    size_t block_bytes = 0;
    std::vector<std::byte> kv;
};

class Engine {
public:
    // Starts the scheduler thread. The pool's geometry must be the model's KV geometry
    // (same device). The engine registers itself as an owner of the pool.
    Engine(std::shared_ptr<const Model> model, std::shared_ptr<KvBlockPool> pool, const EngineOptions& options);
    // Stops the scheduler. All sequences must have been closed.
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    [[nodiscard]] const Model& model() const { return *model_; }
    [[nodiscard]] const std::shared_ptr<const Model>& model_ptr() const { return model_; }
    [[nodiscard]] KvBlockPool& pool() const { return *pool_; }
    [[nodiscard]] const EngineOptions& options() const { return options_; }

    // Sequences. open: empty, with the given token limit. close: releases its blocks
    // (it must be idle). fork: a new idle sequence sharing all of `source`'s tokens and
    // blocks (source idle).
    Sequence* open(int64_t context_length);
    void close(Sequence* seq);
    Sequence* fork(Sequence& source);
    // Idle sequences: forget everything / keep the first n tokens.
    void reset(Sequence& seq);
    void truncate(Sequence& seq, int64_t n_tokens);
    [[nodiscard]] int64_t n_cached(const Sequence& seq) const;
    // How an idle sequence's later generate requests speculate (Mode::none: they do not).
    // A draft model is checked against this model's vocabulary (INLAY_ERR_INVALID_ARGUMENT
    // naming the difference) and gets a KV pool of its own in this engine, made on first
    // use, with as many token slots as this engine's pool (INLAY_ERR_KV_FULL or
    // INLAY_ERR_OUT_OF_MEMORY when that cannot be had). Forks inherit the setting.
    void set_speculation(Sequence& seq, const SpeculationOptions& options);
    // The sequence's tokens and KV (idle). Blocks are pinned while being read.
    [[nodiscard]] SequenceImage snapshot(Sequence& seq);
    // Replaces an idle sequence's tokens and KV with an image of the same geometry
    // (INLAY_ERR_KV_FULL if its blocks cannot be had without preempting running ones).
    void restore(Sequence& seq, const SequenceImage& image);

    // Requests. submit: queues it for `seq` (idle; becomes active). cancel: any thread.
    // finish: waits until the scheduler is done with it, then keeps only the first
    // `keep` generated tokens in the sequence (keep < 0: all). Caller thread.
    void submit(Sequence& seq, const std::shared_ptr<Request>& request);
    void cancel(Request& request);
    void finish(Request& request, int64_t keep);

    // Caps the blocks this engine may hold in its pool (0: none); lowering it makes the
    // engine release idle KV and preempt until it fits.
    void set_block_cap(int64_t max_blocks);
    [[nodiscard]] EngineMetrics metrics() const;

private:
    struct Entry;  // one sequence's part of a step
    struct Pressure;
    // A step queued on the executor (pipelined) and not yet applied: its plan and what
    // apply_locked needs of it.
    struct QueuedStep {
        std::vector<Entry> plan;
        bool active = false;
        int output = 0;  // StepOutput
        int64_t n_rows = 0;  // its logit rows (one id each)
        inlay_status status = INLAY_OK;
        std::string error;
        std::chrono::steady_clock::time_point launched{};
        std::vector<BlockId> pinned;  // blocks its entries write, held until it is done
    };

    void scheduler_loop();
    bool has_work_locked() const;
    void reap_cancelled_locked();
    void admit_locked();
    void plan_locked(std::vector<Entry>& plan, std::unique_lock<std::mutex>& lock);
    bool reserve_locked(Request& req, int64_t n, std::vector<Entry>& plan, std::unique_lock<std::mutex>& lock);
    // The step's batch (step_batch_) from its plan; sets each entry's first logit row.
    void build_batch(std::vector<Entry>& plan);
    void run_step(std::vector<Entry>& plan);
    // Chooses the step's output (StepOutput) and, to sample on the device, describes every
    // logit row and draws the rows' random numbers.
    void plan_step_output(std::vector<Entry>& plan);
    // Whether applying the entry samples a token (apply_locked's rule): the end of a
    // generate request's input, with room for a token.
    [[nodiscard]] static bool samples_token(const Entry& e);
    void apply_locked(std::vector<Entry>& plan);

    // Pipelined steps (pipeline.cpp).
    [[nodiscard]] bool pipelining() const;
    // Whether the entry's sequence could go on decoding in pipelined steps from here.
    [[nodiscard]] bool pipelinable(const Entry& e) const;
    // The step after queued_.plan, planned while it runs: every entry's next decode token,
    // fed from its row, and `pins` the blocks they write (retained); false (nothing
    // planned, pinned or reserved) when anything calls for a normal step first
    // (admissions, cancels, a stop ahead, a pause, too few free blocks).
    bool plan_successor_locked(std::vector<Entry>& next, std::vector<BlockId>& pins);
    // Queues `plan` on the executor (no lock): queued_ takes it.
    void launch_queued(std::vector<Entry>& plan, QueuedStep& step);
    // Releases what a queued step held while it ran: its pinned blocks, and (a successor)
    // its requests' count of queued steps, waking Engine::finish.
    void release_queued(QueuedStep& step);
    // Waits for a queued step's ids (no lock), then applies it (lock held).
    void finish_queued(QueuedStep& step, std::unique_lock<std::mutex>& lock);
    // One turn of the scheduler while a step is queued.
    void pipeline_turn(std::unique_lock<std::mutex>& lock);
    void end_locked(Request& req, StopReason reason, inlay_status status, std::string error);
    // The message of a failed sampling step; it names the model when its logits are at fault.
    [[nodiscard]] std::string sampling_failure(const Error& err) const;
    void preempt_locked(Request& req);
    // Releases the blocks of idle sequences, least recently used first, until `want`
    // blocks are available to this engine (want < 0: all of them). Returns blocks freed.
    int64_t release_idle_locked(int64_t want);
    void release_from(Sequence& seq, int64_t n_tokens);
    // Releases all KV of a queued request (it recomputes or finds it again when admitted).
    void release_waiting_locked(Request& req);
    void register_full_blocks(Sequence& seq, int64_t from_tokens);
    void enforce_cap_locked();
    void on_pressure();
    void notify_scheduler();
    // Whether the request waits for its caller to take tokens, counting `in_flight` tokens
    // a queued step is computing for it (a pipelined successor's plan).
    [[nodiscard]] bool paused(const Request& req, int64_t in_flight = 0) const;
    [[nodiscard]] Request* youngest_running_after(const Request& req) const;
    // Hands a sampled token (already appended to the sequence, which holds `length`
    // tokens up to and including it) to the request's queue, and ends the request when it
    // is an end of generation, the last of max_tokens or fills the context. Returns
    // whether it ended.
    bool emit_locked(Request& req, int32_t token, int64_t length);

    // Speculation (speculation_step.cpp).
    DraftContext& draft_context_locked(const std::shared_ptr<const Model>& draft);
    void unbind_draft_locked(Sequence& seq);
    // Keeps the draft KV of the first n tokens only.
    void trim_draft(Sequence& seq, int64_t n_tokens);
    // Releases idle sequences' draft KV in `ctx` until `want` blocks are available.
    void release_idle_drafts_locked(DraftContext& ctx, int64_t want);
    // Draft blocks for the first n_tokens positions of a drafting sequence, releasing idle
    // draft KV when short; false (nothing taken) when they cannot be had.
    bool grow_draft_locked(Sequence& seq, int64_t n_tokens);
    // Decides a decode entry's proposals (e.k_max) and reserves their target and draft
    // blocks (from free memory only: speculation never preempts or evicts a sequence).
    void plan_speculation_locked(Entry& e, int64_t budget, int64_t rows, int64_t n_decode);
    // Proposes the drafts of this step's speculating entries (prompt lookup, or batched
    // passes of each draft model). Scheduler thread, without the lock.
    void draft_step(std::vector<Entry>& plan);
    // Checks an entry's proposals against the target's rows and emits what is kept.
    void verify_locked(Entry& e);
    // The draft stopped at an unsure token (req.cut_token_) where the target has now chosen
    // `token` from its logits `row` (empty when only ids came back): whether unsure tokens
    // are right goes to the policy (greedy: the token matched; sampled: the chance the
    // rejection rule would have kept a draw there). Call before `token` joins the sequence.
    static void learn_from_cut(Request& req, int32_t token, std::span<const float> row);

    std::shared_ptr<const Model> model_;
    std::shared_ptr<KvBlockPool> pool_;
    EngineOptions options_;
    int32_t owner_ = -1;
    int64_t block_size_ = 0;
    std::unique_ptr<StepWorkspace> workspace_;  // scheduler thread only
    ZeroedArray<float> step_logits_;            // scheduler thread only (resident as rows are used)
    // What the step's pass hands back: every row's logits, or one id per row (its argmax
    // when every row is plain greedy, else the token sample_rows drew).
    enum class StepOutput { logits, argmax, sampled };
    StepOutput step_output_ = StepOutput::logits;  // scheduler thread
    std::vector<int32_t> step_ids_;             // scheduler thread: the rows' ids (argmax, sampled)
    std::vector<RowSampling> step_rows_;        // scheduler thread: the rows' sampling (sampled)
    std::vector<PenaltyEntry> step_penalties_;
    BatchBuilder step_batch_;                   // scheduler thread only: reused step after step
    inlay_status step_status_ = INLAY_OK;       // outcome of the last forward pass (scheduler thread)
    std::string step_error_;
    double step_seconds_ = 0.0;
    bool pipelining_ = false;                    // resolve_pipelining, once
    QueuedStep queued_;                          // scheduler thread: the step on the device, if any
    std::chrono::steady_clock::time_point last_finish_{};  // scheduler thread: when the last step's ids came
    std::shared_ptr<Pressure> pressure_;
    StepCostModel step_cost_;                   // scheduler thread: the target's passes
    int64_t spec_tokens_planned_ = 0;           // scheduler thread: proposals in this step's plan
    int64_t step_draft_passes_ = 0;             // scheduler thread: this step's draft passes
    double step_draft_seconds_ = 0.0;
    std::vector<std::unique_ptr<DraftContext>> drafts_;  // under mutex_ (their insides: scheduler thread)

    mutable std::mutex mutex_;
    std::condition_variable wake_;
    bool stop_ = false;
    uint64_t events_ = 0;  // bumped by every outside event that may let a step run
    std::atomic<bool> cap_changed_{false};
    std::vector<std::unique_ptr<Sequence>> sequences_;
    std::deque<std::shared_ptr<Request>> waiting_;   // by arrival (preempted ones go back in order)
    std::vector<std::shared_ptr<Request>> running_;  // by arrival
    uint64_t next_arrival_ = 0;
    uint64_t next_sequence_id_ = 0;
    uint64_t clock_ = 0;
    EngineMetrics counters_;
    std::chrono::steady_clock::time_point busy_since_{};
    std::thread scheduler_;
};

}  // namespace inlay
