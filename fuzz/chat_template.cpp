// Fuzz target: the chat-template engine (lib/template): parsing any template text and
// rendering it on a conversation, as inlay_chat_apply_template does.
//
// Input: byte 0 holds flags (bit 0 add_generation_prompt; bits 1-2 enable_thinking
// unset/false/true; bit 3 a `tools` list), then the template source up to the first NUL
// byte, then the messages: a JSON array of message objects (apply_json), or else
// NUL-separated records "role\x01content" (made valid UTF-8 first, as the C ABI
// requires of messages; the template itself may hold any bytes, as a GGUF string can).
// Seeds: the templates and contexts of tests/template/data/jinja_cases.json, and the
// conversations of chat_cases.json under small ChatML and Llama 3 style templates
// written here.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/utf8.h"
#include "fuzz_support.h"
#include "template/chat_template.h"
#include "support/test_paths.h"

namespace inlay::fuzz {
namespace {

constexpr const char* kChatml =
    "{%- if tools %}{{- '<|im_start|>system\\n' }}{%- for t in tools %}{{ t | tojson }}\\n{%- endfor %}"
    "{{- '<|im_end|>\\n' }}{%- endif %}"
    "{%- for m in messages %}{%- if m.role == 'assistant' and m.reasoning_content is defined %}"
    "{{- '<|im_start|>assistant\\n<think>\\n' + m.reasoning_content.strip() + '\\n</think>\\n\\n' + m.content + "
    "'<|im_end|>\\n' }}{%- else %}{{- '<|im_start|>' + m.role + '\\n' + m.content | trim + '<|im_end|>\\n' }}"
    "{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}"
    "{%- endif %}";
constexpr const char* kLlama3 =
    "{{- bos_token }}{%- set ns = namespace(system='') %}"
    "{%- if messages[0]['role'] == 'system' %}{%- set ns.system = messages[0]['content'] | trim %}"
    "{%- set messages = messages[1:] %}{%- endif %}"
    "{%- if ns.system %}{{- '<|start_header_id|>system<|end_header_id|>\\n\\n' + ns.system + '<|eot_id|>' }}{%- endif %}"
    "{%- for message in messages %}"
    "{%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{- raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{%- endif %}"
    "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim + "
    "'<|eot_id|>' }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}";

std::string json_path(const char* name) {
    return test::read_file(std::filesystem::path(INLAY_SOURCE_DIR) / "tests/template/data" / name);
}

}  // namespace

std::vector<Seed> seeds() {
    std::vector<Seed> out;
    const auto jinja = nlohmann::ordered_json::parse(json_path("jinja_cases.json"));
    size_t i = 0;
    for (const auto& c : jinja.at("cases")) {
        std::string bytes(1, '\x01');
        bytes += c.at("template").get<std::string>();
        bytes.push_back('\0');
        const auto& ctx = c.at("context");
        bytes += ctx.contains("messages") ? ctx.at("messages").dump() : R"([{"role":"user","content":"Hi"}])";
        out.push_back({"jinja-" + std::to_string(i++), bytes});
    }
    const auto chats = nlohmann::ordered_json::parse(json_path("chat_cases.json"));
    i = 0;
    for (const auto& c : chats.at("cases")) {
        const bool gen = c.value("add_generation_prompt", true);
        for (const char* source : {kChatml, kLlama3}) {
            std::string json_form(1, static_cast<char>((gen ? 1 : 0) | (i % 3) << 1 | (i % 2) << 3));
            json_form += source;
            json_form.push_back('\0');
            std::string record_form = json_form;
            json_form += c.at("messages").dump();
            for (const auto& m : c.at("messages")) {
                if (record_form.back() != '\0') record_form.push_back('\0');
                record_form += m.value("role", "user") + "\x01" + m.value("content", "");
            }
            out.push_back({"chat-" + std::to_string(i) + "-json", json_form});
            out.push_back({"chat-" + std::to_string(i) + "-records", record_form});
            ++i;
        }
    }
    return out;
}

}  // namespace inlay::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace inlay;
    if (size < 1) return 0;
    const uint8_t flags = data[0];
    const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
    const size_t nul = rest.find('\0');
    const std::string_view source = rest.substr(0, nul);
    const std::string_view messages_text = nul == std::string_view::npos ? "" : rest.substr(nul + 1);

    ChatTemplateInputs inputs;
    inputs.add_generation_prompt = flags & 1;
    if ((flags >> 1 & 3) == 1) inputs.enable_thinking = false;
    if ((flags >> 1 & 3) >= 2) inputs.enable_thinking = true;
    if (flags & 8)
        inputs.tools = nlohmann::ordered_json::parse(
            R"([{"type":"function","function":{"name":"get_weather","parameters":{"type":"object",)"
            R"("properties":{"city":{"type":"string"}}}}}])");

    std::optional<ChatTemplate> tmpl;
    if (fuzz::expect_clean("ChatTemplate parse", [&] { tmpl.emplace(source, "<s>", "</s>"); }) != INLAY_OK) return 0;

    auto json = nlohmann::ordered_json::parse(messages_text, nullptr, /*allow_exceptions=*/false);
    if (!json.is_discarded() && json.is_array()) {
        fuzz::expect_clean("ChatTemplate::apply_json", [&] { (void)tmpl->apply_json(json, inputs); });
        return 0;
    }
    std::vector<ChatMessage> messages;
    size_t at = 0;
    while (at < messages_text.size()) {
        size_t end = messages_text.find('\0', at);
        if (end == std::string_view::npos) end = messages_text.size();
        const std::string_view record = messages_text.substr(at, end - at);
        const size_t sep = record.find('\x01');
        messages.push_back({utf8::sanitize(record.substr(0, sep)),
                            sep == std::string_view::npos ? "" : utf8::sanitize(record.substr(sep + 1))});
        at = end + 1;
    }
    fuzz::expect_clean("ChatTemplate::apply", [&] { (void)tmpl->apply(messages, inputs); });
    return 0;
}
