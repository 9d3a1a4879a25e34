// config.json parsing: the Llama and Qwen3 variants published checkpoints use (values
// copied from their config.json files), transformers' defaults, and malformed or
// unsupported configs, each with its status and a message naming the key.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/hf_config.h"

using namespace inlay;
using Json = nlohmann::ordered_json;

namespace {

// A minimal valid Llama config; cases edit it.
Json base_llama() {
    return Json{{"architectures", {"LlamaForCausalLM"}},
                {"model_type", "llama"},
                {"vocab_size", 32000},
                {"hidden_size", 4096},
                {"intermediate_size", 11008},
                {"num_hidden_layers", 32},
                {"num_attention_heads", 32}};
}

HfConfig parse(const Json& j) {
    return parse_hf_config(j.dump(), "config.json");
}

}  // namespace

TEST_CASE("Llama 2 7B config and transformers' defaults", "[hf_config]") {
    // meta-llama/Llama-2-7b-hf config.json.
    const auto c = parse_hf_config(R"({
      "architectures": ["LlamaForCausalLM"], "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
      "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 11008,
      "max_position_embeddings": 4096, "model_type": "llama", "num_attention_heads": 32,
      "num_hidden_layers": 32, "num_key_value_heads": 32, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
      "rope_scaling": null, "tie_word_embeddings": false, "torch_dtype": "float16",
      "transformers_version": "4.31.0.dev0", "use_cache": true, "vocab_size": 32000})",
                                   "llama2/config.json");
    CHECK(c.model_type == "llama");
    CHECK(c.hidden_size == 4096);
    CHECK(c.num_key_value_heads == 32);
    CHECK(c.head_dim == 128);
    CHECK(c.max_position_embeddings == 4096);
    CHECK(c.rms_norm_eps == 1e-5);
    CHECK(c.rope_theta == 10000.0);
    CHECK_FALSE(c.rope_scaling);
    CHECK_FALSE(c.tie_word_embeddings);
    CHECK(c.bos_token_id == 1);
    CHECK(c.eos_token_ids == std::vector<int64_t>{2});
    CHECK(c.torch_dtype == "float16");

    // Absent keys: LlamaConfig's defaults.
    const auto d = parse(base_llama());
    CHECK(d.num_key_value_heads == 32);
    CHECK(d.max_position_embeddings == 2048);
    CHECK(d.rms_norm_eps == 1e-6);
    CHECK_FALSE(d.bos_token_id);
    CHECK(d.eos_token_ids.empty());
}

TEST_CASE("Llama 3.2 1B config: llama3 rope scaling, tied embeddings, head_dim, eos list", "[hf_config]") {
    // meta-llama/Llama-3.2-1B-Instruct config.json (eos as a list).
    const auto c = parse_hf_config(R"({
      "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
      "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "head_dim": 64,
      "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 8192,
      "max_position_embeddings": 131072, "mlp_bias": false, "model_type": "llama",
      "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8, "pretraining_tp": 1,
      "rms_norm_eps": 1e-05, "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0,
      "low_freq_factor": 1.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"},
      "rope_theta": 500000.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16", "vocab_size": 128256})",
                                   "llama3.2/config.json");
    CHECK(c.head_dim == 64);
    CHECK(c.num_key_value_heads == 8);
    CHECK(c.rope_theta == 500000.0);
    CHECK(c.tie_word_embeddings);
    REQUIRE(c.rope_scaling);
    CHECK(c.rope_scaling->type == "llama3");
    CHECK(c.rope_scaling->factor == 32.0);
    CHECK(c.rope_scaling->low_freq_factor == 1.0);
    CHECK(c.rope_scaling->high_freq_factor == 4.0);
    CHECK(c.rope_scaling->original_max_position_embeddings == 8192);
    CHECK(c.eos_token_ids == std::vector<int64_t>{128001, 128008, 128009});
}

TEST_CASE("Qwen3 0.6B config: head_dim apart from hidden_size / heads, tied", "[hf_config]") {
    // Qwen/Qwen3-0.6B config.json.
    const auto c = parse_hf_config(R"({
      "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
      "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
      "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 3072,
      "max_position_embeddings": 40960, "max_window_layers": 28, "model_type": "qwen3",
      "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8, "rms_norm_eps": 1e-06,
      "rope_scaling": null, "rope_theta": 1000000, "sliding_window": null, "tie_word_embeddings": true,
      "torch_dtype": "bfloat16", "transformers_version": "4.51.0", "use_cache": true,
      "use_sliding_window": false, "vocab_size": 151936})",
                                   "qwen3/config.json");
    CHECK(c.model_type == "qwen3");
    CHECK(c.head_dim == 128);
    CHECK(c.hidden_size / c.num_attention_heads == 64);
    CHECK(c.rope_theta == 1e6);  // an integer in the file
    CHECK(c.tie_word_embeddings);
    CHECK(c.eos_token_ids == std::vector<int64_t>{151645});
}

