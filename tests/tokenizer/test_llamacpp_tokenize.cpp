// Our tokenizers against llama.cpp itself: data/llamacpp_tokenize_refs.json holds
// llama-tokenize's ids (no BOS, with and without special-token parsing) for edge-case
// strings on every vocabulary (see data/make_llamacpp_refs.py), and
// testdata/llamacpp-refs/*.ref.json the prompt tokens llama.cpp fed its models.
#include <catch2/catch.hpp>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "support/test_paths.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_test_util.h"

using namespace inlay;
using inlay::test::testdata;

namespace {

const nlohmann::json& refs() {
    static const nlohmann::json j =
        nlohmann::json::parse(test::read_file(test::source_dir() / "tests/tokenizer/data/llamacpp_tokenize_refs.json"));
    return j;
}

// How each reference vocabulary is loaded here; empty path = the input is absent.
struct Source {
    std::filesystem::path path;
    std::function<std::unique_ptr<Tokenizer>()> load;
};

std::map<std::string, Source> sources() {
    std::map<std::string, Source> s;
    for (const auto& [name, rel] :
         std::map<std::string, std::string>{{"llama-spm", "vocab/ggml-vocab-llama-spm.gguf"},
                                            {"phi-3", "vocab/ggml-vocab-phi-3.gguf"},
                                            {"gpt-2", "vocab/ggml-vocab-gpt-2.gguf"},
                                            {"llama-r256", "llamacpp-refs/llama-r256-f32.gguf"},
                                            {"qwen3-r256", "llamacpp-refs/qwen3-r256-f32.gguf"}}) {
        const auto path = testdata(rel);
        s[name] = {path, [path] { return tokenizer_from_gguf(test::gguf_metadata(path)); }};
    }
    const auto llama3 = testdata("tokenizers/llama3/tokenizer.json");
    s["llama-bpe"] = {llama3, [llama3] {
                          Metadata md = test::metadata_from_hf_tokenizer_json(llama3, "llama-bpe");
                          md.add("tokenizer.ggml.bos_token_id", MetadataValue::from_int(ValueType::U32, 128000));
                          md.add("tokenizer.ggml.eos_token_id", MetadataValue::from_int(ValueType::U32, 128001));
                          return tokenizer_from_gguf(md);
                      }};
    const auto qwen3 = testdata("tokenizers/qwen3/tokenizer.json");
    s["qwen3"] = {qwen3, [qwen3] {
                      Metadata md = test::metadata_from_hf_tokenizer_json(qwen3, "qwen2");
                      md.add("tokenizer.ggml.eos_token_id", MetadataValue::from_int(ValueType::U32, 151645));
                      md.add("tokenizer.ggml.bos_token_id", MetadataValue::from_int(ValueType::U32, 151643));
                      md.add("tokenizer.ggml.add_bos_token", MetadataValue::from_bool(false));
                      return tokenizer_from_gguf(md);
                  }};
    return s;
}

size_t check_refs(const Tokenizer& tok, const std::string& vocab_name) {
    const auto& strings = refs().at("strings");
    const auto& v = refs().at("vocabs").at(vocab_name);
    size_t matched = 0;
    for (const bool parse_special : {true, false}) {
        const auto& expected_all = v.at(parse_special ? "parse_special" : "plain");
        REQUIRE(expected_all.size() == strings.size());
        for (size_t i = 0; i < strings.size(); ++i) {
            const auto text = strings[i].get<std::string>();
            const auto expected = expected_all[i].get<std::vector<int32_t>>();
            const auto ids = tok.encode(text, parse_special);
            INFO(vocab_name << " string " << i << (parse_special ? " (parse_special)" : " (plain)") << ": \""
                            << text.substr(0, 200) << "\"\n  expected " << test::ids_to_string(expected)
                            << "\n  got      " << test::ids_to_string(ids));
            CHECK(ids == expected);
            matched += ids == expected;
        }
    }
    return matched;
}

}  // namespace

