// Chat turns on a Session: a conversation of {role, content} messages is rendered with
// the model's chat template, tokenized, and generated on the session while keeping its
// KV cache. Only what is new since the previous turn is evaluated: the rendered
// conversation's tokens are compared with the session's history, the session is
// truncated to the longest common prefix (a template that rewrites earlier turns, such
// as Qwen3 dropping old <think> blocks, just moves that point back), and the rest is fed
// to Session::generate.
//
//   ChatTemplate t = model_chat_template(model);
//   std::vector<ChatMessage> msgs = {{"user", "Hi"}};
//   GenerateResult r = chat(session, t, msgs, {}, options);
//   msgs.push_back({"assistant", r.text});
//
// Threading is the Session's (one thread at a time per session).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/session.h"
#include "template/chat_template.h"

namespace inlay {

// The Jinja source of the model's chat template: GGUF tokenizer.chat_template (the
// safetensors loader stores tokenizer_config.json's there too), else, for a model loaded
// from a folder, the folder's chat_template.jinja or tokenizer_config.json.
// INLAY_ERR_MISSING when there is none.
std::string model_chat_template_source(const Model& model);

// The model's template (or `source_override` when not empty) with the model's BOS and
// EOS token texts. Template syntax errors throw (see template.h).
ChatTemplate model_chat_template(const Model& model, std::string_view source_override = {});

struct ChatTurn {
    std::string prompt;           // the rendered conversation
    std::vector<int32_t> tokens;  // all its tokens
    size_t reused = 0;            // leading tokens kept from the session's history
};

// Renders and tokenizes the conversation (special tokens parsed; BOS prepended when the
// vocabulary asks for it and the template did not write it) and truncates `session`
// to the common prefix. The caller then generates with tokens[reused..], never empty.
// INLAY_ERR_CONTEXT_FULL if the conversation does not fit the session's context.
ChatTurn prepare_chat_turn(Session& session, const ChatTemplate& chat_template,
                           const std::vector<ChatMessage>& messages, const ChatTemplateInputs& inputs);

// prepare_chat_turn, then Session::generate on the new tokens.
GenerateResult chat(Session& session, const ChatTemplate& chat_template, const std::vector<ChatMessage>& messages,
                    const ChatTemplateInputs& inputs, const GenerateOptions& options);

}  // namespace inlay
