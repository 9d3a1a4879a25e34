// tokenizer_from_hf_json: a Hugging Face tokenizer.json (BPE model) turned into the
// Vocabulary + merges + split patterns that the byte-level BPE tokenizer runs. Token
// types follow llama.cpp's convert_hf_to_gguf.py (added special tokens and tokens that
// look special, like "<|...|>", are control; other added tokens user-defined), so a
// model gives the same ids whether it is loaded from its folder or from its GGUF.
#include <algorithm>

#include "core/log.h"
#include "tokenizer/hf_files.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/json_node.h"
#include "tokenizer/tokenizer_impls.h"

namespace inlay {

namespace {

// Vocabularies larger than this are rejected before any allocation (the largest
// real ones have ~260k tokens).
constexpr int64_t k_max_tokens = int64_t{1} << 24;

// Hugging Face's ByteLevel pre-tokenizer regex (use_regex: true), GPT-2's.
constexpr std::string_view k_byte_level_regex =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

bool looks_special(std::string_view t) {
    return t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]" ||
           (t.starts_with("<|") && t.ends_with("|>")) ||
           (t.starts_with("<\xEF\xBD\x9C") && t.ends_with("\xEF\xBD\x9C>")) ||  // <｜...｜>
           (t.starts_with("<unused") && t.ends_with(">"));
}

bool is_byte_token_text(std::string_view t) {
    auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); };
    return t.size() == 6 && t.starts_with("<0x") && t[5] == '>' && hex(t[3]) && hex(t[4]);
}

const std::string& type_of(const JsonNode& component) {
    return component.at("type").string();
}

[[noreturn]] void unsupported(const JsonNode& node, std::string_view what, std::string_view supported) {
    fail(INLAY_ERR_UNSUPPORTED, "{}: {} is not supported (supported: {})", node.where(), what, supported);
}

// A literal string as a PCRE2 pattern.
std::string escape_regex(std::string_view s) {
    std::string out;
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x80 && !std::isalnum(u)) out += '\\';
        out += c;
    }
    return out;
}

struct PreTokenization {
    std::vector<std::string> patterns;
    bool byte_level = false;
};

void read_pre_tokenizer(const JsonNode& node, PreTokenization& out) {
    const std::string& type = type_of(node);
    if (out.byte_level) unsupported(node, fmt::format("pre-tokenizer {} after ByteLevel", type), "ByteLevel last");
    if (type == "Sequence") {
        const JsonNode list = node.at("pretokenizers");
        for (size_t i = 0; i < list.size(); ++i) read_pre_tokenizer(list.at(i), out);
    } else if (type == "Split") {
        const std::string behavior = node.find_non_null("behavior") ? node.at("behavior").string() : "Isolated";
        if (behavior != "Isolated") unsupported(node, fmt::format("Split behavior \"{}\"", behavior), "Isolated");
        if (const auto inv = node.find_non_null("invert"); inv && inv->boolean())
            unsupported(node, "Split with invert: true", "invert: false");
        const JsonNode pattern = node.at("pattern");
        if (const auto regex = pattern.find("Regex")) {
            out.patterns.push_back(hf_regex_to_pcre2(regex->string()));
        } else if (const auto literal = pattern.find("String")) {
            out.patterns.push_back(escape_regex(literal->string()));
        } else {
            fail(INLAY_ERR_BAD_FORMAT, "{}: expected {{\"Regex\": ...}} or {{\"String\": ...}}", pattern.where());
        }
    } else if (type == "Digits") {
        const auto individual = node.find_non_null("individual_digits");
        out.patterns.emplace_back(individual && individual->boolean() ? "\\p{N}" : "\\p{N}+");
    } else if (type == "ByteLevel") {
        if (const auto a = node.find_non_null("add_prefix_space"); a && a->boolean())
            unsupported(node, "ByteLevel with add_prefix_space: true", "add_prefix_space: false");
        const auto use_regex = node.find_non_null("use_regex");
        if (!use_regex || use_regex->boolean()) out.patterns.push_back(hf_regex_to_pcre2(k_byte_level_regex));
        out.byte_level = true;
    } else {
        unsupported(node, fmt::format("pre-tokenizer \"{}\"", type), "Sequence, Split, Digits, ByteLevel");
    }
}

// NFC or nothing; returns whether NFC applies.
bool read_normalizer(const JsonNode& node) {
    const std::string& type = type_of(node);
    if (type == "NFC") return true;
    if (type == "Sequence") {
        bool nfc = false;
        const JsonNode list = node.at("normalizers");
        for (size_t i = 0; i < list.size(); ++i) nfc = read_normalizer(list.at(i)) || nfc;
        return nfc;
    }
    unsupported(node, fmt::format("normalizer \"{}\"", type), "none, NFC");
}

