#include "runtime/session.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "runtime/session_file.h"
#include "sampling/sampling_params.h"
#include "sampling/stop_matcher.h"
#include "tokenizer/tokenizer.h"

namespace inlay {
namespace {
using Clock = std::chrono::steady_clock;
double seconds_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }
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

KvPoolOptions kv_pool_options_from_memory(const Model& model, double fraction) {
    if (!(fraction > 0.0 && fraction <= 1.0))
        fail(INLAY_ERR_INVALID_ARGUMENT, "a KV memory fraction must be in (0, 1], not {}", fraction);
    const DeviceMemory m = model.executor().memory_info();
    KvPoolOptions o;
    o.budget_bytes = static_cast<int64_t>(fraction * static_cast<double>(m.free_bytes));
    o.max_blocks = kMaxDeviceBudgetBlocks;
    if (o.budget_bytes <= 0)
        fail(INLAY_ERR_KV_FULL, "{} has no free memory for a KV cache ({} of {} bytes free)", model.device(),
             m.free_bytes, m.total_bytes);
    return o;
}

KvPoolOptions default_kv_pool_options(const Model& model) {
    // A GPU's memory is the KV cache's to take (the weights are in already); the CPU's
    // is shared with the host program, so there the budget follows the context length.
    if (model.device() != "cpu") return kv_pool_options_from_memory(model, kDefaultDeviceKvFraction);
    KvPoolOptions o;
    const int64_t tokens = std::max<int64_t>(4 * model.context_length(), 64 * o.block_size);
    o.budget_blocks = (tokens + o.block_size - 1) / o.block_size;
    return o;
}

std::shared_ptr<Engine> make_default_engine(std::shared_ptr<const Model> model) {
    if (!model) fail(INLAY_ERR_INVALID_ARGUMENT, "no model");
    auto pool = make_kv_pool(model->executor(), default_kv_pool_options(*model));
    return std::make_shared<Engine>(std::move(model), std::move(pool), EngineOptions{});
}

// Marks the session busy for the duration of a call and clears any cancel request
// at both ends, so a cancel only ever affects the call that is running.
class Session::BusyGuard {
public:
    explicit BusyGuard(const Session& s) : s_(s) {
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
    const Session& s_;
};

Session::Session(std::shared_ptr<Engine> engine, int64_t context_length) : engine_(std::move(engine)) {
    if (!engine_) fail(INLAY_ERR_INVALID_ARGUMENT, "a session needs an engine");
    if (context_length < 0) fail(INLAY_ERR_INVALID_ARGUMENT, "session context_length must not be negative");
    context_length_ = context_length > 0 ? context_length : engine_->model().context_length();
    sequence_ = engine_->open(context_length_);
}

Session::Session(std::shared_ptr<const Model> model, int64_t context_length)
    : Session(make_default_engine(std::move(model)), context_length) {}

Session::Session(std::shared_ptr<Engine> engine, Sequence* sequence, int64_t context_length)
    : engine_(std::move(engine)), context_length_(context_length), sequence_(sequence) {}

Session::~Session() {
    try {
        engine_->close(sequence_);
    } catch (...) {  // closing while another thread is inside this session: a host bug; keep going
    }
}

int64_t Session::n_cached() const { return engine_->n_cached(*sequence_); }

size_t Session::n_tokens() const {
    BusyGuard guard(*this);
    return history().size();
}

std::vector<int32_t> Session::tokens() const {
    BusyGuard guard(*this);
    return history();
}

void Session::cancel() noexcept {
    // Only a running call may be cancelled; the guard clears the flag when it ends.
    if (!busy_.load(std::memory_order_acquire)) return;
    cancel_requested_.store(true, std::memory_order_release);
    std::lock_guard lock(request_mutex_);
    if (current_) engine_->cancel(*current_);
}

std::shared_ptr<Request> Session::start(const std::shared_ptr<Request>& request) {
    engine_->submit(*sequence_, request);
    {
        std::lock_guard lock(request_mutex_);
        current_ = request;
    }
    // A cancel that came before the request existed still applies to this call.
    if (cancel_requested_.load(std::memory_order_acquire)) engine_->cancel(*request);
    return request;
}

void Session::stop_tracking() noexcept {
    std::lock_guard lock(request_mutex_);
    current_.reset();
}

void Session::set_speculation(const SpeculationOptions& options) {
    BusyGuard guard(*this);
    engine_->set_speculation(*sequence_, options);
}

SpeculationStats Session::speculation_stats() const {
    std::lock_guard lock(stats_mutex_);
    return speculation_;
}

void Session::reset() {
    BusyGuard guard(*this);
    engine_->reset(*sequence_);
}

void Session::truncate(int64_t n_tokens) {
    BusyGuard guard(*this);
    engine_->truncate(*sequence_, n_tokens);
}

std::unique_ptr<Session> Session::fork() {
    BusyGuard guard(*this);
    Sequence* copy = engine_->fork(*sequence_);
    return std::unique_ptr<Session>(new Session(engine_, copy, context_length_));
}

void Session::save(const std::string& path) {
    BusyGuard guard(*this);
    const SequenceImage image = engine_->snapshot(*sequence_);
    write_session_file(path, model(), engine_->pool().store(), image);
}

void Session::restore(const std::string& path) {
    BusyGuard guard(*this);
    const SequenceImage image = read_session_file(path, model(), engine_->pool().store());
    engine_->restore(*sequence_, image);
}

std::vector<int32_t> Session::tokenize_input(std::string_view text, bool add_bos, bool parse_special) const {
    const Tokenizer& tok = model().tokenizer();
    std::vector<int32_t> ids;
    if (n_tokens() == 0 && add_bos && tok.add_bos() && tok.bos() >= 0) ids.push_back(tok.bos());
    const auto body = tok.encode(text, parse_special);
    ids.insert(ids.end(), body.begin(), body.end());
    return ids;
}

namespace {

void check_input(const Model& model, std::span<const int32_t> input, size_t history, int64_t context_length) {
    const int64_t n_vocab = model.spec().n_vocab;
    for (const int32_t t : input)
        if (t < 0 || t >= n_vocab) fail(INLAY_ERR_INVALID_TOKEN, "token id {} is outside the vocabulary [0, {})", t, n_vocab);
    if (static_cast<int64_t>(history + input.size()) > context_length)
        fail(INLAY_ERR_CONTEXT_FULL, "{} tokens in the conversation plus {} new exceed the context length {}", history,
             input.size(), context_length);
}

// Ends the engine's side of a request however the caller's side ends (a callback may throw).
struct FinishGuard {
    Engine& engine;
    Request& request;
    int64_t keep = -1;
    bool done = false;
    void finish() {
        if (done) return;
        done = true;
        engine.finish(request, keep);
    }
    ~FinishGuard() {
        try {
            if (!done) {
                keep = request.taken();
                finish();
            }
        } catch (...) {
        }
    }
};

}  // namespace

GenerateResult Session::generate(std::span<const int32_t> input, const GenerateOptions& options) {
    BusyGuard guard(*this);
    if (options.max_tokens < 0) fail(INLAY_ERR_INVALID_ARGUMENT, "max_tokens must not be negative");
    validate(options.sampling);
    const Tokenizer& tok = model().tokenizer();
    StopMatcher stops(options.stop_strings);
    check_input(model(), input, history().size(), context_length_);
    if (history().empty() && input.empty() && options.max_tokens > 0)
        fail(INLAY_ERR_INVALID_ARGUMENT, "nothing to generate from: the conversation is empty");

    // The leading-space rule applies while the conversation holds no text yet.
    bool at_start = true;
    for (const auto part : {std::span<const int32_t>(history()), input})
        for (const int32_t t : part)
            if (at_start && !tok.token_to_piece(t, false).empty()) at_start = false;

    GenerateResult result;
    result.prompt_tokens.assign(input.begin(), input.end());
    auto request = std::make_shared<Request>();
    request->kind = Request::Kind::generate;
    request->input.assign(input.begin(), input.end());
    request->sampling = options.sampling;
    request->max_tokens = options.max_tokens;
    request->ignore_eos = options.ignore_eos;
    request->lookahead = Session::kLookahead;
    start(request);
    Request& req = *request;
    FinishGuard finish{*engine_, req};

    StreamingDetokenizer detok(tok, at_start);
    auto emit = [&](int32_t token, std::string_view text) {
        result.text += text;
        return !options.on_token || options.on_token(token, text);
    };
    StopReason caller_reason = StopReason::none;
    Clock::time_point t_decode{};
    while (const auto next = req.next()) {
        const int32_t token = *next;
        result.tokens.push_back(token);
        if (result.tokens.size() == 1) t_decode = Clock::now();
        if (!options.ignore_eos && tok.is_eog(token)) break;  // the engine ends the request here too
        const std::string text = stops.feed(detok.push(token));
        if (!emit(token, text)) { caller_reason = StopReason::callback; break; }
        if (stops.stopped()) { caller_reason = StopReason::stop_string; break; }
    }
    if (caller_reason == StopReason::none && req.cancel_requested()) caller_reason = StopReason::cancelled;
    finish.keep = static_cast<int64_t>(result.tokens.size());
    finish.finish();
    stop_tracking();

    result.stop_reason = caller_reason != StopReason::none ? caller_reason : req.reason;
    if (caller_reason == StopReason::none && req.status == INLAY_ERR_CANCELLED) result.stop_reason = StopReason::cancelled;
    if (req.status == INLAY_ERR_KV_FULL) {
        result.status = req.status;
        result.error = req.error;
    } else if (req.status != INLAY_OK && req.status != INLAY_ERR_CANCELLED && caller_reason == StopReason::none) {
        throw Error(req.status, req.error);
    }
    result.speculation = req.speculation;
    {
        std::lock_guard lock(stats_mutex_);
        speculation_ += req.speculation;
    }
    result.prefill_tokens = req.prefilled + req.reused;
    result.reused_tokens = req.reused;
    const auto end = Clock::now();
    result.prefill_seconds = seconds_between(req.submitted, result.tokens.empty() ? req.ended : req.first_token);
    if (!result.tokens.empty() && result.stop_reason != StopReason::stop_string) {
        // Text held back for a possible stop string or an unfinished character.
        std::string tail = stops.feed(detok.flush());
        if (!stops.stopped()) tail += stops.flush();
        if (!tail.empty() && result.stop_reason != StopReason::callback) emit(-1, tail);
        else result.text += tail;
    }
    if (result.tokens.size() > 1) result.decode_seconds = seconds_between(t_decode, end);
    return result;
}

std::vector<float> Session::eval_logits(std::span<const int32_t> tokens) {
    BusyGuard guard(*this);
    check_input(model(), tokens, history().size(), context_length_);
    auto request = std::make_shared<Request>();
    request->kind = Request::Kind::logits;
    request->input.assign(tokens.begin(), tokens.end());
    start(request);
    FinishGuard finish{*engine_, *request};
    request->wait();
    finish.finish();
    stop_tracking();
    if (request->status == INLAY_ERR_CANCELLED || request->reason == StopReason::cancelled)
        fail(INLAY_ERR_CANCELLED, "cancelled during prompt processing");
    if (request->status != INLAY_OK) throw Error(request->status, request->error);
    request->logits.resize(tokens.size() * static_cast<size_t>(model().spec().n_vocab));
    return std::move(request->logits);
}

}  // namespace inlay