TEST_CASE("config variants: linear scaling, rope_parameters, model_type from architectures", "[hf_config]") {
    auto j = base_llama();
    j["rope_scaling"] = {{"type", "linear"}, {"factor", 4}};
    auto c = parse(j);
    REQUIRE(c.rope_scaling);
    CHECK(c.rope_scaling->type == "linear");
    CHECK(c.rope_scaling->factor == 4.0);

    j = base_llama();
    j["rope_scaling"] = {{"rope_type", "default"}};
    CHECK_FALSE(parse(j).rope_scaling);

    // transformers 5 nests theta and scaling in rope_parameters.
    j = base_llama();
    j["rope_parameters"] = {{"rope_theta", 500000.0}, {"rope_type", "llama3"}, {"factor", 8.0}};
    c = parse(j);
    CHECK(c.rope_theta == 500000.0);
    REQUIRE(c.rope_scaling);
    CHECK(c.rope_scaling->factor == 8.0);
    CHECK(c.rope_scaling->original_max_position_embeddings == 8192);

    j = base_llama();
    j.erase("model_type");
    CHECK(parse(j).model_type == "llama");
    j["architectures"] = {"Qwen3ForCausalLM"};
    CHECK(parse(j).model_type == "qwen3");
    j["model_type"] = "qwen3";
    CHECK(parse(j).max_position_embeddings == 32768);  // Qwen3Config's default
}

