// The whole malformed-GGUF corpus through the C ABI: every file (broken GGUF or an
// unloadable model in a well-formed GGUF) gives its specific status and a message
// naming what is at fault, never a crash (this runs under ASan/UBSan in CI).
#include <catch2/catch.hpp>

#include <fstream>

#include "inlay/inlay.h"
#include "support/gguf_fixtures.h"
#include "support/gguf_malformed.h"
#include "support/test_paths.h"

TEST_CASE("every malformed GGUF is rejected through the C ABI with its status and message", "[malformed]") {
    const auto dir = inlay::test::scratch_dir("malformed_models");
    const auto corpus = inlay::test::malformed_gguf_corpus();
    REQUIRE(corpus.size() >= 30);
    size_t model_level = 0;
    for (const auto& c : corpus) {
        INFO("case " << c.name);
        const auto path = dir / (c.name + ".gguf");
        {
            std::ofstream out(path, std::ios::binary);
            out.write(reinterpret_cast<const char*>(c.bytes.data()), static_cast<std::streamsize>(c.bytes.size()));
        }
        inlay_model_params params;
        inlay_model_params_init(&params);
        params.n_threads = 1;
        inlay_model* model = nullptr;
        const inlay_status status = inlay_model_load(path.c_str(), &params, &model);
        const std::string message = inlay_last_error();
        INFO("status " << inlay_status_name(status) << ": " << message);
        CHECK(model == nullptr);
        CHECK(status == c.expected);
        CHECK_THAT(message, Catch::Contains(c.message_contains));
        CHECK_THAT(message, Catch::StartsWith(inlay_status_name(c.expected)));
        inlay_model_free(model);
        model_level += c.model_level ? 1 : 0;
    }
    CHECK(model_level >= 6);
}

TEST_CASE("the valid tiny model loads and generates through the C ABI", "[malformed]") {
    // The corpus's model-level cases are edits of this file; it must itself be fine.
    const auto dir = inlay::test::scratch_dir("valid_tiny");
    const auto bytes = inlay::test::make_tiny_llama_gguf({});
    const auto path = dir / "tiny.gguf";
    {
        std::ofstream out(path, std::ios::binary);
        out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    }
    inlay_model* model = nullptr;
    REQUIRE(inlay_model_load(path.c_str(), nullptr, &model) == INLAY_OK);
    inlay_session* session = nullptr;
    REQUIRE(inlay_session_create(model, nullptr, &session) == INLAY_OK);
    inlay_generate_params gp;
    inlay_generate_params_init(&gp);
    gp.temperature = 0;
    gp.max_tokens = 8;
    gp.ignore_eos = true;
    inlay_result* result = nullptr;
    REQUIRE(inlay_session_generate(session, "abc", &gp, &result) == INLAY_OK);
    size_t n = 0;
    inlay_result_tokens(result, &n);
    CHECK(n == 8);
    inlay_result_free(result);
    inlay_session_free(session);
    inlay_model_free(model);
}
