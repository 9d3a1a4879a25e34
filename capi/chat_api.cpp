// C ABI: chat templates and chat turns on a session (runtime/chat_session.h).
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "capi/capi_common.h"
#include "capi/handles.h"
#include "core/utf8.h"
#include "runtime/chat_session.h"

using inlay::capi::guarded;
using inlay::capi::require_arg;

namespace {

std::vector<inlay::ChatMessage> read_messages(const inlay_chat_message* messages, size_t n, const char* function) {
    require_arg(messages != nullptr || n == 0, function, "messages is NULL");
    require_arg(n <= (size_t{1} << 24), function, "too many messages");
    std::vector<inlay::ChatMessage> out;
    out.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        const inlay_chat_message& m = messages[i];
        if (!m.role || !m.content)
            inlay::fail(INLAY_ERR_INVALID_ARGUMENT, "{}: messages[{}].{} is NULL", function, i,
                        m.role ? "content" : "role");
        inlay::utf8::require_valid(m.role, fmt::format("{}: messages[{}].role", function, i));
        inlay::utf8::require_valid(m.content, fmt::format("{}: messages[{}].content", function, i));
        out.push_back({m.role, m.content});
    }
    return out;
}

inlay_chat_params read_chat_params(const inlay_chat_params* params, const char* function) {
    inlay_chat_params p = inlay::capi::read_params(params, function, "inlay_chat_params");
    // A C enum field may hold any int; loading one outside the enumerators as the C++ enum
    // type is undefined, so the check reads the raw integer.
    int32_t thinking = 0;
    static_assert(sizeof(p.thinking) == sizeof(thinking));
    std::memcpy(&thinking, &p.thinking, sizeof(thinking));
    require_arg(thinking == INLAY_THINKING_DEFAULT || thinking == INLAY_THINKING_OFF || thinking == INLAY_THINKING_ON,
                function, "thinking must be INLAY_THINKING_DEFAULT, _OFF or _ON");
    return p;
}

inlay::ChatTemplateInputs to_inputs(const inlay_chat_params& p) {
    inlay::ChatTemplateInputs in;
    in.add_generation_prompt = p.add_generation_prompt;
    if (p.thinking != INLAY_THINKING_DEFAULT) in.enable_thinking = p.thinking == INLAY_THINKING_ON;
    return in;
}

inlay::ChatTemplate template_for(const inlay::Model& model, const inlay_chat_params& p) {
    if (p.chat_template && p.chat_template[0] != '\0') return inlay::model_chat_template(model, p.chat_template);
    return inlay::model_chat_template(model);
}

}  // namespace

extern "C" {

INLAY_API void inlay_chat_params_init_size(inlay_chat_params* params, size_t size) {
    inlay::capi::init_sized(params, size, [](inlay_chat_params& p) {
        p.thinking = INLAY_THINKING_DEFAULT;
        p.add_generation_prompt = true;
    });
}

// Init without a size: the symbol that programs compiled before *_init_size existed
// call. It writes the struct as ABI 1 froze it (docs/ABI.md), never more.
INLAY_API void(inlay_chat_params_init)(inlay_chat_params* params) {
    inlay_chat_params_init_size(params, sizeof(inlay_chat_params));
}

INLAY_API inlay_status inlay_chat_apply_template(const inlay_model* model, const inlay_chat_message* messages, size_t n,
                                                 const inlay_chat_params* params, char* out, size_t capacity,
                                                 size_t* length) {
    constexpr const char* fn = "inlay_chat_apply_template";
    return guarded(fn, [&] {
        require_arg(model != nullptr, fn, "model is NULL");
        require_arg(length != nullptr, fn, "length is NULL");
        require_arg(out != nullptr || capacity == 0, fn, "out is NULL with a nonzero capacity");
        const auto msgs = read_messages(messages, n, fn);
        const inlay_chat_params p = read_chat_params(params, fn);
        const std::string text = template_for(*model->model, p).apply(msgs, to_inputs(p));
        *length = text.size();
        if (text.size() + 1 > capacity)
            inlay::fail(INLAY_ERR_BUFFER_TOO_SMALL, "{}: {} bytes (+1 for the NUL) do not fit in {}", fn, text.size(),
                        capacity);
        std::memcpy(out, text.data(), text.size());
        out[text.size()] = '\0';
    });
}

INLAY_API inlay_status inlay_session_chat(inlay_session* session, const inlay_chat_message* messages, size_t n,
                                          const inlay_chat_params* chat_params, const inlay_generate_params* gen_params,
                                          inlay_result** out_result) {
    constexpr const char* fn = "inlay_session_chat";
    if (out_result) *out_result = nullptr;
    std::vector<int32_t> input;
    const inlay_status status = guarded(fn, [&] {
        require_arg(session != nullptr, fn, "session is NULL");
        const auto msgs = read_messages(messages, n, fn);
        const inlay_chat_params p = read_chat_params(chat_params, fn);
        inlay::Session& s = *session->session;
        const inlay::ChatTurn turn = inlay::prepare_chat_turn(s, template_for(s.model(), p), msgs, to_inputs(p));
        input.assign(turn.tokens.begin() + static_cast<std::ptrdiff_t>(turn.reused), turn.tokens.end());
    });
    if (status != INLAY_OK) return status;
    // The tokens are exactly what to append: generation proper is the token call's.
    return inlay_session_generate_tokens(session, input.data(), input.size(), gen_params, out_result);
}

}  // extern "C"
