// C ABI: sessions, generation, results, teacher-forced logits.
#include <cmath>
#include <cstddef>
#include <cstring>
#include <random>

#include "capi/capi_common.h"
#include "capi/handles.h"
#include "core/utf8.h"

using inlay::capi::guarded;
using inlay::capi::require_arg;
using inlay::capi::require_params;

namespace {

inlay::GenerateOptions to_options(const inlay_generate_params& p) {
    inlay::GenerateOptions o;
    o.max_tokens = p.max_tokens;
    o.sampling.temperature = p.temperature;
    o.sampling.top_k = p.top_k;
    o.sampling.top_p = p.top_p;
    o.sampling.min_p = p.min_p;
    o.sampling.repeat_penalty = p.repeat_penalty;
    o.sampling.frequency_penalty = p.frequency_penalty;
    o.sampling.presence_penalty = p.presence_penalty;
    o.sampling.penalty_last_n = p.penalty_last_n;
    o.sampling.seed = p.seed;
    if (p.seed == UINT64_MAX) o.sampling.seed = std::random_device{}() * 0x9e3779b97f4a7c15ull ^ std::random_device{}();
    o.ignore_eos = p.ignore_eos;
    require_arg(p.n_stop == 0 || p.stop != nullptr, "inlay_session_generate", "stop is NULL with n_stop > 0");
    require_arg(p.n_stop <= 1024, "inlay_session_generate", "n_stop must be at most 1024");
    for (size_t i = 0; i < p.n_stop; ++i) {
        require_arg(p.stop[i] != nullptr, "inlay_session_generate", "a stop string is NULL");
        inlay::utf8::require_valid(p.stop[i], "inlay_session_generate: a stop string");
        require_arg(p.stop[i][0] != '\0', "inlay_session_generate", "a stop string is empty");
        o.stop_strings.emplace_back(p.stop[i]);
    }
    if (p.on_token) {
        o.on_token = [fn = p.on_token, user = p.user](int32_t token, std::string_view piece) {
            const std::string copy(piece);  // NUL-terminated for C callers
            return fn(token, copy.c_str(), copy.size(), user);
        };
    }
    return o;
}

inlay_generate_params read_params(const inlay_generate_params* params) {
    return inlay::capi::read_params(params, "inlay_session_generate", "inlay_generate_params");
}

inlay::SpeculationOptions to_speculation(const inlay_session_params& p) {
    using Mode = inlay::SpeculationOptions::Mode;
    inlay::SpeculationOptions o;
    switch (p.speculation) {
        case INLAY_SPECULATION_NONE: return o;
        case INLAY_SPECULATION_DRAFT_MODEL:
            require_arg(p.draft_model != nullptr, "inlay_session_create",
                        "speculation is INLAY_SPECULATION_DRAFT_MODEL but draft_model is NULL");
            o.mode = Mode::draft_model;
            o.draft = p.draft_model->model;
            break;
        case INLAY_SPECULATION_PROMPT_LOOKUP: o.mode = Mode::prompt_lookup; break;
        default:
            inlay::fail(INLAY_ERR_INVALID_ARGUMENT, "inlay_session_create: speculation {} is not an inlay_speculation",
                        p.speculation);
    }
    o.n_draft = p.n_draft;
    o.n_draft_min = p.n_draft_min;
    o.p_min = p.p_min;
    return o;
}

inlay_status finish(inlay::GenerateResult&& result, inlay_result** out_result) {
    inlay_status status = result.stop_reason == inlay::StopReason::cancelled ? INLAY_ERR_CANCELLED : INLAY_OK;
    std::string message = "generation was cancelled";
    if (result.status != INLAY_OK) {
        status = result.status;  // INLAY_ERR_KV_FULL: the pool ran out; the partial result is kept
        message = result.error;
    }
    if (out_result) *out_result = new inlay_result{std::move(result)};
    if (status != INLAY_OK) inlay::capi::set_error(status, message);
    return status;
}

}  // namespace