void check_decoder(const JsonNode& node) {
    const std::string& type = type_of(node);
    if (type == "ByteLevel") return;
    if (type == "Sequence") {
        const JsonNode list = node.at("decoders");
        for (size_t i = 0; i < list.size(); ++i) check_decoder(list.at(i));
        return;
    }
    unsupported(node, fmt::format("decoder \"{}\"", type), "ByteLevel");
}

// Which special tokens the post-processor puts around a single sequence.
struct PostProcessing {
    std::optional<std::string> prefix;  // a special token before the text (BOS)
    std::optional<std::string> suffix;  // a special token after it (EOS)
};

void read_post_processor(const JsonNode& node, PostProcessing& out) {
    const std::string& type = type_of(node);
    if (type == "ByteLevel") return;
    if (type == "Sequence") {
        const JsonNode list = node.at("processors");
        for (size_t i = 0; i < list.size(); ++i) read_post_processor(list.at(i), out);
        return;
    }
    if (type != "TemplateProcessing")
        unsupported(node, fmt::format("post-processor \"{}\"", type), "ByteLevel, TemplateProcessing");
    const JsonNode single = node.at("single");
    bool seen_sequence = false;
    for (size_t i = 0; i < single.size(); ++i) {
        const JsonNode piece = single.at(i);
        piece.require_object();
        if (const auto special = piece.find("SpecialToken")) {
            std::string id = special->at("id").string();
            if (!seen_sequence) {
                if (out.prefix) unsupported(piece, "more than one special token before the text", "one");
                out.prefix = std::move(id);
            } else {
                if (out.suffix) unsupported(piece, "more than one special token after the text", "one");
                out.suffix = std::move(id);
            }
        } else if (piece.find("Sequence")) {
            seen_sequence = true;
        } else {
            fail(INLAY_ERR_BAD_FORMAT, "{}: expected {{\"SpecialToken\": ...}} or {{\"Sequence\": ...}}",
                 piece.where());
        }
    }
}

struct Merges {
    std::vector<std::string> joined;  // "left right", rank order
};

Merges read_merges(const JsonNode& model, const TextToId& vocab) {
    Merges out;
    const auto node = model.find_non_null("merges");
    if (!node) return out;
    node->require_array();
    const nlohmann::json& list = node->json();
    out.joined.reserve(list.size());
    std::string left, right, merged;
    for (size_t i = 0; i < list.size(); ++i) {
        const nlohmann::json& m = list[i];
        if (m.is_string()) {
            const std::string& s = m.get_ref<const std::string&>();
            // As Hugging Face: exactly one space separates the two parts.
            const size_t sep = s.find(' ');
            if (sep == std::string::npos || sep == 0 || sep + 1 >= s.size() ||
                s.find(' ', sep + 1) != std::string::npos)
                fail(INLAY_ERR_BAD_FORMAT, "{}: merge \"{}\" is not of the form \"left right\"", node->at(i).where(),
                     s);
            left = s.substr(0, sep);
            right = s.substr(sep + 1);
        } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
            left = m[0].get<std::string>();
            right = m[1].get<std::string>();
            if (left.empty() || right.empty() || left.find(' ') != std::string::npos ||
                right.find(' ') != std::string::npos) {
                fail(INLAY_ERR_UNSUPPORTED, "{}: merge parts that are empty or contain a space are not supported",
                     node->at(i).where());
            }
        } else {
            fail(INLAY_ERR_BAD_FORMAT, "{}: expected a merge (\"left right\" or [left, right]), found {}",
                 node->at(i).where(), m.type_name());
        }
        merged = left + right;
        for (const std::string* part : {&left, &right, &merged}) {
            if (vocab.find(std::string_view(*part)) == vocab.end())
                fail(INLAY_ERR_BAD_FORMAT, "{}: merge \"{} {}\": \"{}\" is not in the vocabulary", node->at(i).where(),
                     left, right, *part);
        }
        out.joined.push_back(left + " " + right);
    }
    return out;
}

int32_t require_token(const Vocabulary& v, const TextToId& ids, std::string_view text, std::string_view where) {
    const auto it = ids.find(text);
    if (it == ids.end())
        fail(INLAY_ERR_BAD_FORMAT, "{}: token \"{}\" is not in the vocabulary ({})", where, text, v.origin);
    return it->second;
}

}  // namespace

