#include "model/families/hf_tokenizer.h"

#include <sentencepiece_processor.h>

#include <filesystem>
#include <optional>

#include "core/error.h"
#include "core/mapped_file.h"
#include "io/safetensors_json.h"
#include "tokenizer/hf_tokenizer.h"

namespace inlay {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxJsonDepth = 32;

// The split regexes of the byte-level pre-tokenizers llama.cpp knows, by its names.
constexpr std::string_view kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*)"
    R"(|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*)"
    R"(|\s*[\r\n]+|\s+(?!\S)|\s+)";

Json read_json(const fs::path& path) {
    const MappedFile f(path.string());
    return parse_untrusted_json({reinterpret_cast<const char*>(f.data()), f.size()}, path.string(), kMaxJsonDepth);
}

MetadataValue u32(int64_t v) {
    return MetadataValue::from_int(ValueType::U32, v);
}

// tokenizer_config.json (optional) and the special-token rules shared by both kinds.
struct Specials {
    Json config = Json::object();  // tokenizer_config.json, or {}
    std::string origin;

    // The text of tokenizer_config's `<typ>_token` (a string or {"content": ...}).
    [[nodiscard]] std::optional<std::string> token_text(const std::string& typ) const {
        const auto it = config.find(typ + "_token");
        if (it == config.end() || it->is_null()) return std::nullopt;
        if (it->is_string()) return it->get<std::string>();
        if (it->is_object()) {
            const auto c = it->find("content");
            if (c != it->end() && c->is_string()) return c->get<std::string>();
        }
        fail(INLAY_ERR_BAD_FORMAT, "'{}': \"{}_token\" is neither a string nor {{\"content\": ...}}", origin, typ);
    }
    [[nodiscard]] std::optional<bool> flag(const char* key) const {
        const auto it = config.find(key);
        if (it == config.end() || it->is_null()) return std::nullopt;
        if (!it->is_boolean()) fail(INLAY_ERR_BAD_FORMAT, "'{}': \"{}\" is not a boolean", origin, key);
        return it->get<bool>();
    }
};

Specials read_specials(const std::string& folder) {
    Specials s;
    const fs::path p = fs::path(folder) / "tokenizer_config.json";
    s.origin = p.string();
    std::error_code ec;
    if (fs::exists(p, ec)) {
        s.config = read_json(p);
        if (!s.config.is_object()) fail(INLAY_ERR_BAD_FORMAT, "'{}': not a JSON object", s.origin);
    }
    return s;
}

// Writes the special ids, flags and chat template. `find` maps a token text to its id
// (-1 if absent); `fallback` gives the tokenizer's own id for a type (or -1).
template <class Find, class Fallback>
void add_specials(Metadata& md, const Specials& sp, const HfConfig& config, int64_t n_tokens, Find find,
                  Fallback fallback) {
    const auto config_id = [&](const std::string& typ) -> std::optional<int64_t> {
        if (typ == "bos") return config.bos_token_id;
        if (typ == "eos" && !config.eos_token_ids.empty()) return config.eos_token_ids.front();
        if (typ == "pad") return config.pad_token_id;
        return std::nullopt;
    };
    for (const std::string typ : {"bos", "eos", "unk", "pad"}) {
        std::optional<int64_t> id;
        if (auto text = sp.token_text(typ)) {
            const int64_t found = find(*text);
            if (found < 0)
                fail(INLAY_ERR_BAD_FORMAT, "'{}': {}_token \"{}\" is not in the vocabulary", sp.origin, typ,
                     text->substr(0, 64));
            id = found;
        }
        if (!id) id = config_id(typ);
        if (!id && fallback(typ) >= 0) id = fallback(typ);
        if (id && *id >= 0 && *id < n_tokens) {
            const char* key = typ == "unk" ? "tokenizer.ggml.unknown_token_id" : nullptr;
            md.set(key ? key : fmt::format("tokenizer.ggml.{}_token_id", typ == "pad" ? "padding" : typ), u32(*id));
        }
    }
    if (auto b = sp.flag("add_bos_token")) md.set("tokenizer.ggml.add_bos_token", MetadataValue::from_bool(*b));
    if (auto e = sp.flag("add_eos_token")) md.set("tokenizer.ggml.add_eos_token", MetadataValue::from_bool(*e));
    const auto tmpl = sp.config.find("chat_template");
    if (tmpl != sp.config.end() && tmpl->is_string())
        md.set("tokenizer.chat_template", MetadataValue::from_string(tmpl->get<std::string>()));
}

void pad_vocabulary(std::vector<std::string>& tokens, std::vector<int64_t>& types, std::vector<double>* scores,
                    int64_t n_vocab, const std::string& origin) {
    const auto n = static_cast<int64_t>(tokens.size());
    if (n > n_vocab)
        fail(INLAY_ERR_SHAPE_MISMATCH, "'{}' has {} tokens, more than config.json's vocab_size {}", origin, n, n_vocab);
    for (int64_t id = n; id < n_vocab; ++id) {
        tokens.push_back(fmt::format("[PAD{}]", id));
        types.push_back(static_cast<int64_t>(TokenType::unused));
        if (scores) scores->push_back(-1000.0);
    }
}