TEST_CASE("malformed and unsupported configs name the key at fault", "[hf_config][malformed]") {
    struct Case {
        const char* name;
        std::function<void(Json&)> edit;
        inlay_status status;
        const char* message;
    };
    const std::vector<Case> cases = {
        {"no_model_type",
         [](Json& j) {
             j.erase("model_type");
             j.erase("architectures");
         },
         INLAY_ERR_MISSING, "\"model_type\" is missing"},
        {"mistral", [](Json& j) { j["model_type"] = "mistral"; }, INLAY_ERR_UNSUPPORTED,
         "model_type \"mistral\" is not supported"},
        {"unknown_architecture",
         [](Json& j) {
             j.erase("model_type");
             j["architectures"] = {"GPT2LMHeadModel"};
         },
         INLAY_ERR_UNSUPPORTED, "architecture \"GPT2LMHeadModel\""},
        {"architectures_not_array", [](Json& j) { j["architectures"] = "LlamaForCausalLM"; }, INLAY_ERR_BAD_FORMAT,
         "\"architectures\" is a string"},
        {"no_hidden_size", [](Json& j) { j.erase("hidden_size"); }, INLAY_ERR_MISSING, "\"hidden_size\" is missing"},
        {"no_vocab_size", [](Json& j) { j.erase("vocab_size"); }, INLAY_ERR_MISSING, "\"vocab_size\" is missing"},
        {"null_layers", [](Json& j) { j["num_hidden_layers"] = nullptr; }, INLAY_ERR_MISSING,
         "\"num_hidden_layers\" is missing"},
        {"hidden_size_string", [](Json& j) { j["hidden_size"] = "4096"; }, INLAY_ERR_BAD_FORMAT,
         "\"hidden_size\" is a string"},
        {"hidden_size_float", [](Json& j) { j["hidden_size"] = 4096.0; }, INLAY_ERR_BAD_FORMAT,
         "\"hidden_size\" is a number"},
        {"hidden_size_zero", [](Json& j) { j["hidden_size"] = 0; }, INLAY_ERR_BAD_FORMAT,
         "\"hidden_size\" = 0 is outside"},
        {"layers_negative", [](Json& j) { j["num_hidden_layers"] = -2; }, INLAY_ERR_BAD_FORMAT,
         "\"num_hidden_layers\" = -2 is outside"},
        {"heads_huge", [](Json& j) { j["num_attention_heads"] = 1e20; }, INLAY_ERR_BAD_FORMAT,
         "\"num_attention_heads\" is a number"},
        {"kv_heads_not_divisor", [](Json& j) { j["num_key_value_heads"] = 5; }, INLAY_ERR_BAD_FORMAT,
         "is not a multiple of \"num_key_value_heads\" = 5"},
        {"hidden_not_divisible", [](Json& j) { j["hidden_size"] = 4097; }, INLAY_ERR_BAD_FORMAT,
         "\"hidden_size\" = 4097 is not a multiple of \"num_attention_heads\" = 32"},
        {"odd_head_dim", [](Json& j) { j["head_dim"] = 63; }, INLAY_ERR_BAD_FORMAT, "the head dimension 63 is odd"},
        {"eps_zero", [](Json& j) { j["rms_norm_eps"] = 0; }, INLAY_ERR_BAD_FORMAT, "\"rms_norm_eps\" = 0 is outside"},
        {"eps_string", [](Json& j) { j["rms_norm_eps"] = "1e-5"; }, INLAY_ERR_BAD_FORMAT,
         "\"rms_norm_eps\" is a string"},
        {"theta_negative", [](Json& j) { j["rope_theta"] = -1.0; }, INLAY_ERR_BAD_FORMAT,
         "\"rope_theta\" = -1 must be positive"},
        {"scaling_yarn",
         [](Json& j) {
             j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
         },
         INLAY_ERR_UNSUPPORTED, "rope_scaling type \"yarn\" is not supported"},
        {"scaling_dynamic",
         [](Json& j) {
             j["rope_scaling"] = {{"type", "dynamic"}, {"factor", 2.0}};
         },
         INLAY_ERR_UNSUPPORTED, "\"dynamic\""},
        {"scaling_not_object", [](Json& j) { j["rope_scaling"] = 8.0; }, INLAY_ERR_BAD_FORMAT,
         "\"rope_scaling\" is a number, not an object"},
        {"scaling_no_type",
         [](Json& j) {
             j["rope_scaling"] = {{"factor", 8.0}};
         },
         INLAY_ERR_BAD_FORMAT, "has no \"rope_type\""},
        {"scaling_no_factor",
         [](Json& j) {
             j["rope_scaling"] = {{"rope_type", "linear"}};
         },
         INLAY_ERR_BAD_FORMAT, "has no \"factor\""},
        {"scaling_factor_small",
         [](Json& j) {
             j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 0.5}};
         },
         INLAY_ERR_BAD_FORMAT, "factor 0.5 is outside"},
        {"llama3_bad_freqs",
         [](Json& j) {
             j["rope_scaling"] = {
                 {"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 4.0}, {"high_freq_factor", 1.0}};
         },
         INLAY_ERR_BAD_FORMAT, "llama3 needs 0 < low_freq_factor (4) < high_freq_factor (1)"},
        {"partial_rotary", [](Json& j) { j["partial_rotary_factor"] = 0.5; }, INLAY_ERR_UNSUPPORTED,
         "\"partial_rotary_factor\" = 0.5"},
        {"gelu", [](Json& j) { j["hidden_act"] = "gelu"; }, INLAY_ERR_UNSUPPORTED, "\"hidden_act\" = \"gelu\""},
        {"attention_bias", [](Json& j) { j["attention_bias"] = true; }, INLAY_ERR_UNSUPPORTED,
         "\"attention_bias\" = true"},
        {"mlp_bias", [](Json& j) { j["mlp_bias"] = true; }, INLAY_ERR_UNSUPPORTED, "\"mlp_bias\" = true"},
        {"sliding_window", [](Json& j) { j["use_sliding_window"] = true; }, INLAY_ERR_UNSUPPORTED,
         "\"use_sliding_window\" = true"},
        {"tie_string", [](Json& j) { j["tie_word_embeddings"] = "true"; }, INLAY_ERR_BAD_FORMAT,
         "\"tie_word_embeddings\" is a string, not a boolean"},
        {"bos_out_of_vocab", [](Json& j) { j["bos_token_id"] = 32000; }, INLAY_ERR_BAD_FORMAT,
         "\"bos_token_id\" = 32000 is outside [0, 31999]"},
        {"eos_list_bad",
         [](Json& j) {
             j["eos_token_id"] = {2, "x"};
         },
         INLAY_ERR_BAD_FORMAT, "\"eos_token_id\" holds \"x\""},
        {"eos_negative", [](Json& j) { j["eos_token_id"] = -1; }, INLAY_ERR_BAD_FORMAT, "\"eos_token_id\" = -1"},
    };
    for (const Case& c : cases) {
        INFO(c.name);
        Json j = base_llama();
        c.edit(j);
        std::string message;
        inlay_status status = INLAY_OK;
        try {
            (void)parse(j);
        } catch (const Error& e) {
            status = e.status();
            message = e.what();
        }
        INFO(message);
        CHECK(status == c.status);
        CHECK_THAT(message, Catch::Contains(c.message) && Catch::Contains("config.json"));
    }

    // Not JSON, not an object, duplicate keys, absurd nesting, an unreadable file.
    const std::pair<const char*, const char*> texts[] = {
        {"{\"hidden_size\": ", "invalid JSON"},
        {"[1, 2]", "not a JSON object"},
        {R"({"hidden_size": 1, "hidden_size": 2})", "duplicate JSON key \"hidden_size\""},
        {"", "invalid JSON"},
    };
    for (const auto& [text, msg] : texts) {
        INFO(text);
        try {
            (void)parse_hf_config(text, "config.json");
            FAIL("expected an error");
        } catch (const Error& e) {
            CHECK(e.status() == INLAY_ERR_BAD_FORMAT);
            CHECK_THAT(e.what(), Catch::Contains(msg));
        }
    }
    const std::string deep = std::string(100000, '[') + std::string(100000, ']');
    try {
        (void)parse_hf_config("{\"a\": " + deep + "}", "config.json");
        FAIL("expected an error");
    } catch (const Error& e) {
        CHECK(e.status() == INLAY_ERR_BAD_FORMAT);
        CHECK_THAT(e.what(), Catch::Contains("nested deeper than 16"));
    }
    try {
        (void)read_hf_config("/nonexistent/config.json");
        FAIL("expected an error");
    } catch (const Error& e) {
        CHECK(e.status() == INLAY_ERR_IO);
    }
}