extern "C" {

INLAY_API void inlay_session_params_init_size(inlay_session_params* params, size_t size) {
    inlay::capi::init_sized(params, size, [](inlay_session_params& p) {
        const inlay::SpeculationOptions defaults;
        p.speculation = INLAY_SPECULATION_NONE;
        p.n_draft = defaults.n_draft;
        p.n_draft_min = defaults.n_draft_min;
        p.p_min = defaults.p_min;
    });
}

// Init without a size: the symbol that programs compiled before *_init_size existed
// call. It writes the struct as ABI 1 froze it (docs/ABI.md), never more.
INLAY_API void(inlay_session_params_init)(inlay_session_params* params) {
    inlay_session_params_init_size(params, offsetof(inlay_session_params, speculation));
}

INLAY_API inlay_status inlay_session_create(inlay_model* model, const inlay_session_params* params,
                                            inlay_session** out_session) {
    if (out_session) *out_session = nullptr;
    return guarded("inlay_session_create", [&] {
        require_arg(model != nullptr, "inlay_session_create", "model is NULL");
        require_arg(out_session != nullptr, "inlay_session_create", "out_session is NULL");
        const inlay_session_params p =
            inlay::capi::read_params(params, "inlay_session_create", "inlay_session_params");
        require_arg(p.context_length >= 0, "inlay_session_create", "context_length must not be negative");
        const inlay::SpeculationOptions spec = to_speculation(p);
        auto handle = std::make_unique<inlay_session>();
        handle->session = std::make_unique<inlay::Session>(model->engine, p.context_length);
        if (spec.mode != inlay::SpeculationOptions::Mode::none) handle->session->set_speculation(spec);
        *out_session = handle.release();
    });
}

INLAY_API void inlay_session_free(inlay_session* session) { delete session; }

INLAY_API inlay_status inlay_session_reset(inlay_session* session) {
    return guarded("inlay_session_reset", [&] {
        require_arg(session != nullptr, "inlay_session_reset", "session is NULL");
        session->session->reset();
    });
}

INLAY_API inlay_status inlay_session_n_tokens(const inlay_session* session, size_t* n_tokens) {
    return guarded("inlay_session_n_tokens", [&] {
        require_arg(session != nullptr, "inlay_session_n_tokens", "session is NULL");
        require_arg(n_tokens != nullptr, "inlay_session_n_tokens", "n_tokens is NULL");
        *n_tokens = session->session->n_tokens();
    });
}

INLAY_API inlay_status inlay_session_cancel(inlay_session* session) {
    return guarded("inlay_session_cancel", [&] {
        require_arg(session != nullptr, "inlay_session_cancel", "session is NULL");
        session->session->cancel();
    });
}

INLAY_API void inlay_generate_params_init_size(inlay_generate_params* params, size_t size) {
    inlay::capi::init_sized(params, size, [](inlay_generate_params& p) {
        p.max_tokens = 256;
        p.temperature = 0.8f;
        p.top_k = 40;
        p.top_p = 0.95f;
        p.min_p = 0.05f;
        p.repeat_penalty = 1.0f;
        p.penalty_last_n = 64;
        p.seed = UINT64_MAX;
        p.add_bos = true;
        p.parse_special = true;
    });
}

// Init without a size: the symbol that programs compiled before *_init_size existed
// call. It writes the struct as ABI 1 froze it (docs/ABI.md), never more.
INLAY_API void(inlay_generate_params_init)(inlay_generate_params* params) {
    inlay_generate_params_init_size(params, sizeof(inlay_generate_params));
}

INLAY_API inlay_status inlay_session_generate(inlay_session* session, const char* prompt,
                                              const inlay_generate_params* params, inlay_result** out_result) {
    if (out_result) *out_result = nullptr;
    inlay::GenerateResult result;
    const inlay_status status = guarded("inlay_session_generate", [&] {
        require_arg(session != nullptr, "inlay_session_generate", "session is NULL");
        require_arg(prompt != nullptr, "inlay_session_generate", "prompt is NULL");
        const std::string_view text(prompt);
        inlay::utf8::require_valid(text, "inlay_session_generate: prompt");
        const inlay_generate_params p = read_params(params);
        const auto options = to_options(p);
        const auto input = session->session->tokenize_input(text, p.add_bos, p.parse_special);
        result = session->session->generate(input, options);
    });
    if (status != INLAY_OK) return status;
    return finish(std::move(result), out_result);
}

INLAY_API inlay_status inlay_session_generate_tokens(inlay_session* session, const int32_t* tokens, size_t n_tokens,
                                                     const inlay_generate_params* params, inlay_result** out_result) {
    if (out_result) *out_result = nullptr;
    inlay::GenerateResult result;
    const inlay_status status = guarded("inlay_session_generate_tokens", [&] {
        require_arg(session != nullptr, "inlay_session_generate_tokens", "session is NULL");
        require_arg(tokens != nullptr || n_tokens == 0, "inlay_session_generate_tokens", "tokens is NULL");
        const inlay_generate_params p = read_params(params);
        result = session->session->generate(std::span<const int32_t>(tokens, n_tokens), to_options(p));
    });
    if (status != INLAY_OK) return status;
    return finish(std::move(result), out_result);
}

INLAY_API void inlay_result_free(inlay_result* result) { delete result; }

INLAY_API const char* inlay_result_text(const inlay_result* result) {
    return result ? result->result.text.c_str() : "";
}

INLAY_API const int32_t* inlay_result_tokens(const inlay_result* result, size_t* n) {
    if (n) *n = result ? result->result.tokens.size() : 0;
    return result ? result->result.tokens.data() : nullptr;
}

INLAY_API const int32_t* inlay_result_prompt_tokens(const inlay_result* result, size_t* n) {
    if (n) *n = result ? result->result.prompt_tokens.size() : 0;
    return result ? result->result.prompt_tokens.data() : nullptr;
}

INLAY_API inlay_stop_reason inlay_result_stop_reason(const inlay_result* result) {
    if (!result) return INLAY_STOP_NONE;
    switch (result->result.stop_reason) {
        case inlay::StopReason::none: return INLAY_STOP_NONE;
        case inlay::StopReason::end_of_generation: return INLAY_STOP_EOG;
        case inlay::StopReason::max_tokens: return INLAY_STOP_MAX_TOKENS;
        case inlay::StopReason::stop_string: return INLAY_STOP_STRING;
        case inlay::StopReason::callback: return INLAY_STOP_CALLBACK;
        case inlay::StopReason::cancelled: return INLAY_STOP_CANCELLED;
        case inlay::StopReason::context_full: return INLAY_STOP_CONTEXT_FULL;
    }
    return INLAY_STOP_NONE;
}

INLAY_API inlay_status inlay_result_timings(const inlay_result* result, inlay_timings* timings) {
    return guarded("inlay_result_timings", [&] {
        require_arg(result != nullptr, "inlay_result_timings", "result is NULL");
        require_arg(timings != nullptr, "inlay_result_timings", "timings is NULL");
        require_params(timings, "inlay_result_timings", "inlay_timings");
        const inlay::GenerateResult& r = result->result;
        inlay_timings t{};
        t.struct_size = timings->struct_size;
        t.prompt_tokens = r.prefill_tokens;
        t.generated_tokens = static_cast<int64_t>(r.tokens.size());
        t.prefill_s = r.prefill_seconds;
        t.decode_s = r.decode_seconds;
        t.prompt_tokens_reused = r.reused_tokens;
        t.draft_tokens_proposed = r.speculation.proposed;
        t.draft_tokens_accepted = r.speculation.accepted;
        t.prefill_tokens_per_s = r.prefill_seconds > 0 ? static_cast<double>(r.prefill_tokens) / r.prefill_seconds : 0.0;
        // The first token comes from the prefill; decode time covers the rest.
        t.decode_tokens_per_s = r.decode_seconds > 0 && r.tokens.size() > 1
                                    ? static_cast<double>(r.tokens.size() - 1) / r.decode_seconds
                                    : 0.0;
        inlay::capi::write_out(timings, t);
    });
}

INLAY_API inlay_status inlay_session_get_speculation_stats(const inlay_session* session,
                                                           inlay_speculation_stats* stats) {
    return guarded("inlay_session_get_speculation_stats", [&] {
        require_arg(session != nullptr, "inlay_session_get_speculation_stats", "session is NULL");
        require_arg(stats != nullptr, "inlay_session_get_speculation_stats", "stats is NULL");
        require_params(stats, "inlay_session_get_speculation_stats", "inlay_speculation_stats");
        const inlay::SpeculationStats s = session->session->speculation_stats();
        inlay_speculation_stats out{};
        out.rounds = s.rounds;
        out.tokens_proposed = s.proposed;
        out.tokens_accepted = s.accepted;
        out.acceptance_rate = s.acceptance_rate();
        inlay::capi::write_out(stats, out);
    });
}

INLAY_API inlay_status inlay_session_eval_logits(inlay_session* session, const int32_t* tokens, size_t n,
                                                 float* logits, size_t capacity) {
    return guarded("inlay_session_eval_logits", [&] {
        require_arg(session != nullptr, "inlay_session_eval_logits", "session is NULL");
        require_arg(tokens != nullptr || n == 0, "inlay_session_eval_logits", "tokens is NULL");
        require_arg(logits != nullptr || capacity == 0, "inlay_session_eval_logits", "logits is NULL");
        const auto n_vocab = static_cast<size_t>(session->session->model().spec().n_vocab);
        if (n > capacity / n_vocab)
            inlay::fail(INLAY_ERR_BUFFER_TOO_SMALL, "inlay_session_eval_logits: {} tokens need {} floats, capacity is {}",
                        n, n * n_vocab, capacity);
        const auto out = session->session->eval_logits(std::span<const int32_t>(tokens, n));
        if (!out.empty()) std::memcpy(logits, out.data(), out.size() * sizeof(float));
    });
}

}  // extern "C"
