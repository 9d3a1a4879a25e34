// The tokenizer metadata `inlay convert` writes, against llama.cpp's own files: the
// Llama 2 tokenizer.model exported to GGUF equals llama.cpp's ggml-vocab-llama-spm.gguf
// (tokens, scores, types, special ids), and the Qwen3 / Llama 3 tokenizer.json exports
// tokenize llama.cpp's 46 test strings to the published ids (ggml-vocab-qwen2 and
// ggml-vocab-llama-bpe .inp/.out).
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "io/gguf_reader.h"
#include "io/hf_config.h"
#include "model/families/hf_tokenizer.h"
#include "support/test_paths.h"
#include "tokenizer/tokenizer.h"

using namespace inlay;
namespace fs = std::filesystem;

namespace {

// A folder holding links to the tokenizer files and a config.json with these fields; a
// SentencePiece model is linked under the name Hugging Face folders use.
fs::path folder_with(const std::string& name, const std::vector<fs::path>& files, const std::string& config) {
    const fs::path dir = test::scratch_dir(name);
    for (const auto& f : files) {
        const fs::path link = f.extension() == ".model" ? fs::path("tokenizer.model") : f.filename();
        fs::create_symlink(f, dir / link);
    }
    std::ofstream(dir / "config.json") << config;
    return dir;
}

// llama.cpp's vocabulary test files: strings separated by "\n__ggml_vocab_test__\n";
// one line of " id id ..." per string.
void check_vectors(const Tokenizer& tok, const std::string& name) {
    const std::string inp = inlay::test::read_file(test::testdata("vocab/" + name + ".inp"));
    const std::string out = inlay::test::read_file(test::testdata("vocab/" + name + ".out"));
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<std::string> texts;
    for (size_t pos = 0;;) {
        const size_t at = inp.find(sep, pos);
        if (at == std::string::npos) break;
        texts.push_back(inp.substr(pos, at - pos));
        pos = at + sep.size();
    }
    std::istringstream lines(out);
    std::string line;
    size_t i = 0;
    for (; std::getline(lines, line) && i < texts.size(); ++i) {
        std::vector<int32_t> want;
        std::istringstream ids(line);
        for (int32_t id; ids >> id;) want.push_back(id);
        INFO(name << " case " << i << ": \"" << texts[i] << "\"");
        CHECK(tok.encode(texts[i], false) == want);
    }
    CHECK(i == 46);
}

}  // namespace

TEST_CASE("the Llama 2 tokenizer.model exports as llama.cpp's vocabulary GGUF", "[hf][tokenizer]") {
    const fs::path spm = test::testdata("tokenizers/llama2-tokenizer.model");
    const fs::path ref_path = test::testdata("vocab/ggml-vocab-llama-spm.gguf");
    INLAY_REQUIRE_FILE_OR_SKIP(spm);
    INLAY_REQUIRE_FILE_OR_SKIP(ref_path);
    const std::string config = R"({"model_type": "llama", "vocab_size": 32000, "hidden_size": 64,
        "intermediate_size": 128, "num_hidden_layers": 1, "num_attention_heads": 4})";
    const fs::path dir = folder_with("export_llama2", {spm}, config);
    const Metadata md = gguf_tokenizer_metadata_from_folder(dir.string(), parse_hf_config(config, "config.json"));
    const auto ref = GgufFile::open(ref_path.string());
    const Metadata& want = ref->metadata();
    CHECK(md.get_string("tokenizer.ggml.model") == "llama");
    CHECK(md.get_string_array("tokenizer.ggml.tokens") == want.get_string_array("tokenizer.ggml.tokens"));
    const auto& scores = md.get_array("tokenizer.ggml.scores");
    const auto& want_scores = want.get_array("tokenizer.ggml.scores");
    REQUIRE(scores.floats.size() == 32000);
    REQUIRE(want_scores.floats.size() == 32000);
    for (size_t i = 0; i < scores.floats.size(); ++i) {
        INFO("token " << i);
        CHECK(static_cast<float>(scores.floats[i]) == static_cast<float>(want_scores.floats[i]));
    }
    CHECK(md.get_array("tokenizer.ggml.token_type").ints == want.get_array("tokenizer.ggml.token_type").ints);
    for (const char* key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                            "tokenizer.ggml.unknown_token_id"}) {
        INFO(key);
        CHECK(md.get_int(key) == want.get_int(key));
    }
    // The GGUF vocabulary tokenizes as the sentencepiece library does.
    const auto from_gguf = tokenizer_from_gguf(md);
    const auto from_spm = tokenizer_from_sentencepiece(spm.string());
    for (const char* text : {"Hello world", " leading space", "caf\xc3\xa9 \xe2\x82\xac 12345", "tabs\tand\nlines"}) {
        INFO(text);
        CHECK(from_gguf->encode(text, false) == from_spm->encode(text, false));
    }
}