Metadata sentencepiece_metadata(const std::string& folder, const fs::path& path, const HfConfig& config) {
    sentencepiece::SentencePieceProcessor sp;
    const auto status = sp.Load(path.string());
    if (!status.ok())
        fail(INLAY_ERR_BAD_FORMAT, "cannot load SentencePiece model '{}': {}", path.string(), status.ToString());
    const int n = sp.GetPieceSize();
    if (n <= 0) fail(INLAY_ERR_BAD_FORMAT, "SentencePiece model '{}' has no pieces", path.string());
    std::vector<std::string> tokens;
    std::vector<double> scores;
    std::vector<int64_t> types;
    for (int id = 0; id < n; ++id) {
        tokens.push_back(sp.IdToPiece(id));
        scores.push_back(sp.GetScore(id));
        TokenType t = TokenType::normal;
        if (sp.IsUnknown(id))
            t = TokenType::unknown;
        else if (sp.IsControl(id))
            t = TokenType::control;
        else if (sp.IsUnused(id))
            t = TokenType::unused;
        else if (sp.IsByte(id))
            t = TokenType::byte;
        types.push_back(static_cast<int64_t>(t));
    }
    pad_vocabulary(tokens, types, &scores, config.vocab_size, path.string());
    // The normalizer's add_dummy_prefix is not exposed without protobuf headers: observe it.
    std::vector<std::string> pieces;
    const bool space_prefix =
        sp.Encode("a", &pieces).ok() && !pieces.empty() && pieces.front().starts_with("\xE2\x96\x81");

    Metadata md;
    md.add("tokenizer.ggml.model", MetadataValue::from_string("llama"));
    md.add("tokenizer.ggml.pre", MetadataValue::from_string("default"));
    const auto n_tokens = static_cast<int64_t>(tokens.size());
    std::unordered_map<std::string, int64_t> ids;
    for (int64_t i = 0; i < n_tokens; ++i) ids.emplace(tokens[static_cast<size_t>(i)], i);
    md.add("tokenizer.ggml.tokens", MetadataValue::from_array({ValueType::STRING, {}, {}, std::move(tokens)}));
    md.add("tokenizer.ggml.scores", MetadataValue::from_array({ValueType::F32, {}, std::move(scores), {}}));
    md.add("tokenizer.ggml.token_type", MetadataValue::from_array({ValueType::I32, std::move(types), {}, {}}));
    md.add("tokenizer.ggml.add_space_prefix", MetadataValue::from_bool(space_prefix));
    const auto find = [&](const std::string& text) -> int64_t {
        const auto it = ids.find(text);
        return it == ids.end() ? -1 : it->second;
    };
    const auto own = [&](const std::string& typ) -> int64_t {
        if (typ == "bos") return sp.bos_id();
        if (typ == "eos") return sp.eos_id();
        if (typ == "unk") return sp.unk_id();
        return sp.pad_id();
    };
    add_specials(md, read_specials(folder), config, n_tokens, find, own);
    return md;
}

bool looks_special(std::string_view t) {
    return t == "<pad>" || t == "<mask>" || (t.starts_with("<|") && t.ends_with("|>")) ||
           (t.starts_with("<\xEF\xBD\x9C") && t.ends_with("\xEF\xBD\x9C>")) || t == "<start_of_turn>" ||
           t == "<end_of_turn>";
}

// The pre-tokenizer's name for tokenizer.ggml.pre.
std::string pre_tokenizer_name(const Json& root, const std::string& origin) {
    const auto pre = root.find("pre_tokenizer");
    if (pre == root.end() || !pre->is_object())
        fail(INLAY_ERR_UNSUPPORTED, "'{}': no pre_tokenizer (only byte-level BPE tokenizers are supported)", origin);
    std::vector<const Json*> parts;
    const auto list = pre->find("pretokenizers");
    if (list != pre->end() && list->is_array())
        for (const auto& p : *list) parts.push_back(&p);
    else
        parts.push_back(&*pre);
    for (const Json* p : parts) {
        if (!p->is_object()) continue;
        const auto pattern = p->find("pattern");
        if (p->value("type", "") == "Split" && pattern != p->end() && pattern->is_object()) {
            const std::string regex = pattern->value("Regex", "");
            if (regex == kQwen2Regex) return "qwen2";
            if (regex == kLlama3Regex) return "llama-bpe";
            fail(INLAY_ERR_UNSUPPORTED,
                 "'{}': the pre-tokenizer's split regex is not one inlay knows (qwen2, llama-bpe)", origin);
        }
        if (p->value("type", "") == "ByteLevel" && p->value("use_regex", true)) return "gpt-2";
    }
    fail(INLAY_ERR_UNSUPPORTED, "'{}': the pre-tokenizer is not one inlay knows (qwen2, llama-bpe, gpt-2)", origin);
}

