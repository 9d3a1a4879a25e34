#include "runtime/session.h"

#include <chrono>
#include <mutex>

#include "core/error.h"
#include "sampling/sampling_params.h"
#include "sampling/stop_matcher.h"
#include "tokenizer/tokenizer.h"

namespace inlay {
namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
}  // namespace

const char* stop_reason_name(StopReason reason) {
    switch (reason) {
        case StopReason::none: return "none";
        case StopReason::end_of_generation: return "eog";
        case StopReason::max_tokens: return "max_tokens";
        case StopReason::stop_string: return "stop_string";
        case StopReason::callback: return "callback";
        case StopReason::cancelled: return "cancelled";
        case StopReason::context_full: return "context_full";
    }
    return "unknown";
}

// Marks the session busy for the duration of a call and clears any cancel request
// at both ends, so a cancel only ever affects the call that is running.
class Session::BusyGuard {
public:
    explicit BusyGuard(Session& s) : s_(s) {
        if (s_.busy_.exchange(true, std::memory_order_acq_rel))
            fail(INLAY_ERR_BUSY, "the session is already in use by another thread");
        s_.cancel_requested_.store(false, std::memory_order_release);
    }
    ~BusyGuard() {
        s_.cancel_requested_.store(false, std::memory_order_release);
        s_.busy_.store(false, std::memory_order_release);
    }
    BusyGuard(const BusyGuard&) = delete;
    BusyGuard& operator=(const BusyGuard&) = delete;

private:
    Session& s_;
};

Session::Session(std::shared_ptr<const Model> model, int64_t context_length)
    : model_(std::move(model)), context_length_(context_length > 0 ? context_length : model_->context_length()) {
    if (context_length < 0) fail(INLAY_ERR_INVALID_ARGUMENT, "session context_length must not be negative");
    sequence_ = model_->executor().new_sequence(context_length_);
}

int64_t Session::n_cached() const { return sequence_->n_cached(); }

void Session::cancel() noexcept {
    // Only a running call may be cancelled; the guard clears the flag when it ends.
    if (busy_.load(std::memory_order_acquire)) cancel_requested_.store(true, std::memory_order_release);
}

void Session::reset() {
    BusyGuard guard(*this);
    history_.clear();
    last_logits_.clear();
    sequence_->truncate(0);
}

std::vector<int32_t> Session::tokenize_input(std::string_view text, bool add_bos, bool parse_special) const {
    const Tokenizer& tok = model_->tokenizer();
    std::vector<int32_t> ids;
    if (history_.empty() && add_bos && tok.add_bos() && tok.bos() >= 0) ids.push_back(tok.bos());
    const auto body = tok.encode(text, parse_special);
    ids.insert(ids.end(), body.begin(), body.end());
    return ids;
}

void Session::evaluate_pending(std::span<const int32_t> input) {
    const int64_t n_vocab = model_->spec().n_vocab;
    for (const int32_t t : input)
        if (t < 0 || t >= n_vocab) fail(INLAY_ERR_INVALID_TOKEN, "token id {} is outside the vocabulary [0, {})", t, n_vocab);
    if (static_cast<int64_t>(history_.size() + input.size()) > context_length_)
        fail(INLAY_ERR_CONTEXT_FULL, "{} tokens in the conversation plus {} new exceed the context length {}",
             history_.size(), input.size(), context_length_);
    const auto cached = static_cast<size_t>(sequence_->n_cached());
    history_.insert(history_.end(), input.begin(), input.end());
    if (cached == history_.size()) return;  // nothing new: last_logits_ still hold
    const std::span<const int32_t> pending(history_.data() + cached, history_.size() - cached);
    last_logits_.resize(static_cast<size_t>(n_vocab));
    const int32_t last_row = static_cast<int32_t>(pending.size() - 1);
    try {
        model_->executor().eval(*sequence_, pending, std::span<const int32_t>(&last_row, 1), last_logits_.data(),
                                [this] { return should_stop(); });
    } catch (...) {
        last_logits_.clear();
        throw;
    }
}

