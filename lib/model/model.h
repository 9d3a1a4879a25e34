// Model: a loaded model file: weights, spec, tokenizer and the executor that runs it.
// Immutable after load and safe to share between threads and sessions.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "io/weight_source.h"
#include "model/decoder.h"
#include "model/decoder_spec.h"
#include "model/executor.h"
#include "model/make_executor.h"
#include "tokenizer/tokenizer.h"

namespace inlay {

struct ModelOptions {
    int n_threads = 0;            // 0: all cores
    DeviceKind device = DeviceKind::automatic;
    int device_index = 0;         // which GPU
    int64_t context_length = 0;   // per-session limit; 0: the model's trained context
    ProgressFn progress;          // optional; false aborts with INLAY_ERR_CANCELLED
};

class Model {
public:
    // Loads a GGUF file, or a Hugging Face folder (config.json, safetensors, tokenizer.model
    // or tokenizer.json). Every tensor is validated against the spec before any compute.
    static std::unique_ptr<Model> load(const std::string& path, const ModelOptions& options);

    [[nodiscard]] const DecoderSpec& spec() const { return executor_->spec(); }
    [[nodiscard]] const Tokenizer& tokenizer() const { return *tokenizer_; }
    [[nodiscard]] const WeightSource& weights() const { return *weights_; }
    [[nodiscard]] const Executor& executor() const { return *executor_; }
    // Where the model runs: "cpu", "cuda:0", ...
    [[nodiscard]] const std::string& device() const { return executor_->kv_device(); }
    [[nodiscard]] int64_t context_length() const { return context_length_; }
    [[nodiscard]] const std::string& name() const { return name_; }
    // The path it was loaded from (a GGUF file or a folder), for messages.
    [[nodiscard]] const std::string& source() const { return source_; }
    [[nodiscard]] int64_t n_params() const { return n_params_; }
    [[nodiscard]] double load_seconds() const { return load_seconds_; }

private:
    Model() = default;

    std::unique_ptr<WeightSource> weights_;  // declared first: destroyed last
    std::unique_ptr<Tokenizer> tokenizer_;
    std::unique_ptr<Executor> executor_;
    int64_t context_length_ = 0;
    std::string name_;
    std::string source_;
    int64_t n_params_ = 0;
    double load_seconds_ = 0.0;
};

}  // namespace inlay
