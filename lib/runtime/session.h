// Session: one conversation with a model. It keeps the token history and the KV cache,
// so each generate call only evaluates tokens the cache does not hold yet.
//
// Use a session from one thread at a time (a concurrent call throws INLAY_ERR_BUSY);
// cancel() may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/model.h"
#include "sampling/sampler.h"

namespace inlay {

enum class StopReason { none, end_of_generation, max_tokens, stop_string, callback, cancelled, context_full };

struct GenerateOptions {
    SamplingParams sampling;
    int32_t max_tokens = 256;     // 0: evaluate the prompt only
    bool ignore_eos = false;
    std::vector<std::string> stop_strings;
    // Streaming: called for each token with the text it completes (valid UTF-8, possibly
    // empty). Return false to stop.
    std::function<bool(int32_t token, std::string_view piece)> on_token;
};

struct GenerateResult {
    std::vector<int32_t> prompt_tokens;  // evaluated as new input by this call
    std::vector<int32_t> tokens;         // sampled, including a final end-of-generation token
    std::string text;                    // text of `tokens`, without stop strings or control tokens
    StopReason stop_reason = StopReason::none;
    int64_t prefill_tokens = 0;          // tokens evaluated in the prompt batch (incl. carried over)
    double prefill_seconds = 0.0;
    double decode_seconds = 0.0;
};

class Session {
public:
    // context_length 0: the model's.
    Session(std::shared_ptr<const Model> model, int64_t context_length);

    [[nodiscard]] const Model& model() const { return *model_; }
    [[nodiscard]] const std::vector<int32_t>& history() const { return history_; }
    [[nodiscard]] int64_t context_length() const { return context_length_; }
    [[nodiscard]] int64_t n_cached() const;

    // Tokens for `text` as the next input: BOS first when the conversation is empty,
    // add_bos is set and the vocabulary asks for it.
    [[nodiscard]] std::vector<int32_t> tokenize_input(std::string_view text, bool add_bos, bool parse_special) const;

    // Appends `input` to the conversation and generates. Throws inlay::Error on invalid
    // input (INLAY_ERR_INVALID_TOKEN, INLAY_ERR_CONTEXT_FULL if the input alone does not
    // fit); cancellation and a full context end generation with that stop reason.
    GenerateResult generate(std::span<const int32_t> input, const GenerateOptions& options);

    // Teacher forcing: appends `tokens` and returns the logits after each of them
    // (tokens.size() * n_vocab floats).
    std::vector<float> eval_logits(std::span<const int32_t> tokens);

    void reset();
    // Asks a running generate/eval on this session to stop; no effect when idle.
    void cancel() noexcept;

private:
    class BusyGuard;
    bool should_stop() const noexcept { return cancel_requested_.load(std::memory_order_relaxed); }
    // Evaluates the history the cache lacks plus `input`; fills last_logits_.
    void evaluate_pending(std::span<const int32_t> input);

    std::shared_ptr<const Model> model_;
    int64_t context_length_;
    std::unique_ptr<SequenceState> sequence_;
    std::vector<int32_t> history_;
    std::vector<float> last_logits_;  // logits after history_.back(), when cached
    std::atomic<bool> busy_{false};
    std::atomic<bool> cancel_requested_{false};
};

const char* stop_reason_name(StopReason reason);

}  // namespace inlay