GenerateResult Session::generate(std::span<const int32_t> input, const GenerateOptions& options) {
    BusyGuard guard(*this);
    if (options.max_tokens < 0) fail(INLAY_ERR_INVALID_ARGUMENT, "max_tokens must not be negative");
    validate(options.sampling);
    const Tokenizer& tok = model_->tokenizer();
    const int64_t n_vocab = model_->spec().n_vocab;
    StopMatcher stops(options.stop_strings);

    GenerateResult result;
    result.prompt_tokens.assign(input.begin(), input.end());
    const auto t_prefill = Clock::now();
    const auto pending = static_cast<int64_t>(history_.size() + input.size()) - sequence_->n_cached();
    try {
        evaluate_pending(input);
    } catch (const Error& e) {
        if (e.status() != INLAY_ERR_CANCELLED) throw;
        result.stop_reason = StopReason::cancelled;
        return result;
    }
    result.prefill_tokens = pending;
    if (options.max_tokens == 0) {
        result.prefill_seconds = seconds_since(t_prefill);
        return result;
    }
    if (last_logits_.empty()) fail(INLAY_ERR_INVALID_ARGUMENT, "nothing to generate from: the conversation is empty");

    // The leading-space rule applies while the conversation holds no text yet.
    bool at_start = true;
    for (const int32_t t : history_)
        if (!tok.token_to_piece(t, false).empty()) {
            at_start = false;
            break;
        }
    StreamingDetokenizer detok(tok, at_start);
    Sampler sampler(options.sampling, static_cast<int32_t>(n_vocab));
    auto emit = [&](int32_t token, std::string_view text) {
        result.text += text;
        return !options.on_token || options.on_token(token, text);
    };

    auto t_decode = Clock::now();
    for (int32_t i = 0;; ++i) {
        if (should_stop()) { result.stop_reason = StopReason::cancelled; break; }
        const int32_t token = sampler.sample(last_logits_, history_);
        history_.push_back(token);
        result.tokens.push_back(token);
        last_logits_.clear();  // stale until `token` is evaluated
        if (i == 0) {
            result.prefill_seconds = seconds_since(t_prefill);
            t_decode = Clock::now();
        }
        if (!options.ignore_eos && tok.is_eog(token)) { result.stop_reason = StopReason::end_of_generation; break; }
        const std::string text = stops.feed(detok.push(token));
        if (!emit(token, text)) { result.stop_reason = StopReason::callback; break; }
        if (stops.stopped()) { result.stop_reason = StopReason::stop_string; break; }
        if (i + 1 >= options.max_tokens) { result.stop_reason = StopReason::max_tokens; break; }
        if (static_cast<int64_t>(history_.size()) >= context_length_) { result.stop_reason = StopReason::context_full; break; }
        try {
            evaluate_pending({});
        } catch (const Error& e) {
            if (e.status() != INLAY_ERR_CANCELLED) throw;
            result.stop_reason = StopReason::cancelled;
            break;
        }
    }
    if (!result.tokens.empty() && result.stop_reason != StopReason::stop_string) {
        // Text held back for a possible stop string or an unfinished character.
        std::string tail = stops.feed(detok.flush());
        if (!stops.stopped()) tail += stops.flush();
        if (!tail.empty() && result.stop_reason != StopReason::callback) emit(-1, tail);
        else result.text += tail;
    }
    if (result.tokens.size() > 1) result.decode_seconds = seconds_since(t_decode);
    return result;
}

std::vector<float> Session::eval_logits(std::span<const int32_t> tokens) {
    BusyGuard guard(*this);
    const int64_t n_vocab = model_->spec().n_vocab;
    for (const int32_t t : tokens)
        if (t < 0 || t >= n_vocab) fail(INLAY_ERR_INVALID_TOKEN, "token id {} is outside the vocabulary [0, {})", t, n_vocab);
    if (static_cast<int64_t>(history_.size() + tokens.size()) > context_length_)
        fail(INLAY_ERR_CONTEXT_FULL, "{} tokens in the conversation plus {} new exceed the context length {}",
             history_.size(), tokens.size(), context_length_);
    last_logits_.clear();  // stale from here on; set again only when evaluation succeeds
    const auto cached = static_cast<size_t>(sequence_->n_cached());
    const size_t carried = history_.size() - cached;
    history_.insert(history_.end(), tokens.begin(), tokens.end());
    const std::span<const int32_t> pending(history_.data() + cached, history_.size() - cached);
    std::vector<int32_t> rows(tokens.size());
    for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<int32_t>(carried + i);
    std::vector<float> logits(tokens.size() * static_cast<size_t>(n_vocab));
    model_->executor().eval(*sequence_, pending, rows, logits.data(), [this] { return should_stop(); });
    if (!tokens.empty()) last_logits_.assign(logits.end() - n_vocab, logits.end());
    return logits;
}

}  // namespace inlay
