// Hugging Face checkpoints of the Llama and Qwen3 families: config.json to GGUF
// metadata and DecoderSpec, HF tensor names to GGUF names, and the two transformations
// between the formats (llama3 RoPE frequency factors, Q/K row order).
//
// RoPE choice for Llama: HF Llama checkpoints are run as they are, with neox ("rotate
// half") RoPE on the unpermuted Q/K rows; GGUF files get Q/K rows permuted so that
// llama.cpp's normal (adjacent pairs) RoPE gives the same model. Running the HF rows with
// neox keeps every weight zero-copy (permuting at load would copy Q and K, about 1/8 of
// a Llama's weights), and makes "folder == converted GGUF" a real check of the
// permutation: the two paths share no RoPE code path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "io/hf_config.h"
#include "io/metadata.h"
#include "model/decoder_spec.h"

namespace inlay {

// GGUF metadata equivalent to `config` (general.architecture, general.name = `name`,
// and the ARCH.* keys llama.cpp's converter writes; linear RoPE scaling as
// ARCH.rope.scaling.*). Tokenizer keys are not included. llama3 scaling is not a key:
// it becomes the rope_freqs.weight tensor (llama3_rope_freq_factors).
Metadata gguf_metadata_from_hf_config(const HfConfig& config, const std::string& name);

// The spec inlay runs an HF checkpoint with: spec_from_gguf_metadata of the metadata
// above, n_vocab = vocab_size, and for Llama neox RoPE (unpermuted rows; see above)
// unless `rows_permuted`.
DecoderSpec spec_from_hf_config(const HfConfig& config, bool rows_permuted = false);

// The GGUF name of an HF tensor name ("model.layers.3.mlp.up_proj.weight" ->
// "blk.3.ffn_up.weight"), or "" when the name is not a weight of these families.
// Layer numbers are parsed strictly (decimal, no sign, no leading zeros).
std::string gguf_name_of_hf_tensor(std::string_view hf_name);

// Per-pair RoPE frequency divisors for Llama 3 scaling (the rope_freqs.weight tensor of
// GGUF files): pair i of n_rot dims has frequency theta^(-2i/n_rot); transformers'
// _compute_llama3_parameters divides it by `factor` when its wavelength exceeds
// original_max_position_embeddings / low_freq_factor, keeps it below
// original_max_position_embeddings / high_freq_factor, and interpolates smoothly in
// between. Returns n_rot / 2 values (original frequency / scaled frequency).
std::vector<float> llama3_rope_freq_factors(const HfRopeScaling& scaling, double rope_theta, int64_t n_rot);

// Reorders the rows of an HF q_proj/k_proj weight (n_heads heads of head_dim rows, each
// head's rows in neox order: first halves, then second halves) into GGUF's order for
// normal RoPE: row 2j + s of a head comes from row s * head_dim / 2 + j. `row_bytes` is
// the byte size of one row; src and dst hold n_heads * head_dim rows and must not
// overlap. This is llama.cpp's convert_hf_to_gguf permute().
void permute_rows_for_normal_rope(const std::byte* src, std::byte* dst, int64_t n_heads, int64_t head_dim,
                                  size_t row_bytes);

}  // namespace inlay