TEST_CASE("the Qwen3 and Llama 3 tokenizer.json exports tokenize llama.cpp's test strings", "[hf][tokenizer]") {
    struct Case {
        const char* dir;
        const char* vectors;
        const char* pre;
        const char* config;
        int64_t eos;
    };
    // vocab_size, bos and eos as in Qwen3-0.6B's and Meta-Llama-3-8B's config.json.
    const Case cases[] = {
        {"qwen3", "ggml-vocab-qwen2.gguf", "qwen2",
         R"({"model_type": "qwen3", "vocab_size": 151936, "hidden_size": 64, "intermediate_size": 128,
             "num_hidden_layers": 1, "num_attention_heads": 4, "bos_token_id": 151643, "eos_token_id": 151645})",
         151645},
        {"llama3", "ggml-vocab-llama-bpe.gguf", "llama-bpe",
         R"({"model_type": "llama", "vocab_size": 128256, "hidden_size": 64, "intermediate_size": 128,
             "num_hidden_layers": 1, "num_attention_heads": 4, "bos_token_id": 128000, "eos_token_id": 128001})",
         128001},
    };
    for (const Case& c : cases) {
        INFO(c.dir);
        const fs::path json = test::testdata(std::string("tokenizers/") + c.dir + "/tokenizer.json");
        const fs::path cfg = test::testdata(std::string("tokenizers/") + c.dir + "/tokenizer_config.json");
        INLAY_REQUIRE_FILE_OR_SKIP(json);
        INLAY_REQUIRE_FILE_OR_SKIP(test::testdata(std::string("vocab/") + c.vectors + ".out"));
        const fs::path dir = folder_with(std::string("export_") + c.dir, {json, cfg}, c.config);
        const HfConfig config = parse_hf_config(c.config, "config.json");
        const Metadata md = gguf_tokenizer_metadata_from_folder(dir.string(), config);
        CHECK(md.get_string("tokenizer.ggml.model") == "gpt2");
        CHECK(md.get_string("tokenizer.ggml.pre") == c.pre);
        const auto& tokens = md.get_string_array("tokenizer.ggml.tokens");
        CHECK(static_cast<int64_t>(tokens.size()) == config.vocab_size);
        CHECK(md.get_int("tokenizer.ggml.eos_token_id") == c.eos);
        CHECK(md.contains("tokenizer.chat_template"));
        const auto tok = tokenizer_from_gguf(md);
        check_vectors(*tok, c.vectors);
        if (std::string(c.dir) == "qwen3") {
            CHECK(tokens.back() == "[PAD151935]");
            CHECK(tok->token_type(151644) == TokenType::control);       // <|im_start|>
            CHECK(tok->token_type(151667) == TokenType::user_defined);  // <think>
            CHECK(md.get_int("tokenizer.ggml.bos_token_id") == 151643);  // config.json's, as llama.cpp
            CHECK_FALSE(md.get_bool("tokenizer.ggml.add_bos_token"));
        } else {
            CHECK(md.get_int("tokenizer.ggml.bos_token_id") == 128000);  // tokenizer_config's bos_token
            CHECK(tok->token_type(128009) == TokenType::control);        // <|eot_id|>
        }
    }
}
