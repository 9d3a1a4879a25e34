// HfModelSource: a Hugging Face model folder (config.json + safetensors, single or
// sharded) seen as the GGUF model it corresponds to: GGUF metadata built from
// config.json and GGUF-named, zero-copy views of the safetensors tensors, so the decoder
// (which looks tensors up by GGUF name) runs it unchanged.
//
// Checks, naming the HF tensor and the folder:
//   INLAY_ERR_MISSING         a weight the config requires (lm_head.weight unless
//                             tie_word_embeddings; q_norm/k_norm for Qwen3)
//   INLAY_ERR_SHAPE_MISMATCH  a weight whose shape contradicts config.json (the shape is
//                             given in safetensors order, outermost first)
//   INLAY_ERR_UNSUPPORTED     a weight stored in a dtype other than F32/F16/BF16
// Weights the families do not use (rotary_emb.inv_freq buffers, layers beyond
// num_hidden_layers, unknown names) are left out with one warning.
//
// Views point into the mappings, except: rows of Q/K when `permute_qk` (a copy in GGUF
// row order, for writing GGUF files), rope_freqs.weight (computed, for llama3
// scaling), and tensors the safetensors reader had to copy for alignment.
// Immutable after open(); safe to share between threads.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "io/hf_config.h"
#include "io/safetensors_reader.h"
#include "io/weight_source.h"
#include "model/decoder_spec.h"

namespace inlay {

struct HfSourceOptions {
    // Permute Llama Q/K rows into GGUF's order (normal RoPE). Off: the rows stay as HF
    // stores them and spec() asks for neox RoPE (see hf_family.h).
    bool permute_qk = false;
};

class HfModelSource final : public WeightSource {
public:
    // `folder` holds config.json and model.safetensors or model.safetensors.index.json.
    static std::unique_ptr<HfModelSource> open(const std::string& folder, const HfSourceOptions& options = {});

    [[nodiscard]] const Metadata& metadata() const override { return metadata_; }
    [[nodiscard]] const std::vector<TensorView>& tensors() const override { return views_; }
    [[nodiscard]] const std::string& origin() const override { return folder_; }
    [[nodiscard]] uint64_t file_bytes() const override { return st_->file_bytes(); }

    [[nodiscard]] const HfConfig& config() const { return config_; }
    // The spec to run these views with (n_vocab included).
    [[nodiscard]] const DecoderSpec& spec() const { return spec_; }
    [[nodiscard]] const SafetensorsSource& safetensors() const { return *st_; }
    // The HF name each view came from ("" for rope_freqs.weight), parallel to tensors().
    [[nodiscard]] const std::vector<std::string>& hf_names() const { return hf_names_; }

private:
    HfModelSource() = default;

    std::string folder_;
    HfConfig config_;
    DecoderSpec spec_;
    std::unique_ptr<SafetensorsSource> st_;
    Metadata metadata_;
    std::vector<TensorView> views_;
    std::vector<std::string> hf_names_;
    std::vector<std::vector<std::byte>> owned_;
};

}  // namespace inlay
