// HfConfig: the hyper-parameters of a Hugging Face Llama or Qwen3 checkpoint, read from
// its config.json and validated. Absent optional keys take transformers' defaults for
// the model type (LlamaConfig / Qwen3Config); JSON null counts as absent.
//
// Errors name the file and the key:
//   INLAY_ERR_BAD_FORMAT   not a JSON object, a key of the wrong JSON type (e.g. a float
//                          where an integer belongs), a value out of range or
//                          inconsistent (num_attention_heads not a multiple of
//                          num_key_value_heads, hidden_size not divisible without
//                          head_dim, a token id outside the vocabulary, ...)
//   INLAY_ERR_MISSING      a required key (vocab_size, hidden_size, intermediate_size,
//                          num_hidden_layers, num_attention_heads; model_type when
//                          architectures does not name the model either)
//   INLAY_ERR_UNSUPPORTED  another model type, rope_scaling type, hidden_act, biases,
//                          sliding-window attention or partial rotary embeddings
//   INLAY_ERR_IO           the file cannot be read
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace inlay {

struct HfRopeScaling {
    std::string type;                                 // "linear" or "llama3"
    double factor = 1.0;                              // both
    double low_freq_factor = 1.0;                     // llama3
    double high_freq_factor = 4.0;                    // llama3
    int64_t original_max_position_embeddings = 8192;  // llama3
};

struct HfConfig {
    std::string origin;      // the file, for messages
    std::string model_type;  // "llama" or "qwen3"
    std::vector<std::string> architectures;
    int64_t vocab_size = 0;
    int64_t hidden_size = 0;
    int64_t intermediate_size = 0;
    int64_t num_hidden_layers = 0;
    int64_t num_attention_heads = 0;
    int64_t num_key_value_heads = 0;  // default: num_attention_heads
    int64_t head_dim = 0;             // default: hidden_size / num_attention_heads
    int64_t max_position_embeddings = 0;
    double rms_norm_eps = 1e-6;
    double rope_theta = 10000.0;
    std::optional<HfRopeScaling> rope_scaling;  // none, or "default"
    bool tie_word_embeddings = false;
    std::optional<int64_t> bos_token_id;
    std::vector<int64_t> eos_token_ids;  // eos_token_id: one id or a list
    std::optional<int64_t> pad_token_id;
    std::string torch_dtype;  // as written ("bfloat16", ...), or ""
};

// Parses config.json text; `origin` names it in messages.
HfConfig parse_hf_config(std::string_view json_text, const std::string& origin);
// Reads and parses the file at `path`.
HfConfig read_hf_config(const std::string& path);

}  // namespace inlay
