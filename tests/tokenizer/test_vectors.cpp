// llama.cpp's tokenizer test vectors (models/ggml-vocab-*.gguf.inp/.out, produced by
// Hugging Face tokenizers): exact ids with add_special=false, parse_special=false, and
// the decode round trip.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>

#include "core/error.h"
#include "support/llamacpp.h"
#include "support/test_paths.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_test_util.h"

using namespace inlay;
using inlay::test::testdata;

TEST_CASE("GGUF llama-spm vocabulary matches all llama.cpp vectors", "[tokenizer][vectors]") {
    const auto path = testdata("vocab/ggml-vocab-llama-spm.gguf");
    INLAY_REQUIRE_FILE_OR_SKIP(path);
    const auto tok = tokenizer_from_gguf(test::gguf_metadata(path));
    CHECK(tok->n_vocab() == 32000);
    CHECK(tok->bos() == 1);
    CHECK(tok->eos() == 2);
    CHECK(tok->unk() == 0);
    CHECK(tok->add_bos());
    CHECK_FALSE(tok->add_eos());
    CHECK(tok->strips_leading_space());
    CHECK(test::check_vocab_vectors(*tok, "ggml-vocab-llama-spm.gguf") == 46);
}

TEST_CASE("GGUF phi-3 vocabulary matches all llama.cpp vectors", "[tokenizer][vectors]") {
    const auto path = testdata("vocab/ggml-vocab-phi-3.gguf");
    INLAY_REQUIRE_FILE_OR_SKIP(path);
    const auto tok = tokenizer_from_gguf(test::gguf_metadata(path));
    CHECK(tok->n_vocab() == 32064);
    CHECK(tok->eos() == 32000);
    CHECK(tok->is_eog(32000));
    CHECK(tok->is_eog(tok->find_token("<|end|>")));
    CHECK(test::check_vocab_vectors(*tok, "ggml-vocab-phi-3.gguf") == 46);
}

TEST_CASE("GGUF gpt-2 vocabulary matches all llama.cpp vectors", "[tokenizer][vectors]") {
    const auto path = testdata("vocab/ggml-vocab-gpt-2.gguf");
    INLAY_REQUIRE_FILE_OR_SKIP(path);
    const auto tok = tokenizer_from_gguf(test::gguf_metadata(path));
    CHECK(tok->n_vocab() == 50257);
    CHECK(tok->bos() == 50256);
    CHECK(tok->eos() == 50256);
    CHECK(tok->is_eog(50256));
    CHECK_FALSE(tok->strips_leading_space());
    CHECK(test::check_vocab_vectors(*tok, "ggml-vocab-gpt-2.gguf") == 46);
}

TEST_CASE("sentencepiece library path matches the llama-spm vectors", "[tokenizer][vectors]") {
    const auto path = testdata("tokenizers/llama2-tokenizer.model");
    INLAY_REQUIRE_FILE_OR_SKIP(path);
    const auto tok = tokenizer_from_sentencepiece(path.string());
    CHECK(tok->n_vocab() == 32000);
    CHECK(tok->bos() == 1);
    CHECK(tok->eos() == 2);
    CHECK(tok->unk() == 0);
    CHECK(tok->add_bos());
    CHECK(tok->strips_leading_space());
    CHECK(tok->token_type(3) == TokenType::byte);
    CHECK(tok->token_type(1) == TokenType::control);
    CHECK(test::check_vocab_vectors(*tok, "ggml-vocab-llama-spm.gguf") == 46);
}

TEST_CASE("sentencepiece and GGUF llama-spm agree on the whole vocabulary", "[tokenizer][vectors]") {
    const auto model = testdata("tokenizers/llama2-tokenizer.model");
    const auto gguf = testdata("vocab/ggml-vocab-llama-spm.gguf");
    INLAY_REQUIRE_FILE_OR_SKIP(model);
    INLAY_REQUIRE_FILE_OR_SKIP(gguf);
    const auto a = tokenizer_from_sentencepiece(model.string());
    const auto b = tokenizer_from_gguf(test::gguf_metadata(gguf));
    REQUIRE(a->n_vocab() == b->n_vocab());
    size_t differ = 0;
    for (int32_t id = 0; id < a->n_vocab(); ++id) {
        if (a->token_text(id) != b->token_text(id) || a->token_type(id) != b->token_type(id) ||
            a->token_to_piece(id, true) != b->token_to_piece(id, true)) {
            ++differ;
        }
    }
    CHECK(differ == 0);
}

