// inlay.hpp: a header-only C++20 wrapper over the C ABI in inlay.h.
//
// It adds ownership (Model, Session and Result own their handle like a unique_ptr:
// movable, not copyable, freed in the destructor), exceptions (every failing call
// throws inlay::Error carrying the inlay_status and inlay_last_error()'s message) and
// C++ callbacks (std::function or any callable) for streaming and load progress.
// Everything here is inline and calls only the C ABI, so it works with any build of
// libinlay.so that has the same INLAY_ABI_VERSION.
//
// Threading is the C ABI's: a Model may be shared by threads and sessions; a Session is
// used from one thread at a time, except cancel(). Sessions keep their model alive, so a
// Model may be destroyed before its Sessions (inlay.h, "Threading").
//
//     inlay::Model model = inlay::Model::load("model.gguf");
//     inlay::Session session(model);
//     inlay::GenerateOptions opts;
//     opts.params.temperature = 0;
//     inlay::Result r = session.generate("Once upon a time", opts,
//         [](int32_t, std::string_view piece) { std::cout << piece << std::flush; return true; });
//
//     std::vector<inlay::ChatMessage> chat = {{"user", "Hi!"}};
//     inlay::Result reply = session.chat(chat);          // the model's chat template
//     chat.push_back({"assistant", std::string(reply.text())});
#ifndef INLAY_INLAY_HPP
#define INLAY_INLAY_HPP

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "inlay/inlay.h"

