// Conversion of a Hugging Face folder to a GGUF file that llama.cpp and inlay load
// (`inlay convert`), with inlay's own quantizers (lib/quant).
//
// The file holds: general.architecture/name/file_type (and quantization_version for
// quantized types), the ARCH.* keys of config.json (hf_family.h), the folder's tokenizer
// as tokenizer.ggml.* (hf_tokenizer.h), and the weights under GGUF names, Llama Q/K rows
// permuted for normal RoPE, plus rope_freqs.weight for llama3 RoPE scaling.
//
// Tensor types, as llama.cpp's tools choose them:
//   - 1-D tensors (norms) and rope_freqs.weight stay F32;
//   - f32 / f16 / bf16 / q8_0: every 2-D weight in that type;
//   - q4_k: llama-quantize's Q4_K_M: Q4_K, except Q6_K for the output projection (the
//     token embedding when tied) and for attn_v / ffn_down of the layers llama.cpp's
//     use_more_bits() picks (the first and last eighth, and every third in between);
//   - q1_0: Q1_0, except Q6_K for the output projection (the embedding when tied).
// Fallbacks when a row does not fit the type's block (as llama-quantize): Q4_K and Q6_K
// (256) -> Q8_0 (llama.cpp uses Q5_0 for Q4_K, a type inlay lacks; Q8_0 for Q6_K);
// Q1_0 (128) -> Q8_0 (llama.cpp has no rule); Q8_0 (32) -> F16 (as convert_hf_to_gguf).
// Each fallback is reported per tensor.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"

namespace inlay {

enum class ConvertType { f32, f16, bf16, q8_0, q4_k, q1_0 };

std::optional<ConvertType> convert_type_from_name(std::string_view name);  // "f32", "q4_k", ...
std::string_view convert_type_name(ConvertType type);
// llama.cpp's general.file_type for a conversion (ALL_F32 0, MOSTLY_F16 1, MOSTLY_Q8_0 7,
// MOSTLY_Q4_K_M 15, MOSTLY_BF16 32, MOSTLY_Q1_0 40).
uint32_t convert_file_type(ConvertType type);

// The type a weight gets. `name` is its GGUF name, `row_length` its ne[0], `layer` its
// block index (-1 outside blocks); `why` (optional) receives the reason when the type
// differs from the requested one ("" otherwise).
DType convert_tensor_type(ConvertType type, const std::string& name, int n_dims, int64_t row_length, int64_t layer,
                          int64_t n_layers, bool tied_output, std::string* why = nullptr);

struct ConvertedTensor {
    std::string name;    // GGUF name
    DType type;          // as written
    std::string reason;  // why type is not the requested one, or ""
};

struct ConvertReport {
    std::string architecture;
    std::vector<ConvertedTensor> tensors;  // in file order
    uint64_t file_bytes = 0;
    int64_t n_params = 0;
};

struct ConvertOptions {
    ConvertType type = ConvertType::f16;
    std::string name;  // general.name; "" = the folder's name
};

// Reads the folder (HfModelSource, permuted rows), converts and writes `out_path`
// atomically. Throws inlay::Error with the loader's statuses; INLAY_ERR_IO when the
// output cannot be written. Not thread-safe with respect to `out_path`.
ConvertReport convert_hf_folder(const std::string& folder, const std::string& out_path, const ConvertOptions& options);

}  // namespace inlay
