// Session: one conversation with a model, run by the model's Engine. It keeps the token
// history and the KV cache (blocks in the engine's pool), so each generate call only
// evaluates tokens the cache does not hold yet; generate calls of many sessions, from
// many threads, are batched together by the engine.
//
// Use a session from one thread at a time (a concurrent call throws INLAY_ERR_BUSY);
// cancel() may be called from any thread. The on_token callback runs on the thread that
// called generate, never on the engine's scheduler thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/model.h"
#include "runtime/engine.h"
#include "runtime/kv_pool_set.h"
#include "runtime/request.h"
#include "sampling/sampler.h"

namespace inlay {

struct GenerateOptions {
    SamplingParams sampling;
    int32_t max_tokens = 256;     // 0: evaluate the prompt only
    bool ignore_eos = false;
    std::vector<std::string> stop_strings;
    // Streaming: called for each token with the text it completes (valid UTF-8, possibly
    // empty), on the calling thread. Return false to stop.
    std::function<bool(int32_t token, std::string_view piece)> on_token;
};

struct GenerateResult {
    std::vector<int32_t> prompt_tokens;  // evaluated as new input by this call
    std::vector<int32_t> tokens;         // sampled, including a final end-of-generation token
    std::string text;                    // text of `tokens`, without stop strings or control tokens
    StopReason stop_reason = StopReason::none;
    inlay_status status = INLAY_OK;      // INLAY_ERR_KV_FULL when the KV pool ran out (partial result)
    std::string error;                   // message for a non-OK status
    int64_t prefill_tokens = 0;          // tokens brought into the cache before the first sample
    int64_t reused_tokens = 0;           // of prefill_tokens, found in the prefix cache (not computed)
    double prefill_seconds = 0.0;
    double decode_seconds = 0.0;
    SpeculationStats speculation;        // proposals checked and kept in this call
};

class Session {
public:
    // Tokens the scheduler may sample ahead of a caller that is still busy with earlier
    // ones (Request::lookahead of every generate call); tests hold requests at it.
    static constexpr int32_t kLookahead = 8;

    // A session on `engine`; context_length 0: the model's.
    Session(std::shared_ptr<Engine> engine, int64_t context_length);
    // A session with an engine (and KV pool with the default budget) of its own.
    Session(std::shared_ptr<const Model> model, int64_t context_length);
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    [[nodiscard]] const Model& model() const { return engine_->model(); }
    [[nodiscard]] Engine& engine() const { return *engine_; }
    [[nodiscard]] const std::shared_ptr<Engine>& engine_ptr() const { return engine_; }
    // The conversation so far. Not to be read while a call on this session runs.
    [[nodiscard]] const std::vector<int32_t>& history() const { return sequence_->tokens(); }
    // The same for callers that may race with a call on this session (another thread, or
    // a callback inside the call): INLAY_ERR_BUSY while a call runs, since the history is
    // then being written by the engine. While these read, a call made on the session
    // returns INLAY_ERR_BUSY.
    [[nodiscard]] size_t n_tokens() const;
    [[nodiscard]] std::vector<int32_t> tokens() const;
    [[nodiscard]] int64_t context_length() const { return context_length_; }
    [[nodiscard]] int64_t n_cached() const;

    // Tokens for `text` as the next input: BOS first when the conversation is empty,
    // add_bos is set and the vocabulary asks for it.
    [[nodiscard]] std::vector<int32_t> tokenize_input(std::string_view text, bool add_bos, bool parse_special) const;

    // Appends `input` to the conversation and generates. Throws inlay::Error on invalid
    // input (INLAY_ERR_INVALID_TOKEN, INLAY_ERR_CONTEXT_FULL if the input alone does not
    // fit); cancellation and a full context end generation with that stop reason; a KV
    // pool too small for this conversation ends it with status INLAY_ERR_KV_FULL.
    GenerateResult generate(std::span<const int32_t> input, const GenerateOptions& options);

    // Teacher forcing: appends `tokens` and returns the logits after each of them
    // (tokens.size() * n_vocab floats).
    std::vector<float> eval_logits(std::span<const int32_t> tokens);

    void reset();
    // Keeps the first n_tokens of the conversation (and their KV); n_tokens <= history size.
    void truncate(int64_t n_tokens);
    // A new session continuing this conversation: it shares this one's KV blocks
    // (copy-on-write), so neither recomputes the shared part.
    [[nodiscard]] std::unique_ptr<Session> fork();
    // Writes the conversation and its KV to `path` (session_file.h format) / replaces
    // this conversation with the one saved in `path` (fully validated first).
    void save(const std::string& path);
    void restore(const std::string& path);

    // Speculative decoding for later generate calls (Engine::set_speculation: a draft model
    // is checked against this model's vocabulary here). Mode::none turns it off.
    void set_speculation(const SpeculationOptions& options);
    // Proposals checked and kept over every generate call of this session.
    [[nodiscard]] SpeculationStats speculation_stats() const;

    // Asks a running generate/eval on this session to stop; no effect when idle.
    void cancel() noexcept;

private:
    class BusyGuard;
    Session(std::shared_ptr<Engine> engine, Sequence* sequence, int64_t context_length);
    std::shared_ptr<Request> start(const std::shared_ptr<Request>& request);
    void stop_tracking() noexcept;

    std::shared_ptr<Engine> engine_;
    int64_t context_length_;
    Sequence* sequence_ = nullptr;  // owned by the engine; closed in the destructor
    mutable std::atomic<bool> busy_{false};  // mutable: the const readers above claim it too
    mutable std::atomic<bool> cancel_requested_{false};
    std::mutex request_mutex_;      // guards current_ against cancel() from other threads
    std::shared_ptr<Request> current_;
    mutable std::mutex stats_mutex_;
    SpeculationStats speculation_;  // under stats_mutex_
};

const char* stop_reason_name(StopReason reason);

// The engine a Session(model, ...) makes for itself: a private pool with
// default_kv_pool_options(model) and default EngineOptions.
std::shared_ptr<Engine> make_default_engine(std::shared_ptr<const Model> model);
// On the CPU: room for 4 sequences of the model's context length (at least 64 blocks);
// on a GPU: kDefaultDeviceKvFraction of its free memory. 16-token f16 blocks.
KvPoolOptions default_kv_pool_options(const Model& model);
// The share of a GPU's free memory the default budget takes (after the weights are loaded).
inline constexpr double kDefaultDeviceKvFraction = 0.9;
// The most blocks a budget from a device's memory makes (16M tokens in 16-token blocks:
// more than any model's memory allows except tiny ones in tiny blocks).
inline constexpr int64_t kMaxDeviceBudgetBlocks = int64_t{1} << 20;
// A budget of `fraction` (in (0, 1]) of the free memory of the model's device now, in
// bytes (INLAY_ERR_KV_FULL later if that holds no block).
KvPoolOptions kv_pool_options_from_memory(const Model& model, double fraction);

}  // namespace inlay