namespace inlay {
// The inline namespace keeps these inline classes' symbols apart from the library's
// internal ones (which share the `inlay` namespace) when both end up in one program.
inline namespace cxx_v1 {

// Thrown by every wrapper call that fails. what() is inlay_last_error()'s message,
// which starts with the status name ("INLAY_ERR_IO: ...").
class Error : public std::runtime_error {
public:
    Error(inlay_status status, const std::string& message) : std::runtime_error(message), status_(status) {}
    [[nodiscard]] inlay_status status() const noexcept { return status_; }

private:
    inlay_status status_;
};

namespace detail {

inline void check(inlay_status status) {
    if (status != INLAY_OK) throw Error(status, inlay_last_error());
}

template <class T, void (*Free)(T*)>
struct Deleter {
    void operator()(T* p) const noexcept { Free(p); }
};

// Carries an exception thrown by a user callback across the C library's frames (which
// must not be unwound by C++ exceptions): the trampoline stores it and stops the call,
// and the wrapper rethrows it once the C call has returned.
struct CallbackGuard {
    std::exception_ptr error;
    void rethrow_if_any() {
        if (error) std::rethrow_exception(std::exchange(error, nullptr));
    }
};

// Tokenize and detokenize through a model or a vocabulary handle (same conventions).
template <class Handle>
std::vector<int32_t> tokenize(inlay_status (*fn)(const Handle*, const char*, size_t, uint32_t, int32_t*, size_t,
                                                 size_t*),
                              const Handle* handle, std::string_view text, uint32_t flags) {
    // A first guess that fits most texts; the size query handles the rest.
    std::vector<int32_t> out(text.size() + 2);
    size_t n = 0;
    inlay_status status = fn(handle, text.data(), text.size(), flags, out.data(), out.size(), &n);
    if (status == INLAY_ERR_BUFFER_TOO_SMALL) {
        out.resize(n);
        status = fn(handle, text.data(), text.size(), flags, out.data(), out.size(), &n);
    }
    check(status);
    out.resize(n);
    return out;
}

template <class Handle>
std::string detokenize(inlay_status (*fn)(const Handle*, const int32_t*, size_t, bool, char*, size_t, size_t*),
                       const Handle* handle, std::span<const int32_t> tokens, bool render_special) {
    size_t length = 0;
    inlay_status status = fn(handle, tokens.data(), tokens.size(), render_special, nullptr, 0, &length);
    if (status != INLAY_ERR_BUFFER_TOO_SMALL) check(status);
    std::string text(length + 1, '\0');
    check(fn(handle, tokens.data(), tokens.size(), render_special, text.data(), text.size(), &length));
    text.resize(length);
    return text;
}

}  // namespace detail

// Options for Model::load. progress, if set, runs on the loading thread with values in
// [0, 1]; returning false aborts the load (Error with INLAY_ERR_CANCELLED).
class KvPool;

struct ModelOptions {
    int32_t n_threads = 0;       // 0 = number of cores
    int32_t context_length = 0;  // tokens per session; 0 = the model's own
    std::function<bool(float progress)> progress;
    // KV cache and batching (inlay_model_params): a shared pool, or a budget of its own.
    const KvPool* kv_pool = nullptr;
    int64_t kv_budget_bytes = 0;  // 0 = default
    int32_t kv_block_size = 0;    // 0 = 16
    int32_t batch_tokens = 0;     // 0 = 512
    // Where the model runs (inlay_model_params.device / device_index / kv_memory_fraction).
    inlay_device device = INLAY_DEVICE_AUTO;
    int32_t device_index = 0;
    double kv_memory_fraction = 0.0;  // 0 = default
};

// A KV budget shared by the models loaded with it (inlay_kv_pool). Movable, not
// copyable; models keep the pool alive, so it may be destroyed before them.
class KvPool {
public:
    explicit KvPool(int64_t budget_bytes, int32_t block_size = 16, int64_t budget_blocks = 0) {
        inlay_kv_pool_params pp;
        inlay_kv_pool_params_init(&pp);
        pp.budget_bytes = budget_bytes;
        pp.budget_blocks = budget_blocks;
        pp.block_size = block_size;
        inlay_kv_pool* raw = nullptr;
        detail::check(inlay_kv_pool_create(&pp, &raw));
        handle_.reset(raw);
    }
    [[nodiscard]] inlay_kv_pool* get() const noexcept { return handle_.get(); }

private:
    std::unique_ptr<inlay_kv_pool, detail::Deleter<inlay_kv_pool, inlay_kv_pool_free>> handle_;
};

// One message of a conversation (see inlay_session_chat).
struct ChatMessage {
    std::string role;     // "system", "user", "assistant", "tool", ...
    std::string content;
};

// How a conversation is rendered: inlay_chat_params with C++ types.
struct ChatOptions {
    inlay_thinking thinking = INLAY_THINKING_DEFAULT;
    bool add_generation_prompt = true;
    std::string chat_template;  // Jinja source replacing the model's; empty = the model's
};

namespace detail {

// The C views of `messages`; they point into it, which must outlive their use.
inline std::vector<inlay_chat_message> chat_messages(std::span<const ChatMessage> messages) {
    std::vector<inlay_chat_message> out;
    out.reserve(messages.size());
    for (const ChatMessage& m : messages) out.push_back({m.role.c_str(), m.content.c_str()});
    return out;
}

inline inlay_chat_params chat_params(const ChatOptions& options) {
    inlay_chat_params p;
    inlay_chat_params_init(&p);
    p.thinking = options.thinking;
    p.add_generation_prompt = options.add_generation_prompt;
    p.chat_template = options.chat_template.empty() ? nullptr : options.chat_template.c_str();
    return p;
}

}  // namespace detail

class Model {
public:
    // Loads a GGUF file. Throws Error on failure.
    static Model load(const std::string& path, const ModelOptions& options = {}) {
        struct Ctx {
            const ModelOptions* options;
            detail::CallbackGuard guard;
        } ctx{&options, {}};
        inlay_model_params mp;
        inlay_model_params_init(&mp);
        mp.n_threads = options.n_threads;
        mp.context_length = options.context_length;
        mp.kv_pool = options.kv_pool ? options.kv_pool->get() : nullptr;
        mp.kv_budget_bytes = options.kv_budget_bytes;
        mp.kv_block_size = options.kv_block_size;
        mp.batch_tokens = options.batch_tokens;
        mp.device = static_cast<int32_t>(options.device);
        mp.device_index = options.device_index;
        mp.kv_memory_fraction = options.kv_memory_fraction;
        if (options.progress) {
            mp.progress = [](float p, void* user) -> bool {
                auto* c = static_cast<Ctx*>(user);
                try {
                    return c->options->progress(p);
                } catch (...) {
                    c->guard.error = std::current_exception();
                    return false;
                }
            };
            mp.progress_user = &ctx;
        }
        inlay_model* raw = nullptr;
        const inlay_status status = inlay_model_load(path.c_str(), &mp, &raw);
        Model model(raw);
        ctx.guard.rethrow_if_any();
        detail::check(status);
        return model;
    }

    // Takes ownership of a handle from inlay_model_load (may be null).
    explicit Model(inlay_model* handle) noexcept : handle_(handle) {}

    [[nodiscard]] inlay_model* get() const noexcept { return handle_.get(); }
    // Gives up ownership; the caller frees the handle with inlay_model_free.
    [[nodiscard]] inlay_model* release() noexcept { return handle_.release(); }
    explicit operator bool() const noexcept { return handle_ != nullptr; }

    [[nodiscard]] inlay_model_info info() const {
        inlay_model_info info{};
        info.struct_size = sizeof(info);
        detail::check(inlay_model_get_info(get(), &info));
        return info;
    }

    // KV pool and batching counters of this model's engine (thread-safe).
    [[nodiscard]] inlay_metrics metrics() const {
        inlay_metrics m{};
        m.struct_size = sizeof(m);
        detail::check(inlay_model_get_metrics(get(), &m));
        return m;
    }
    // Caps this model's KV blocks in its pool (0 = none).
    void set_kv_cap(int64_t max_blocks) { detail::check(inlay_model_set_kv_cap(get(), max_blocks)); }

    // flags: inlay_tokenize_flags (default: BOS if the vocabulary wants it, special tokens parsed).
    [[nodiscard]] std::vector<int32_t> tokenize(
        std::string_view text, uint32_t flags = INLAY_TOKENIZE_ADD_BOS | INLAY_TOKENIZE_PARSE_SPECIAL) const {
        return detail::tokenize(inlay_tokenize, get(), text, flags);
    }

    [[nodiscard]] std::string detokenize(std::span<const int32_t> tokens, bool render_special = false) const {
        return detail::detokenize(inlay_detokenize, get(), tokens, render_special);
    }

    // The conversation rendered with the model's chat template (or options.chat_template).
    [[nodiscard]] std::string apply_chat_template(std::span<const ChatMessage> messages,
                                                  const ChatOptions& options = {}) const {
        const auto msgs = detail::chat_messages(messages);
        const inlay_chat_params p = detail::chat_params(options);
        size_t length = 0;
        inlay_status status = inlay_chat_apply_template(get(), msgs.data(), msgs.size(), &p, nullptr, 0, &length);
        if (status != INLAY_ERR_BUFFER_TOO_SMALL) detail::check(status);
        std::string text(length + 1, '\0');
        detail::check(inlay_chat_apply_template(get(), msgs.data(), msgs.size(), &p, text.data(), text.size(), &length));
        text.resize(length);
        return text;
    }

private:
    std::unique_ptr<inlay_model, detail::Deleter<inlay_model, inlay_model_free>> handle_;
};

// A model's vocabulary alone (inlay_vocab): tokenizing without weights, from a GGUF
// file (whole model or vocabulary only) or a model folder. Movable, not copyable; const
// methods are safe from many threads.
class Vocab {
public:
    static Vocab load(const std::string& path) {
        inlay_vocab* raw = nullptr;
        detail::check(inlay_vocab_load(path.c_str(), &raw));
        Vocab v;
        v.handle_.reset(raw);
        return v;
    }

    [[nodiscard]] const inlay_vocab* get() const noexcept { return handle_.get(); }

    [[nodiscard]] inlay_vocab_info info() const {
        inlay_vocab_info info{};
        info.struct_size = sizeof(info);
        detail::check(inlay_vocab_get_info(get(), &info));
        return info;
    }

    [[nodiscard]] std::vector<int32_t> tokenize(
        std::string_view text, uint32_t flags = INLAY_TOKENIZE_ADD_BOS | INLAY_TOKENIZE_PARSE_SPECIAL) const {
        return detail::tokenize(inlay_vocab_tokenize, get(), text, flags);
    }

    [[nodiscard]] std::string detokenize(std::span<const int32_t> tokens, bool render_special = false) const {
        return detail::detokenize(inlay_vocab_detokenize, get(), tokens, render_special);
    }

private:
    Vocab() = default;
    std::unique_ptr<inlay_vocab, detail::Deleter<inlay_vocab, inlay_vocab_free>> handle_;
};

// The outcome of one generate call. Views returned by text()/tokens() live as long as
// the Result.
class Result {
public:
    explicit Result(inlay_result* handle) noexcept : handle_(handle) {}

    [[nodiscard]] inlay_result* get() const noexcept { return handle_.get(); }
    [[nodiscard]] std::string_view text() const { return inlay_result_text(get()); }
    [[nodiscard]] std::span<const int32_t> tokens() const {
        size_t n = 0;
        const int32_t* p = inlay_result_tokens(get(), &n);
        return {p, n};
    }
    [[nodiscard]] std::span<const int32_t> prompt_tokens() const {
        size_t n = 0;
        const int32_t* p = inlay_result_prompt_tokens(get(), &n);
        return {p, n};
    }
    [[nodiscard]] inlay_stop_reason stop_reason() const { return inlay_result_stop_reason(get()); }
    [[nodiscard]] inlay_timings timings() const {
        inlay_timings t{};
        t.struct_size = sizeof(t);
        detail::check(inlay_result_timings(get(), &t));
        return t;
    }

private:
    std::unique_ptr<inlay_result, detail::Deleter<inlay_result, inlay_result_free>> handle_;
};

// Generation options: `params` starts at inlay_generate_params_init()'s defaults and may
// be edited freely, except params.stop/n_stop/on_token/user, which the Session sets
// from `stop` and the callback.
struct GenerateOptions {
    inlay_generate_params params{};
    std::vector<std::string> stop;

    GenerateOptions() { inlay_generate_params_init(&params); }
};

// How a session is made: its context length and speculative decoding (inlay.h's
// inlay_session_params). The draft model, when set, only has to live until the session is
// made (the session keeps its weights).
struct SessionOptions {
    int32_t context_length = 0;  // 0: the model's
    inlay_speculation speculation = INLAY_SPECULATION_NONE;
    const Model* draft = nullptr;  // INLAY_SPECULATION_DRAFT_MODEL
    int32_t n_draft = 8;
    int32_t n_draft_min = 0;
    float p_min = 0.5f;
};

class Session {
public:
    // context_length 0: the model's. The session keeps the model alive.
    explicit Session(const Model& model, int32_t context_length = 0)
        : Session(model, SessionOptions{context_length}) {}

    Session(const Model& model, const SessionOptions& options) {
        inlay_session_params sp;
        inlay_session_params_init(&sp);
        sp.context_length = options.context_length;
        sp.speculation = static_cast<int32_t>(options.speculation);
        sp.draft_model = options.draft ? options.draft->get() : nullptr;
        sp.n_draft = options.n_draft;
        sp.n_draft_min = options.n_draft_min;
        sp.p_min = options.p_min;
        inlay_session* raw = nullptr;
        detail::check(inlay_session_create(model.get(), &sp, &raw));
        handle_.reset(raw);
        n_vocab_ = static_cast<size_t>(model.info().n_vocab);
    }

    [[nodiscard]] inlay_session* get() const noexcept { return handle_.get(); }

    // Appends `prompt` to the conversation and generates. A cancelled generation (or one
    // that filled the context) is not an error here: it returns what was produced and
    // stop_reason() says why it ended. An exception thrown by `on_token` stops the
    // generation and is rethrown.
    template <class OnToken>
    Result generate(std::string_view prompt, const GenerateOptions& options, OnToken&& on_token) {
        const std::string text(prompt);  // the C ABI takes a NUL-terminated prompt
        return run(options, on_token, [&](const inlay_generate_params* p, inlay_result** out) {
            return inlay_session_generate(get(), text.c_str(), p, out);
        });
    }
    Result generate(std::string_view prompt, const GenerateOptions& options = {}) {
        return generate(prompt, options, nullptr);
    }

    // Same with token ids (nothing is added, not even BOS).
    template <class OnToken>
    Result generate_tokens(std::span<const int32_t> tokens, const GenerateOptions& options, OnToken&& on_token) {
        return run(options, on_token, [&](const inlay_generate_params* p, inlay_result** out) {
            return inlay_session_generate_tokens(get(), tokens.data(), tokens.size(), p, out);
        });
    }
    Result generate_tokens(std::span<const int32_t> tokens, const GenerateOptions& options = {}) {
        return generate_tokens(tokens, options, nullptr);
    }

    // One chat turn: renders the whole conversation and generates the reply, processing
    // only what the session's history lacks (inlay_session_chat). Append the reply's
    // text as an "assistant" message for the next turn.
    template <class OnToken>
    Result chat(std::span<const ChatMessage> messages, const ChatOptions& chat_options, const GenerateOptions& options,
                OnToken&& on_token) {
        const auto msgs = detail::chat_messages(messages);
        const inlay_chat_params cp = detail::chat_params(chat_options);
        return run(options, on_token, [&](const inlay_generate_params* p, inlay_result** out) {
            return inlay_session_chat(get(), msgs.data(), msgs.size(), &cp, p, out);
        });
    }
    Result chat(std::span<const ChatMessage> messages, const ChatOptions& chat_options = {},
                const GenerateOptions& options = {}) {
        return chat(messages, chat_options, options, nullptr);
    }

    // Teacher forcing: appends `tokens`; returns tokens.size() * n_vocab() logits.
    [[nodiscard]] std::vector<float> eval_logits(std::span<const int32_t> tokens) {
        std::vector<float> logits(tokens.size() * n_vocab_);
        detail::check(inlay_session_eval_logits(get(), tokens.data(), tokens.size(), logits.data(), logits.size()));
        return logits;
    }

    void reset() { detail::check(inlay_session_reset(get())); }
    [[nodiscard]] size_t n_tokens() const {
        size_t n = 0;
        detail::check(inlay_session_n_tokens(get(), &n));
        return n;
    }
    // Safe from any thread while another one generates.
    void cancel() noexcept { inlay_session_cancel(get()); }
    [[nodiscard]] size_t n_vocab() const noexcept { return n_vocab_; }

    // Speculative decoding over every generate call so far.
    [[nodiscard]] inlay_speculation_stats speculation_stats() const {
        inlay_speculation_stats stats{};
        stats.struct_size = sizeof stats;
        detail::check(inlay_session_get_speculation_stats(get(), &stats));
        return stats;
    }

    // A new session continuing this conversation, sharing its KV (copy-on-write).
    [[nodiscard]] Session fork() const {
        inlay_session* raw = nullptr;
        detail::check(inlay_session_fork(get(), &raw));
        return Session(raw, n_vocab_);
    }
    // The conversation and its KV to / from a session file (validated when read).
    void save(const std::string& path) const { detail::check(inlay_session_save(get(), path.c_str())); }
    void restore(const std::string& path) { detail::check(inlay_session_restore(get(), path.c_str())); }

private:
    Session(inlay_session* handle, size_t n_vocab) noexcept : handle_(handle), n_vocab_(n_vocab) {}

    template <class OnToken, class Call>
    Result run(const GenerateOptions& options, OnToken& on_token, Call&& call) {
        inlay_generate_params p = options.params;
        std::vector<const char*> stop;
        stop.reserve(options.stop.size());
        for (const std::string& s : options.stop) stop.push_back(s.c_str());
        p.stop = stop.empty() ? nullptr : stop.data();
        p.n_stop = stop.size();

        using Fn = std::remove_reference_t<OnToken>;
        struct Ctx {
            Fn* fn;
            detail::CallbackGuard guard;
        } ctx{&on_token, {}};
        p.on_token = nullptr;
        p.user = nullptr;
        if constexpr (!std::is_same_v<std::remove_cvref_t<OnToken>, std::nullptr_t>) {
            if (has_target(on_token)) {
                p.on_token = [](int32_t token, const char* piece, size_t len, void* user) -> bool {
                    auto* c = static_cast<Ctx*>(user);
                    try {
                        return static_cast<bool>((*c->fn)(token, std::string_view(piece, len)));
                    } catch (...) {
                        c->guard.error = std::current_exception();
                        return false;
                    }
                };
                p.user = &ctx;
            }
        }
        inlay_result* raw = nullptr;
        const inlay_status status = call(&p, &raw);
        Result result(raw);
        ctx.guard.rethrow_if_any();
        if (raw && (status == INLAY_ERR_CANCELLED || status == INLAY_ERR_CONTEXT_FULL)) return result;
        detail::check(status);
        return result;
    }

    template <class F>
    struct IsStdFunction : std::false_type {};
    template <class R, class... A>
    struct IsStdFunction<std::function<R(A...)>> : std::true_type {};

    // False for an empty std::function or a null function pointer (no streaming then).
    template <class F>
    static bool has_target(const F& f) {
        if constexpr (std::is_pointer_v<F>) {
            return f != nullptr;
        } else if constexpr (IsStdFunction<std::remove_cv_t<F>>::value) {
            return static_cast<bool>(f);
        } else {
            return true;
        }
    }

    std::unique_ptr<inlay_session, detail::Deleter<inlay_session, inlay_session_free>> handle_;
    size_t n_vocab_ = 0;
};

}  // namespace cxx_v1
}  // namespace inlay

#endif  // INLAY_INLAY_HPP
