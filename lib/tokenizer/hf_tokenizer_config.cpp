// tokenizer_config.json, chat_template.jinja and generation_config.json of a Hugging
// Face model folder.
#include <cerrno>
#include <cstdio>
#include <system_error>

#include "core/log.h"
#include "tokenizer/hf_files.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/json_node.h"

namespace inlay {

namespace {

// A special token: a string, an AddedToken object {"content": ...} or null.
std::optional<std::string> token_text(const JsonNode& parent, std::string_view key) {
    const auto n = parent.find_non_null(key);
    if (!n) return std::nullopt;
    if (n->is_string()) return n->string();
    if (n->is_object()) return n->at("content").string();
    fail(INLAY_ERR_BAD_FORMAT, "{}: expected a token (a string or an object with \"content\"), found {}", n->where(),
         n->type_name());
}

std::optional<bool> flag(const JsonNode& parent, std::string_view key) {
    const auto n = parent.find_non_null(key);
    if (!n) return std::nullopt;
    return n->boolean();
}

std::string chat_template_of(const JsonNode& node) {
    if (node.is_string()) return node.string();
    if (!node.is_array()) {
        fail(INLAY_ERR_BAD_FORMAT, "{}: expected a string or a list of {{name, template}}, found {}", node.where(),
             node.type_name());
    }
    // Named templates (transformers' format for several templates): "default" wins.
    std::optional<std::string> first;
    for (size_t i = 0; i < node.size(); ++i) {
        const JsonNode entry = node.at(i);
        const std::string& name = entry.at("name").string();
        const std::string& text = entry.at("template").string();
        if (name == "default") return text;
        if (!first) first = text;
    }
    if (first) log(LogLevel::info, "{}: no chat template named \"default\"; using the first one", node.where());
    return first.value_or("");
}

}  // namespace

HfTokenizerConfig parse_tokenizer_config(std::string_view json_text, const std::string& origin) {
    const nlohmann::json doc = parse_json_text(json_text, origin);
    const JsonNode root(doc, origin);
    root.require_object();
    HfTokenizerConfig config;
    config.bos_token = token_text(root, "bos_token");
    config.eos_token = token_text(root, "eos_token");
    config.unk_token = token_text(root, "unk_token");
    config.add_bos_token = flag(root, "add_bos_token");
    config.add_eos_token = flag(root, "add_eos_token");
    if (const auto t = root.find_non_null("chat_template")) config.chat_template = chat_template_of(*t);
    return config;
}

HfTokenizerConfig read_tokenizer_config(const std::filesystem::path& folder) {
    HfTokenizerConfig config;
    const auto config_path = folder / "tokenizer_config.json";
    if (std::filesystem::exists(config_path))
        config = parse_tokenizer_config(read_text_file(config_path), config_path.string());

    const auto template_path = folder / "chat_template.jinja";
    if (std::filesystem::exists(template_path)) config.chat_template = read_text_file(template_path);

    const auto generation_path = folder / "generation_config.json";
    if (std::filesystem::exists(generation_path)) {
        const std::string origin = generation_path.string();
        const nlohmann::json doc = parse_json_text(read_text_file(generation_path), origin);
        const JsonNode root(doc, origin);
        root.require_object();
        if (const auto eos = root.find_non_null("eos_token_id")) {
            if (eos->is_array()) {
                for (size_t i = 0; i < eos->size(); ++i)
                    config.eos_token_ids.push_back(eos->at(i).integer(0, INT32_MAX));
            } else {
                config.eos_token_ids.push_back(eos->integer(0, INT32_MAX));
            }
        }
    }
    return config;
}

std::string read_text_file(const std::filesystem::path& path, size_t max_bytes) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) fail(INLAY_ERR_IO, "cannot open {}: {}", path.string(), std::generic_category().message(errno));
    std::string text;
    char buffer[65536];
    size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) {
        if (text.size() + n > max_bytes) {
            std::fclose(f);
            fail(INLAY_ERR_BAD_FORMAT, "{} is larger than {} bytes", path.string(), max_bytes);
        }
        text.append(buffer, n);
    }
    const bool error = std::ferror(f) != 0;
    std::fclose(f);
    if (error) fail(INLAY_ERR_IO, "cannot read {}", path.string());
    return text;
}

}  // namespace inlay
