// ChatTemplate: a model's chat template (Jinja source from tokenizer_config.json or
// GGUF tokenizer.chat_template) applied to a conversation, with the variables that
// Hugging Face transformers' apply_chat_template passes: messages, add_generation_prompt,
// bos_token, eos_token, and optionally tools, enable_thinking and any extra ones.
//
//   ChatTemplate t(source, "<|begin_of_text|>", "<|eot_id|>");
//   std::string prompt = t.apply({{"system", "Be brief."}, {"user", "Hi"}}, {});
//
// Immutable after construction; apply() may run from several threads at once.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "template/template.h"

namespace inlay {

struct ChatMessage {
    std::string role;     // "system", "user", "assistant", "tool", ...
    std::string content;  // UTF-8
};

struct ChatTemplateInputs {
    bool add_generation_prompt = true;    // end with the header of the assistant's turn
    std::optional<bool> enable_thinking;  // unset: the variable is not defined (Qwen3: thinking on)
    nlohmann::ordered_json tools;         // null: no `tools` variable
    nlohmann::ordered_json extra = nlohmann::ordered_json::object();  // more variables (override the above)
};

class ChatTemplate {
public:
    // Parses `source`. Errors are tmpl::TemplateError whose message starts with
    // "chat template:LINE:COLUMN:" (see template.h for the statuses).
    ChatTemplate(std::string_view source, std::string bos_token, std::string eos_token,
                 tmpl::TemplateOptions options = default_options());

    // Renders the conversation. Throws as Template::render; raise_exception in the
    // template (e.g. "roles must alternate") gives INLAY_ERR_INVALID_ARGUMENT.
    [[nodiscard]] std::string apply(const std::vector<ChatMessage>& messages, const ChatTemplateInputs& inputs) const;
    // The same with messages as JSON objects (any fields: tool_calls, reasoning_content...).
    [[nodiscard]] std::string apply_json(const nlohmann::ordered_json& messages,
                                         const ChatTemplateInputs& inputs) const;

    static tmpl::TemplateOptions default_options();

private:
    tmpl::Template template_;
    std::string bos_token_;
    std::string eos_token_;
};

}  // namespace inlay
