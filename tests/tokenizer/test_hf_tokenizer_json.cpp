// Tokenizers from Hugging Face tokenizer.json + tokenizer_config.json: the llama.cpp
// test vectors (produced by Hugging Face tokenizers) for Llama 3 and Qwen3, agreement
// with the GGUF path on the same vocabulary, hand-made tokenizer.json features, NFC
// against Python's unicodedata, and malformed files.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "support/test_paths.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer_test_util.h"
#include "tokenizer/unicode_nfc.h"

using namespace inlay;
using inlay::test::testdata;
using nlohmann::json;

namespace {

// Every token's text and type agree with the GGUF path on convert_hf_to_gguf.py's
// conversion of the same file.
void check_same_as_gguf(const Tokenizer& tok, const std::filesystem::path& json_path, const std::string& pre) {
    const auto gguf = tokenizer_from_gguf(test::metadata_from_hf_tokenizer_json(json_path, pre));
    REQUIRE(gguf->n_vocab() == tok.n_vocab());
    size_t differ = 0;
    for (int32_t id = 0; id < tok.n_vocab(); ++id) {
        if (tok.token_text(id) != gguf->token_text(id) || tok.token_type(id) != gguf->token_type(id) ||
            tok.token_to_piece(id, true) != gguf->token_to_piece(id, true))
            ++differ;
    }
    CHECK(differ == 0);
}

// A byte-level BPE tokenizer.json: the 256 byte symbols, the results of `merges`, then
// `added` (objects as in the file), with the Qwen2 split regex.
json tiny_tokenizer_json(const std::vector<std::pair<std::string, std::string>>& merges,
                         const json& added = json::array()) {
    json vocab = json::object();
    int id = 0;
    for (int b = 0; b < 256; ++b) vocab[byte_level::encode_byte(static_cast<uint8_t>(b))] = id++;
    json merge_list = json::array();
    for (const auto& [l, r] : merges) {
        if (!vocab.contains(l + r)) vocab[l + r] = id++;
        merge_list.push_back(json::array({l, r}));
    }
    return json{
        {"version", "1.0"},
        {"added_tokens", added},
        {"normalizer", nullptr},
        {"pre_tokenizer",
         {{"type", "Sequence"},
          {"pretokenizers",
           json::array({{{"type", "Split"},
                         {"pattern",
                          {{"Regex",
                            "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
                            "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}}},
                         {"behavior", "Isolated"},
                         {"invert", false}},
                        {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}})}}},
        {"post_processor", {{"type", "ByteLevel"}}},
        {"decoder", {{"type", "ByteLevel"}}},
        {"model",
         {{"type", "BPE"},
          {"dropout", nullptr},
          {"unk_token", nullptr},
          {"byte_fallback", false},
          {"ignore_merges", false},
          {"vocab", vocab},
          {"merges", merge_list}}},
    };
}

std::unique_ptr<Tokenizer> load(const json& j, const HfTokenizerConfig& config = {}) {
    return tokenizer_from_hf_json(j.dump(), config, "test tokenizer.json");
}

// The status and message of loading `text`.
std::pair<inlay_status, std::string> load_error(const std::string& text, const HfTokenizerConfig& config = {}) {
    try {
        tokenizer_from_hf_json(text, config, "bad.json");
    } catch (const Error& e) {
        return {e.status(), e.what()};
    }
    return {INLAY_OK, ""};
}

const std::string k_space = byte_level::encode_byte(' ');  // "Ġ"

}  // namespace

TEST_CASE("tokenizer.json: Llama 3 folder matches all 46 llama-bpe vectors", "[tokenizer][hf]") {
    const auto dir = testdata("tokenizers/llama3");
    INLAY_REQUIRE_FILE_OR_SKIP(dir / "tokenizer.json");
    REQUIRE(is_tokenizer_folder(dir));
    const auto tok = tokenizer_from_folder(dir);
    CHECK(tok->n_vocab() == 128256);
    CHECK(tok->bos() == 128000);
    CHECK(tok->eos() == 128001);
    // The 3.0 tokenizer.json adds no BOS (post_processor ByteLevel, no add_bos_token):
    // Hugging Face would not add one either; the chat template writes it.
    CHECK_FALSE(tok->add_bos());
    CHECK(tok->is_eog(128009));  // <|eot_id|>
    CHECK(tok->is_eog(128001));
    CHECK_FALSE(tok->is_eog(128000));
    CHECK(tok->token_type(128006) == TokenType::control);
    CHECK(test::check_vocab_vectors(*tok, "ggml-vocab-llama-bpe.gguf") == 46);
    check_same_as_gguf(*tok, dir / "tokenizer.json", "llama-bpe");
    const auto ids = tok->encode("<|start_header_id|>user<|end_header_id|>\n\nHi", true);
    REQUIRE(ids.size() >= 4);
    CHECK(ids[0] == 128006);
    CHECK(ids[2] == 128007);
    // Without parse_special the markers are plain text.
    CHECK(tok->encode("<|start_header_id|>", false).size() > 1);
}

TEST_CASE("tokenizer.json: Qwen3 folder matches all 46 qwen2 vectors", "[tokenizer][hf]") {
    const auto dir = testdata("tokenizers/qwen3");
    INLAY_REQUIRE_FILE_OR_SKIP(dir / "tokenizer.json");
    const auto tok = tokenizer_from_folder(dir);
    CHECK(tok->n_vocab() == 151669);
    CHECK(tok->bos() == -1);
    CHECK(tok->eos() == 151645);  // <|im_end|>
    CHECK_FALSE(tok->add_bos());
    CHECK(tok->is_eog(151645));
    CHECK(tok->is_eog(151643));  // <|endoftext|>
    CHECK_FALSE(tok->is_eog(151644));
    CHECK(tok->token_type(151667) == TokenType::user_defined);  // <think>: special false
    CHECK(test::check_vocab_vectors(*tok, "ggml-vocab-qwen2.gguf") == 46);
    check_same_as_gguf(*tok, dir / "tokenizer.json", "qwen2");
    // <think> is matched even without parse_special (an added non-special token).
    CHECK(tok->encode("<think>\n", false).front() == 151667);
    const auto ids = tok->encode("<|im_start|>user\nHello<|im_end|>\n", true);
    CHECK(ids.front() == 151644);
    CHECK(std::find(ids.begin(), ids.end(), 151645) != ids.end());
}

TEST_CASE("tokenizer_config.json: tokens as strings or objects, named templates", "[tokenizer][hf]") {
    const json cfg = {{"bos_token", {{"__type", "AddedToken"}, {"content", "<s>"}}},
                      {"eos_token", "</s>"},
                      {"unk_token", nullptr},
                      {"add_bos_token", true},
                      {"chat_template", json::array({{{"name", "tool_use"}, {"template", "T"}},
                                                     {{"name", "default"}, {"template", "D"}}})}};
    const HfTokenizerConfig c = parse_tokenizer_config(cfg.dump(), "cfg");
    CHECK(c.bos_token == "<s>");
    CHECK(c.eos_token == "</s>");
    CHECK_FALSE(c.unk_token.has_value());
    CHECK(c.add_bos_token == true);
    CHECK_FALSE(c.add_eos_token.has_value());
    CHECK(c.chat_template == "D");

    const auto bad = [](const json& j) {
        try {
            parse_tokenizer_config(j.dump(), "cfg");
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    CHECK_THAT(bad({{"bos_token", 5}}), Catch::Contains("cfg: /bos_token: expected a token"));
    CHECK_THAT(bad({{"add_bos_token", "yes"}}), Catch::Contains("/add_bos_token: expected true or false"));
    CHECK_THAT(bad({{"chat_template", json::array({{{"name", "x"}}})}}),
               Catch::Contains("/chat_template/0: the member \"template\" is missing"));
    CHECK_THAT(bad(json::array()), Catch::Contains("cfg: /: expected an object"));
}

TEST_CASE("tokenizer folder: config, chat_template.jinja and generation_config.json", "[tokenizer][hf]") {
    const auto dir = test::scratch_dir("hf_folder");
    std::ofstream(dir / "tokenizer.json")
        << tiny_tokenizer_json({{"a", "b"}}, json::array({{{"id", 257}, {"content", "<|end|>"}, {"special", true}},
                                                          {{"id", 258}, {"content", "<s>"}, {"special", true}},
                                                          {{"id", 259}, {"content", "<stop>"}, {"special", true}}}))
               .dump();
    std::ofstream(dir / "tokenizer_config.json")
        << json{{"bos_token", "<s>"}, {"add_bos_token", true}, {"chat_template", "from config"}}.dump();
    std::ofstream(dir / "generation_config.json") << json{{"eos_token_id", json::array({257, 259})}}.dump();
    auto tok = tokenizer_from_folder(dir);
    CHECK(tok->bos() == 258);
    CHECK(tok->add_bos());
    CHECK(tok->is_eog(259));  // from generation_config.json only
    CHECK(tok->is_eog(257));
    CHECK(read_tokenizer_config(dir).chat_template == "from config");
    std::ofstream(dir / "chat_template.jinja") << "from jinja";
    CHECK(read_tokenizer_config(dir).chat_template == "from jinja");

    std::ofstream(dir / "generation_config.json") << json{{"eos_token_id", 999}}.dump();
    CHECK_THROWS_WITH(tokenizer_from_folder(dir), Catch::Contains("generation_config.json /eos_token_id: 999"));

    const auto empty = test::scratch_dir("hf_empty_folder");
    CHECK_FALSE(is_tokenizer_folder(empty));
    try {
        tokenizer_from_folder(empty);
        FAIL("expected an error");
    } catch (const Error& e) {
        CHECK(e.status() == INLAY_ERR_MISSING);
    }
    try {
        tokenizer_from_folder(empty / "nope");
        FAIL("expected an error");
    } catch (const Error& e) {
        CHECK(e.status() == INLAY_ERR_IO);
    }
}

// One order for every reader of a folder (model loading, inlay tokenize, conversion):
// tokenizer.model first. The two files here are different tokenizers (Llama 2's 32000
// SentencePiece pieces, Qwen3's 151669 byte-level BPE tokens), so any reader that took
// tokenizer.json would be seen.
TEST_CASE("a folder with tokenizer.model and tokenizer.json is read through tokenizer.model", "[tokenizer][hf]") {
    const auto sp_model = testdata("tokenizers/llama2-tokenizer.model");
    const auto qwen_json = testdata("tokenizers/qwen3/tokenizer.json");
    INLAY_REQUIRE_FILE_OR_SKIP(sp_model);
    INLAY_REQUIRE_FILE_OR_SKIP(qwen_json);
    const auto both = test::scratch_dir("hf_both_tokenizer_files");
    std::filesystem::copy_file(sp_model, both / "tokenizer.model");
    std::filesystem::copy_file(qwen_json, both / "tokenizer.json");
    CHECK(folder_tokenizer(both) == FolderTokenizer::sentencepiece);
    CHECK(is_tokenizer_folder(both));
    const auto tok = tokenizer_from_folder(both);
    const auto reference = tokenizer_from_sentencepiece(sp_model.string());
    CHECK(tok->n_vocab() == 32000);
    CHECK(tok->encode("Hello world", false) == reference->encode("Hello world", false));
    CHECK(tok->encode("Hello world", false) == std::vector<int32_t>{15043, 3186});

    const auto json_only = test::scratch_dir("hf_json_only");
    std::filesystem::copy_file(qwen_json, json_only / "tokenizer.json");
    CHECK(folder_tokenizer(json_only) == FolderTokenizer::hf_json);
    CHECK(tokenizer_from_folder(json_only)->n_vocab() == 151669);
    CHECK(folder_tokenizer(test::scratch_dir("hf_no_tokenizer")) == FolderTokenizer::none);
}

TEST_CASE("tokenizer.json: merges as strings and as arrays give the same tokenizer", "[tokenizer][hf]") {
    const std::vector<std::pair<std::string, std::string>> merges = {
        {"l", "o"}, {"lo", "w"}, {"e", "r"}, {k_space, "low"}, {"low", "er"}};
    json as_arrays = tiny_tokenizer_json(merges);
    json as_strings = as_arrays;
    as_strings["model"]["merges"] = json::array();
    for (const auto& [l, r] : merges) as_strings["model"]["merges"].push_back(l + " " + r);
    const auto a = load(as_arrays);
    const auto b = load(as_strings);
    const auto ids = a->encode("lower low lowest", false);
    CHECK(ids == b->encode("lower low lowest", false));
    // l o w e r -> lo w e r -> low e r -> low er -> lower; " low" -> Ġ low -> Ġlow.
    const int32_t lower = a->find_token("lower");
    const int32_t space_low = a->find_token(k_space + "low");
    REQUIRE(lower >= 0);
    REQUIRE(space_low >= 0);
    CHECK(ids[0] == lower);
    CHECK(ids[1] == space_low);
    CHECK(a->decode(ids, false, true) == "lower low lowest");
}

TEST_CASE("tokenizer.json: ignore_merges emits whole-word tokens without merging", "[tokenizer][hf]") {
    // "ab" is a token, but only "b c"-style merges exist: without ignore_merges "ab"
    // stays two tokens.
    json j = tiny_tokenizer_json({{"x", "y"}});
    j["model"]["vocab"]["ab"] = 300;
    const auto plain = load(j);
    CHECK(plain->encode("ab", false).size() == 2);
    j["model"]["ignore_merges"] = true;
    const auto ignoring = load(j);
    CHECK(ignoring->encode("ab", false) == std::vector<int32_t>{300});
}

TEST_CASE("tokenizer.json: added tokens, lstrip/rstrip, TemplateProcessing BOS", "[tokenizer][hf]") {
    json j =
        tiny_tokenizer_json({}, json::array({{{"id", 256}, {"content", "<bos>"}, {"special", true}},
                                             {{"id", 257}, {"content", "[M]"}, {"special", false}, {"lstrip", true}},
                                             {{"id", 258}, {"content", "<eos>"}, {"special", true}}}));
    j["post_processor"] = {{"type", "TemplateProcessing"},
                           {"single", json::array({{{"SpecialToken", {{"id", "<bos>"}, {"type_id", 0}}}},
                                                   {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})}};
    const auto tok = load(j);
    CHECK(tok->bos() == 256);
    CHECK(tok->add_bos());
    CHECK_FALSE(tok->add_eos());
    CHECK(tok->token_type(256) == TokenType::control);
    CHECK(tok->token_type(257) == TokenType::user_defined);
    // "[M]" swallows the spaces on its left and is matched without parse_special.
    const auto ids = tok->encode("a  [M]b", false);
    CHECK(ids == std::vector<int32_t>{'a', 257, 'b'});  // byte symbols have the byte's id here
    // <bos> is control: plain text without parse_special.
    CHECK(tok->encode("<bos>", false).size() > 1);
    CHECK(tok->encode("<bos>", true) == std::vector<int32_t>{256});

    HfTokenizerConfig config;
    config.add_bos_token = false;
    config.eos_token = "<eos>";
    const auto tok2 = load(j, config);
    CHECK_FALSE(tok2->add_bos());
    CHECK(tok2->eos() == 258);
}

TEST_CASE("tokenizer.json: NFC normalizer composes before splitting", "[tokenizer][hf]") {
    const std::string e_acute = "\xC3\xA9";  // U+00E9, two bytes
    const std::string e_b = byte_level::encode_byte(0xC3), e_2 = byte_level::encode_byte(0xA9);
    json j = tiny_tokenizer_json({{e_b, e_2}});
    const auto raw = load(j);
    j["normalizer"] = {{"type", "NFC"}};
    const auto nfc = load(j);
    const std::string decomposed = "e\xCC\x81";  // e + U+0301
    const int32_t composed_id = nfc->find_token(e_b + e_2);
    REQUIRE(composed_id >= 0);
    CHECK(nfc->encode(decomposed, false) == std::vector<int32_t>{composed_id});
    CHECK(raw->encode(decomposed, false).size() == 3);  // e, CC, 81
    CHECK(nfc->encode(e_acute, false) == raw->encode(e_acute, false));
}

TEST_CASE("NFC matches Python's unicodedata on generated vectors", "[tokenizer][nfc]") {
    const auto path = test::source_dir() / "tests/tokenizer/data/nfc_vectors.json";
    const json doc = json::parse(test::read_file(path));
    const auto& cases = doc.at("cases");
    REQUIRE(cases.size() > 7000);
    INFO("tables: Unicode " << unicode::unicode_version() << ", vectors: Unicode "
                            << doc.at("unicode_version").get<std::string>());
    size_t wrong = 0;
    for (const auto& c : cases) {
        const auto input = c.at(0).get<std::string>();
        const auto expected = c.at(1).get<std::string>();
        const std::string got = unicode::nfc(input);
        if (got != expected) {
            if (++wrong <= 5) UNSCOPED_INFO("input " << input << " expected " << expected << " got " << got);
        }
        if (unicode::is_nfc_quick(input)) CHECK(input == expected);
    }
    CHECK(wrong == 0);
    CHECK(unicode::nfc("") == "");
    CHECK(unicode::nfc("\xCC\x81") == "\xCC\x81");      // a lone combining mark stays
    CHECK(unicode::nfc("\xE2\x84\xAB") == "\xC3\x85");  // U+212B ANGSTROM SIGN -> U+00C5
}

TEST_CASE("tokenizer.json: malformed files give BAD_FORMAT with the JSON path", "[tokenizer][hf]") {
    const json good = tiny_tokenizer_json({{"a", "b"}});
    auto expect = [&](const std::string& text, inlay_status status, const std::string& fragment) {
        const auto [s, message] = load_error(text);
        INFO(message);
        CHECK(s == status);
        CHECK_THAT(message, Catch::Contains(fragment));
    };
    auto with = [&](const json::json_pointer& ptr, const json& value) {
        json j = good;
        j[ptr] = value;
        return j.dump();
    };
    expect("", INLAY_ERR_BAD_FORMAT, "bad.json: not valid JSON");
    expect(good.dump().substr(0, 200), INLAY_ERR_BAD_FORMAT, "not valid JSON: \"parse error at line 1");
    expect("{\"model\": \"\xff\"}", INLAY_ERR_BAD_FORMAT, "not valid JSON");
    expect(std::string(100000, '['), INLAY_ERR_BAD_FORMAT, "not valid JSON");
    expect("[]", INLAY_ERR_BAD_FORMAT, "bad.json: /: expected an object");
    expect("{}", INLAY_ERR_BAD_FORMAT, "bad.json: /: the member \"model\" is missing");
    expect(with("/model/vocab/a"_json_pointer, -1), INLAY_ERR_BAD_FORMAT, "/model/vocab/a: -1 is out of range");
    expect(with("/model/vocab/a"_json_pointer, "x"), INLAY_ERR_BAD_FORMAT, "/model/vocab/a: expected an integer");
    expect(with("/model/vocab/a~0b"_json_pointer, 66), INLAY_ERR_BAD_FORMAT, "/model/vocab/a~0b: id 66 is already");
    expect(with("/model/vocab/zz"_json_pointer, 1LL << 40), INLAY_ERR_BAD_FORMAT, "is out of range");
    expect(with("/model/merges/0"_json_pointer, "ab"), INLAY_ERR_BAD_FORMAT, "/model/merges/0: merge \"ab\" is not of");
    expect(with("/model/merges/0"_json_pointer, 7), INLAY_ERR_BAD_FORMAT, "/model/merges/0: expected a merge");
    expect(with("/model/merges/0"_json_pointer, json::array({"q", "\xE2\x82\xAC"})), INLAY_ERR_BAD_FORMAT,
           "is not in the vocabulary");
    expect(with("/model/merges"_json_pointer, 3), INLAY_ERR_BAD_FORMAT, "/model/merges: expected an array");
    expect(with("/added_tokens"_json_pointer, json::array({{{"id", 3}, {"content", "zz"}}})), INLAY_ERR_BAD_FORMAT,
           "/added_tokens/0/id: id 3 is already the id of");
    expect(with("/added_tokens"_json_pointer, json::array({{{"id", 300}}})), INLAY_ERR_BAD_FORMAT,
           "/added_tokens/0: the member \"content\" is missing");
    expect(with("/model/unk_token"_json_pointer, "<unk>"), INLAY_ERR_BAD_FORMAT,
           "token \"<unk>\" is not in the vocabulary");
    HfTokenizerConfig config;
    config.bos_token = "<nope>";
    const auto [s, message] = load_error(good.dump(), config);
    CHECK(s == INLAY_ERR_BAD_FORMAT);
    CHECK_THAT(message, Catch::Contains("tokenizer_config.json /bos_token: token \"<nope>\""));
}

TEST_CASE("tokenizer.json: unsupported components are named", "[tokenizer][hf]") {
    const json good = tiny_tokenizer_json({});
    auto expect = [&](const json::json_pointer& ptr, const json& value, const std::string& fragment) {
        json j = good;
        j[ptr] = value;
        const auto [s, message] = load_error(j.dump());
        INFO(message);
        CHECK(s == INLAY_ERR_UNSUPPORTED);
        CHECK_THAT(message, Catch::Contains(fragment));
    };
    expect("/model/type"_json_pointer, "Unigram", "bad.json: /model/type: model type \"Unigram\" is not supported");
    expect("/normalizer"_json_pointer, {{"type", "Lowercase"}}, "/normalizer: normalizer \"Lowercase\"");
    expect("/normalizer"_json_pointer,
           {{"type", "Sequence"}, {"normalizers", json::array({{{"type", "NFC"}}, {{"type", "NFKD"}}})}},
           "/normalizer/normalizers/1: normalizer \"NFKD\"");
    expect("/pre_tokenizer/pretokenizers/0/behavior"_json_pointer, "Removed", "Split behavior \"Removed\"");
    expect("/pre_tokenizer"_json_pointer, {{"type", "Metaspace"}}, "/pre_tokenizer: pre-tokenizer \"Metaspace\"");
    expect("/pre_tokenizer"_json_pointer, nullptr, "has no ByteLevel step");
    expect("/pre_tokenizer/pretokenizers/1/add_prefix_space"_json_pointer, true, "add_prefix_space: true");
    expect("/decoder"_json_pointer, {{"type", "WordPiece"}}, "/decoder: decoder \"WordPiece\"");
    expect("/post_processor"_json_pointer, {{"type", "BertProcessing"}}, "post-processor \"BertProcessing\"");
    expect("/model/dropout"_json_pointer, 0.1, "/model/dropout: BPE dropout");
    expect("/model/continuing_subword_prefix"_json_pointer, "##", "continuing_subword_prefix \"##\"");
    expect("/pre_tokenizer/pretokenizers/0/pattern/Regex"_json_pointer, "(?<", "does not compile");
    expect("/pre_tokenizer/pretokenizers/0/pattern/Regex"_json_pointer, "[^\\S]", "\\S inside a character class");
}

TEST_CASE("Hugging Face regexes translate \\s to White_Space", "[tokenizer][hf]") {
    CHECK(hf_regex_to_pcre2("a") == "a");
    CHECK(hf_regex_to_pcre2("\\\\s") == "\\\\s");  // an escaped backslash, then 's'
    CHECK(hf_regex_to_pcre2("\\s").starts_with("[\\t\\n"));
    const std::string s = hf_regex_to_pcre2("\\s+(?!\\S)|[^\\s\\p{L}]|[]\\s]");
    CHECK(s.find("\\s") == std::string::npos);
    CHECK(s.find("\\S") == std::string::npos);
    CHECK(s.find("[^\\t") != std::string::npos);
    CHECK(s.find("[]\\t") != std::string::npos);  // ']' first in a class is a member
}