std::unique_ptr<Tokenizer> tokenizer_from_hf_json(std::string_view tokenizer_json, const HfTokenizerConfig& config,
                                                  const std::string& origin) {
    const nlohmann::json doc = parse_json_text(tokenizer_json, origin);
    const JsonNode root(doc, origin);
    root.require_object();

    // ---- model ----
    const JsonNode model = root.at("model");
    model.require_object();
    const std::string type = model.find_non_null("type") ? model.at("type").string() : "BPE";
    if (type != "BPE") unsupported(model.at("type"), fmt::format("model type \"{}\"", type), "BPE");
    if (const auto d = model.find_non_null("dropout"); d && !(d->json().is_number() && d->json().get<double>() == 0.0))
        unsupported(*d, "BPE dropout", "null");
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
        if (const auto s = model.find_non_null(key); s && !s->string().empty())
            unsupported(*s, fmt::format("{} \"{}\"", key, s->string()), "null or \"\"");
    }
    const bool byte_fallback = model.find_non_null("byte_fallback") && model.at("byte_fallback").boolean();
    const bool ignore_merges = model.find_non_null("ignore_merges") && model.at("ignore_merges").boolean();

    auto vocab = std::make_unique<Vocabulary>();
    vocab->origin = origin;
    const JsonNode vocab_node = model.at("vocab");
    vocab_node.require_object();
    int64_t n = 0;
    for (const auto& [text, id] : vocab_node.json().items()) {
        int64_t v = -1;
        if (id.is_number_unsigned()) v = static_cast<int64_t>(std::min<uint64_t>(id.get<uint64_t>(), k_max_tokens));
        if (v < 0 || v >= k_max_tokens)  // the slow path only builds the message
            v = JsonNode(id, origin, "/model/vocab/" + json_pointer_token(text)).integer(0, k_max_tokens - 1);
        n = std::max(n, v + 1);
    }
    std::vector<std::string>& texts = vocab->texts;
    std::vector<uint8_t> filled;
    auto place = [&](int64_t id, const std::string& text, const JsonNode& at) {
        if (id >= n) {
            n = id + 1;
            texts.resize(static_cast<size_t>(n));
            filled.resize(static_cast<size_t>(n));
        }
        const auto i = static_cast<size_t>(id);
        if (filled[i] && texts[i] != text)
            fail(INLAY_ERR_BAD_FORMAT, "{}: id {} is already the id of \"{}\"", at.where(), id, texts[i]);
        texts[i] = text;
        filled[i] = 1;
    };
    texts.resize(static_cast<size_t>(n));
    filled.resize(static_cast<size_t>(n));
    for (const auto& [text, id] : vocab_node.json().items()) {
        const auto i = static_cast<size_t>(id.get<int64_t>());
        if (filled[i])
            fail(INLAY_ERR_BAD_FORMAT, "{}/{}: id {} is already the id of \"{}\"", vocab_node.where(),
                 json_pointer_token(text), i, texts[i]);
        texts[i] = text;
        filled[i] = 1;
    }
    const size_t n_model = texts.size();
    vocab->types.assign(n_model, TokenType::normal);
    if (byte_fallback) {
        for (size_t i = 0; i < n_model; ++i)
            if (is_byte_token_text(texts[i])) vocab->types[i] = TokenType::byte;
    }

    // ---- added tokens ----
    std::vector<uint8_t> strip;
    if (const auto added = root.find_non_null("added_tokens")) {
        for (size_t k = 0; k < added->size(); ++k) {
            const JsonNode t = added->at(k);
            t.require_object();
            const int64_t id = t.at("id").integer(0, k_max_tokens - 1);
            const std::string& content = t.at("content").string();
            if (content.empty())
                fail(INLAY_ERR_BAD_FORMAT, "{}: an added token's content is empty", t.at("content").where());
            place(id, content, t.at("id"));
            const auto i = static_cast<size_t>(id);
            if (vocab->types.size() < texts.size()) vocab->types.resize(texts.size(), TokenType::unused);
            const bool special = t.find_non_null("special") && t.at("special").boolean();
            vocab->types[i] = special || looks_special(content) ? TokenType::control : TokenType::user_defined;
            uint8_t s = 0;
            if (const auto l = t.find_non_null("lstrip"); l && l->boolean()) s |= Vocabulary::lstrip;
            if (const auto r = t.find_non_null("rstrip"); r && r->boolean()) s |= Vocabulary::rstrip;
            if (s) {
                strip.resize(texts.size());
                strip[i] = s;
            }
            if (const auto w = t.find_non_null("single_word"); w && w->boolean())
                log(LogLevel::warn, "{}: single_word is not supported; \"{}\" matches inside words too", t.where(),
                    content);
        }
    }
    vocab->types.resize(texts.size(), TokenType::unused);
    for (size_t i = 0; i < texts.size(); ++i) {
        if (!filled[i]) {  // as convert_hf_to_gguf.py: holes become unused [PAD<id>] tokens
            texts[i] = "[PAD" + std::to_string(i) + "]";
            vocab->types[i] = TokenType::unused;
        }
    }
    if (!strip.empty()) {
        strip.resize(texts.size());
        vocab->strip = std::move(strip);
    }
    if (texts.empty()) fail(INLAY_ERR_BAD_FORMAT, "{}: the vocabulary is empty", vocab_node.where());

    // ---- pipeline ----
    BpeConfig bpe;
    bpe.ignore_merges = ignore_merges;
    if (const auto norm = root.find_non_null("normalizer")) bpe.nfc = read_normalizer(*norm);
    PreTokenization pre;
    if (const auto p = root.find_non_null("pre_tokenizer")) read_pre_tokenizer(*p, pre);
    if (!pre.byte_level)
        fail(INLAY_ERR_UNSUPPORTED, "{}: /pre_tokenizer has no ByteLevel step: only byte-level BPE is supported",
             origin);
    bpe.patterns = std::move(pre.patterns);
    if (const auto d = root.find_non_null("decoder"))
        check_decoder(*d);
    else
        fail(INLAY_ERR_UNSUPPORTED, "{}: /decoder is null: byte-level BPE needs a ByteLevel decoder", origin);
    PostProcessing post;
    if (const auto p = root.find_non_null("post_processor")) read_post_processor(*p, post);

    TextToId ids;
    ids.reserve(texts.size());
    for (size_t i = 0; i < texts.size(); ++i) ids.emplace(texts[i], static_cast<int32_t>(i));
    const Merges merges = read_merges(model, ids);

    // ---- special tokens ----
    const std::string config_where = "tokenizer_config.json";
    if (config.bos_token) vocab->bos = require_token(*vocab, ids, *config.bos_token, config_where + " /bos_token");
    if (config.eos_token) vocab->eos = require_token(*vocab, ids, *config.eos_token, config_where + " /eos_token");
    if (const auto unk = model.find_non_null("unk_token"))
        vocab->unk = require_token(*vocab, ids, unk->string(), unk->where());
    else if (config.unk_token)
        vocab->unk = require_token(*vocab, ids, *config.unk_token, config_where + " /unk_token");
    if (post.prefix) {
        const int32_t id = require_token(*vocab, ids, *post.prefix, origin + ": /post_processor");
        if (vocab->bos < 0) vocab->bos = id;
    }
    if (post.suffix) {
        const int32_t id = require_token(*vocab, ids, *post.suffix, origin + ": /post_processor");
        if (vocab->eos < 0) vocab->eos = id;
    }
    vocab->add_bos = config.add_bos_token.value_or(post.prefix.has_value());
    vocab->add_eos = config.add_eos_token.value_or(post.suffix.has_value());
    for (const int64_t id : config.eos_token_ids) {
        if (id >= static_cast<int64_t>(texts.size()))
            fail(INLAY_ERR_BAD_FORMAT, "generation_config.json /eos_token_id: {} is outside the vocabulary (0..{})", id,
                 texts.size() - 1);
        vocab->extra_eog.push_back(static_cast<int32_t>(id));
    }
    return make_bpe_tokenizer(std::move(vocab), merges.joined, bpe);
}

