#include "template/chat_template.h"

#include "core/error.h"

namespace inlay {

tmpl::TemplateOptions ChatTemplate::default_options() {
    tmpl::TemplateOptions options;
    options.name = "chat template";
    return options;
}

ChatTemplate::ChatTemplate(std::string_view source, std::string bos_token, std::string eos_token,
                           tmpl::TemplateOptions options)
    : template_(source, std::move(options)), bos_token_(std::move(bos_token)), eos_token_(std::move(eos_token)) {}

std::string ChatTemplate::apply(const std::vector<ChatMessage>& messages, const ChatTemplateInputs& inputs) const {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const ChatMessage& m : messages) list.push_back({{"role", m.role}, {"content", m.content}});
    return apply_json(list, inputs);
}

std::string ChatTemplate::apply_json(const nlohmann::ordered_json& messages, const ChatTemplateInputs& inputs) const {
    if (!messages.is_array()) fail(INLAY_ERR_INVALID_ARGUMENT, "chat messages must be a list");
    tmpl::Object context;
    context.set("messages", tmpl::Value::from_json(messages));
    context.set("add_generation_prompt", tmpl::Value(inputs.add_generation_prompt));
    context.set("bos_token", tmpl::Value(bos_token_));
    context.set("eos_token", tmpl::Value(eos_token_));
    if (inputs.enable_thinking) context.set("enable_thinking", tmpl::Value(*inputs.enable_thinking));
    if (!inputs.tools.is_null()) context.set("tools", tmpl::Value::from_json(inputs.tools));
    if (!inputs.extra.is_null()) {
        if (!inputs.extra.is_object())
            fail(INLAY_ERR_INVALID_ARGUMENT, "extra chat template variables must be an object");
        for (const auto& [k, v] : inputs.extra.items()) context.set(k, tmpl::Value::from_json(v));
    }
    return template_.render(context);
}

}  // namespace inlay