// The Llama 3 and Qwen2 vocabulary GGUFs are too large for testdata; the same
// vocabularies come from tokenizer.json, converted as convert_hf_to_gguf.py does.
TEST_CASE("Llama 3 vocabulary (pre llama-bpe) matches the llama-bpe vectors", "[tokenizer][vectors]") {
    const auto path = testdata("tokenizers/llama3/tokenizer.json");
    INLAY_REQUIRE_FILE_OR_SKIP(path);
    Metadata md = test::metadata_from_hf_tokenizer_json(path, "llama-bpe");
    md.add("tokenizer.ggml.bos_token_id", MetadataValue::from_int(ValueType::U32, 128000));
    md.add("tokenizer.ggml.eos_token_id", MetadataValue::from_int(ValueType::U32, 128001));
    const auto tok = tokenizer_from_gguf(md);
    CHECK(tok->add_bos());       // llama.cpp's default for llama-bpe
    CHECK(tok->is_eog(128009));  // <|eot_id|>
    CHECK(tok->is_eog(128001));
    CHECK_FALSE(tok->is_eog(128000));
    CHECK(test::check_vocab_vectors(*tok, "ggml-vocab-llama-bpe.gguf") == 46);
}

TEST_CASE("Qwen3 vocabulary (pre qwen2) matches the qwen2 vectors", "[tokenizer][vectors]") {
    const auto path = testdata("tokenizers/qwen3/tokenizer.json");
    INLAY_REQUIRE_FILE_OR_SKIP(path);
    Metadata md = test::metadata_from_hf_tokenizer_json(path, "qwen2");
    md.add("tokenizer.ggml.eos_token_id", MetadataValue::from_int(ValueType::U32, 151645));
    const auto tok = tokenizer_from_gguf(md);
    CHECK_FALSE(tok->add_bos());
    CHECK(tok->is_eog(151645));  // <|im_end|>
    CHECK(tok->is_eog(151643));  // <|endoftext|>
    CHECK_FALSE(tok->is_eog(151644));
    CHECK(test::check_vocab_vectors(*tok, "ggml-vocab-qwen2.gguf") == 46);
}

// llama.cpp's own models/ directory (from the source that tools/llamacpp's libraries were
// built from; INLAY_LLAMACPP_MODELS overrides it) has the full ggml-vocab-llama-bpe.gguf
// and ggml-vocab-qwen2.gguf that testdata lacks.
TEST_CASE("llama.cpp models/ vocabularies match their vectors", "[tokenizer][vectors]") {
    const std::filesystem::path dir = test::llamacpp_models_dir();
    if (dir.empty()) INLAY_SKIP(test::llamacpp_missing());
    for (const std::string name : {"llama-spm", "phi-3", "gpt-2", "llama-bpe", "qwen2"}) {
        const std::filesystem::path base = dir / ("ggml-vocab-" + name + ".gguf");
        INLAY_REQUIRE_FILE_OR_SKIP(base);
        const auto tok = tokenizer_from_gguf(test::gguf_metadata(base));
        const auto inputs = test::read_vocab_inputs(base.string() + ".inp");
        const auto expected = test::read_vocab_outputs(base.string() + ".out");
        REQUIRE(inputs.size() == expected.size());
        for (size_t i = 0; i < inputs.size(); ++i) {
            const auto ids = tok->encode(inputs[i], false);
            INFO(name << " case " << i << ": expected " << test::ids_to_string(expected[i]) << " got "
                      << test::ids_to_string(ids));
            CHECK(ids == expected[i]);
            CHECK(tok->decode(ids, false, true) == inputs[i]);
        }
    }
}
