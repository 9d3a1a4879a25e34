// Faults a model carries, through the C ABI: a vocabulary with ill-formed UTF-8 in its
// token texts must not put those bytes into inlay_last_error (they are escaped), and
// weights that compute NaN logits fail generation with INLAY_ERR_BAD_WEIGHTS and a
// message naming the model, for greedy and sampled decoding alike.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <limits>
#include <string>
#include <variant>

#include "core/utf8.h"
#include "inlay/inlay.h"
#include "support/gguf_fixtures.h"
#include "support/test_paths.h"

namespace {

std::filesystem::path write_model(const inlay::test::TinyModel& model, const std::string& name) {
    const auto path = inlay::test::scratch_dir("model_faults") / name;
    const auto bytes = model.to_bytes();
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return path;
}

}  // namespace

TEST_CASE("ill-formed UTF-8 in token texts is escaped in the error message", "[faults]") {
    auto model = inlay::test::make_tiny_llama({});
    inlay::MetadataValue* tokens = model.find_key("tokenizer.ggml.tokens");
    REQUIRE(tokens != nullptr);
    auto& texts = std::get<inlay::MetadataArray>(tokens->value).strings;
    REQUIRE(texts.size() >= 300);
    // Two tokens with the same ill-formed text: the loader names the text.
    texts[298] = "\xC3(\xFF";
    texts[299] = "\xC3(\xFF";
    const auto path = write_model(model, "bad_utf8_vocab.gguf");
    inlay_model* handle = nullptr;
    CHECK(inlay_model_load(path.c_str(), nullptr, &handle) == INLAY_ERR_BAD_FORMAT);
    CHECK(handle == nullptr);
    const std::string message = inlay_last_error();
    INFO(message);
    CHECK(inlay::utf8::find_invalid(message) == std::string_view::npos);
    CHECK_THAT(message, Catch::Contains("same text \"\\xc3(\\xff\""));
}

TEST_CASE("NaN logits fail generation with INLAY_ERR_BAD_WEIGHTS naming the model", "[faults]") {
    auto model = inlay::test::make_tiny_llama({});
    inlay::test::TinyTensor* output = model.find_tensor("output.weight");
    REQUIRE(output != nullptr);
    REQUIRE(output->type == inlay::DType::F32);
    for (float& v : output->values) v = std::numeric_limits<float>::quiet_NaN();
    output->data = inlay::test::encode_fixture_weights(output->type, output->values);
    const auto path = write_model(model, "nan_output.gguf");

    inlay_model* handle = nullptr;
    REQUIRE(inlay_model_load(path.c_str(), nullptr, &handle) == INLAY_OK);
    for (const float temperature : {0.0f, 0.8f}) {
        INFO("temperature " << temperature);
        inlay_session* session = nullptr;
        REQUIRE(inlay_session_create(handle, nullptr, &session) == INLAY_OK);
        inlay_generate_params gp;
        inlay_generate_params_init(&gp);
        gp.temperature = temperature;
        gp.seed = 3;
        gp.max_tokens = 4;
        inlay_result* result = nullptr;
        CHECK(inlay_session_generate(session, "ab", &gp, &result) == INLAY_ERR_BAD_WEIGHTS);
        const std::string message = inlay_last_error();
        INFO(message);
        CHECK_THAT(message, Catch::StartsWith("INLAY_ERR_BAD_WEIGHTS: model \"" + path.string() + "\""));
        CHECK_THAT(message, Catch::Contains("NaN"));
        inlay_result_free(result);
        inlay_session_free(session);
    }
    inlay_model_free(handle);
}