Metadata bpe_metadata(const std::string& folder, const fs::path& path, const HfConfig& config) {
    const std::string origin = path.string();
    const Json root = read_json(path);
    const auto bad = [&](const std::string& what) { fail(INLAY_ERR_BAD_FORMAT, "'{}': {}", origin, what); };
    if (!root.is_object()) bad("not a JSON object");
    const auto model = root.find("model");
    if (model == root.end() || !model->is_object()) bad("no \"model\" object");
    if (model->value("type", "") != "BPE")
        fail(INLAY_ERR_UNSUPPORTED, "'{}': model type \"{}\" is not supported (BPE)", origin,
             model->value("type", "").substr(0, 32));
    const auto vocab = model->find("vocab");
    const auto merges = model->find("merges");
    if (vocab == model->end() || !vocab->is_object()) bad("model.vocab is not an object");
    if (merges == model->end() || !merges->is_array()) bad("model.merges is not an array");

    std::vector<std::string> tokens(static_cast<size_t>(config.vocab_size));
    std::vector<int64_t> types(tokens.size(), -1);
    const auto place = [&](const std::string& text, const Json& id_json, TokenType type) {
        const auto id = json_int(id_json);
        if (!id || *id < 0)
            bad(fmt::format("token \"{}\" has id {}, not a non-negative integer", text.substr(0, 64), id_json.dump()));
        if (*id >= config.vocab_size)
            fail(INLAY_ERR_SHAPE_MISMATCH, "'{}': token \"{}\" has id {}, beyond config.json's vocab_size {}", origin,
                 text.substr(0, 64), *id, config.vocab_size);
        auto& slot = types[static_cast<size_t>(*id)];
        if (slot >= 0 && tokens[static_cast<size_t>(*id)] != text) bad(fmt::format("id {} is used by two tokens", *id));
        tokens[static_cast<size_t>(*id)] = text;
        slot = static_cast<int64_t>(type);
    };
    for (const auto& [text, id] : vocab->items()) place(text, id, TokenType::normal);
    if (const auto added = root.find("added_tokens"); added != root.end()) {
        if (!added->is_array()) bad("added_tokens is not an array");
        for (const auto& a : *added) {
            if (!a.is_object() || !a.contains("id") || !a.contains("content") || !a["content"].is_string())
                bad("an added token is not an object with id and content");
            const auto& text = a["content"].get_ref<const std::string&>();
            const bool special = a.value("special", false) || looks_special(text);
            place(text, a["id"], special ? TokenType::control : TokenType::user_defined);
        }
    }
    for (size_t id = 0; id < tokens.size(); ++id) {
        if (types[id] < 0) {
            tokens[id] = fmt::format("[PAD{}]", id);
            types[id] = static_cast<int64_t>(TokenType::unused);
        }
    }
    std::vector<std::string> merge_list;
    merge_list.reserve(merges->size());
    for (const auto& m : *merges) {
        if (m.is_string()) {
            merge_list.push_back(m.get<std::string>());
        } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
            merge_list.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
        } else {
            bad(fmt::format("merge {} is neither \"a b\" nor [\"a\", \"b\"]", merge_list.size()));
        }
    }

    Metadata md;
    md.add("tokenizer.ggml.model", MetadataValue::from_string("gpt2"));
    md.add("tokenizer.ggml.pre", MetadataValue::from_string(pre_tokenizer_name(root, origin)));
    std::unordered_map<std::string, int64_t> ids;
    for (size_t i = 0; i < tokens.size(); ++i) ids.emplace(tokens[i], static_cast<int64_t>(i));
    const auto n_tokens = static_cast<int64_t>(tokens.size());
    md.add("tokenizer.ggml.tokens", MetadataValue::from_array({ValueType::STRING, {}, {}, std::move(tokens)}));
    md.add("tokenizer.ggml.token_type", MetadataValue::from_array({ValueType::I32, std::move(types), {}, {}}));
    md.add("tokenizer.ggml.merges", MetadataValue::from_array({ValueType::STRING, {}, {}, std::move(merge_list)}));
    const auto find = [&](const std::string& text) -> int64_t {
        const auto it = ids.find(text);
        return it == ids.end() ? -1 : it->second;
    };
    add_specials(md, read_specials(folder), config, n_tokens, find, [](const std::string&) { return int64_t{-1}; });
    return md;
}

}  // namespace

Metadata gguf_tokenizer_metadata_from_folder(const std::string& folder, const HfConfig& config) {
    switch (folder_tokenizer(folder)) {
        case FolderTokenizer::sentencepiece: return sentencepiece_metadata(folder, fs::path(folder) / "tokenizer.model", config);
        case FolderTokenizer::hf_json: return bpe_metadata(folder, fs::path(folder) / "tokenizer.json", config);
        case FolderTokenizer::none: break;
    }
    fail(INLAY_ERR_MISSING, "'{}' has neither tokenizer.model nor tokenizer.json", folder);
}

}  // namespace inlay