TEST_CASE("encode equals llama-tokenize on edge cases, with and without parse_special", "[tokenizer][llamacpp]") {
    const size_t n_strings = refs().at("strings").size();
    for (auto& [name, source] : sources()) {
        if (!std::filesystem::exists(source.path)) {
            inlay::test::skip_missing(name + ": " + source.path.string() + " is absent");
            continue;
        }
        SECTION(name) {
            const auto tok = source.load();
            CHECK(check_refs(*tok, name) == 2 * n_strings);
        }
    }
}

TEST_CASE("sentencepiece path equals llama-tokenize on the llama-spm edge cases", "[tokenizer][llamacpp]") {
    const auto path = testdata("tokenizers/llama2-tokenizer.model");
    INLAY_REQUIRE_FILE_OR_SKIP(path);
    const auto tok = tokenizer_from_sentencepiece(path.string());
    CHECK(check_refs(*tok, "llama-spm") == 2 * refs().at("strings").size());
}

TEST_CASE("parse_special: <s>hello</s> (llama-spm)", "[tokenizer][special]") {
    const auto path = testdata("vocab/ggml-vocab-llama-spm.gguf");
    INLAY_REQUIRE_FILE_OR_SKIP(path);
    const auto tok = tokenizer_from_gguf(test::gguf_metadata(path));
    const auto with = tok->encode("<s>hello</s>", true);
    REQUIRE(with.size() >= 3);
    CHECK(with.front() == 1);
    CHECK(with.back() == 2);
    CHECK(tok->decode(with, false, true) == "hello");
    CHECK(tok->decode(with, true, true) == "<s> hello</s>");  // the prefix space after <s> is kept
    const auto without = tok->encode("<s>hello</s>", false);
    CHECK(std::find(without.begin(), without.end(), 1) == without.end());
    CHECK(std::find(without.begin(), without.end(), 2) == without.end());
    CHECK(tok->decode(without, false, true) == "<s>hello</s>");
}

// testdata/llamacpp-refs: llama.cpp's logits_dump tokenized three prompts with its
// defaults (BOS where the vocabulary asks for it, special tokens parsed).
TEST_CASE("prompt tokens of every llamacpp-refs case", "[tokenizer][llamacpp]") {
    const auto dir = testdata("llamacpp-refs");
    INLAY_REQUIRE_FILE_OR_SKIP(dir);
    const std::vector<std::string> prompts = {"Once upon a time", "The quick brown fox jumps over the lazy dog.",
                                              "1 2 3 4 5"};
    size_t files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        const std::string file = entry.path().filename().string();
        // The random r256 models' references are of these three prompts; the stories15M
        // ones (their models are in models/) are of other prompts, not recorded in them.
        if (!file.ends_with(".ref.json") || file.find("-r256-") == std::string::npos) continue;
        const auto gguf = entry.path().parent_path() / (file.substr(0, file.size() - 9) + ".gguf");
        INLAY_REQUIRE_FILE_OR_SKIP(gguf);
        const auto tok = tokenizer_from_gguf(test::gguf_metadata(gguf));
        const auto ref = nlohmann::json::parse(test::read_file(entry.path()));
        const auto& cases = ref.at("cases");
        REQUIRE(cases.size() == prompts.size());
        for (size_t i = 0; i < prompts.size(); ++i) {
            std::vector<int32_t> ids;
            if (tok->add_bos()) ids.push_back(tok->bos());
            const auto body = tok->encode(prompts[i], true);
            ids.insert(ids.end(), body.begin(), body.end());
            INFO(file << " prompt " << i);
            CHECK(ids == cases[i].at("prompt_tokens").get<std::vector<int32_t>>());
        }
        CHECK(tok->add_bos() == file.starts_with("llama"));
        ++files;
    }
    CHECK(files == 16);
}
