// The bytes one decode step (one token of one sequence) reads from memory, for the
// bandwidth figures of `inlay bench`: every weight tensor once, except the token
// embedding of which only one row is gathered (unless the output projection is tied to
// it, then it is read in full too), plus the K and V of every position attended.
// Internal types are only declared here, so that commands built on the C++ wrapper
// (whose inlay::Error is not the library's) can include it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace inlay {
struct TensorView;
struct KvGeometry;
}  // namespace inlay

namespace inlay::cli {

// Weight bytes read per decode token.
uint64_t decode_weight_bytes(const std::vector<TensorView>& tensors);

// Weight bytes read per decode token by the model at `path` (a GGUF file or a Hugging
// Face folder), from its tensor table alone (the file is mapped, not read). Throws
// std::runtime_error when the file cannot be read.
uint64_t decode_weight_bytes_of_file(const std::string& path);

// The f16 K and V bytes of one position over all layers of the model at `path`, from its
// metadata alone (the same spec the library derives). Throws std::runtime_error when the
// file cannot be read.
double kv_bytes_per_position_f16_of_file(const std::string& path);

// K and V bytes of one position over all layers.
double kv_bytes_per_position(const KvGeometry& geometry);
// Same for the engine's default cache: f16 K and V.
double kv_bytes_per_position_f16(int64_t n_layers, int64_t n_kv_heads, int64_t head_dim);

// Mean bytes read per token by n_gen decode steps after a context of n_depth tokens:
// step k (0-based) attends n_depth + k + 1 positions.
double decode_bytes_per_token(uint64_t weight_bytes, double kv_bytes_per_position, int64_t n_depth, int64_t n_gen);

}  // namespace inlay::cli