FolderTokenizer folder_tokenizer(const std::filesystem::path& folder) {
    std::error_code ec;
    if (std::filesystem::exists(folder / "tokenizer.model", ec)) return FolderTokenizer::sentencepiece;
    if (std::filesystem::exists(folder / "tokenizer.json", ec)) return FolderTokenizer::hf_json;
    return FolderTokenizer::none;
}

bool is_tokenizer_folder(const std::filesystem::path& path) {
    std::error_code ec;
    return std::filesystem::is_directory(path, ec) && folder_tokenizer(path) != FolderTokenizer::none;
}

std::unique_ptr<Tokenizer> tokenizer_from_folder(const std::filesystem::path& folder) {
    std::error_code ec;
    if (!std::filesystem::is_directory(folder, ec)) fail(INLAY_ERR_IO, "{} is not a readable folder", folder.string());
    switch (folder_tokenizer(folder)) {
        case FolderTokenizer::sentencepiece: return tokenizer_from_sentencepiece((folder / "tokenizer.model").string());
        case FolderTokenizer::hf_json: {
            const auto json_path = folder / "tokenizer.json";
            return tokenizer_from_hf_json(read_text_file(json_path), read_tokenizer_config(folder), json_path.string());
        }
        case FolderTokenizer::none: break;
    }
    fail(INLAY_ERR_MISSING, "{} holds neither tokenizer.model nor tokenizer.json", folder.string());
}

}  // namespace inlay
