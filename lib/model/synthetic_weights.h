// Synthetic models for benchmarks: a named shape (llama3-8b, qwen3-8b, ...) with random
// weights in any stored type, made in memory in seconds, so that a GPU or CPU benchmark
// of a large model needs no download. The numbers are random but valid (finite scales),
// so every kernel does its real work.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/weight_source.h"
#include "model/decoder_spec.h"

namespace inlay {

// The shapes known by name, e.g. "llama3-8b"; nullopt for another name.
std::optional<DecoderSpec> synthetic_spec(std::string_view shape);
// Their names, for messages.
std::vector<std::string> synthetic_shape_names();

// Random weights of `spec` (n_vocab set): matrices in `matrix_type`, norms in f32. To be
// fast, each matrix is a few quantized template rows repeated with a per-row offset into
// the template set (every row lives in its own memory, so reading the matrix still reads
// all of its bytes). Throws INLAY_ERR_UNSUPPORTED for a type without a quantizer and
// INLAY_ERR_SHAPE_MISMATCH when a row length does not fit the type's blocks.
class SyntheticWeights final : public WeightSource {
public:
    SyntheticWeights(const DecoderSpec& spec, DType matrix_type, uint64_t seed = 1);

    [[nodiscard]] const Metadata& metadata() const override { return metadata_; }
    [[nodiscard]] const std::vector<TensorView>& tensors() const override { return tensors_; }
    [[nodiscard]] const std::string& origin() const override { return origin_; }
    [[nodiscard]] uint64_t file_bytes() const override { return bytes_; }

private:
    // Values center + uniform(-a, a), a = sqrt(3 / n_cols) for matrices (activations keep
    // their scale through the layers) and 0.1 for norm weights (center 1).
    void add(const std::string& name, DType type, int64_t n_cols, int64_t n_rows, uint64_t seed, float center = 0.0f,
             float a = 0.0f);
    void add_norm(const std::string& name, int64_t n, uint64_t seed) { add(name, DType::F32, n, 1, seed, 1.0f, 0.1f); }

    Metadata metadata_;
    std::vector<TensorView> tensors_;
    std::vector<std::unique_ptr<std::byte[]>> storage_;
    std::string origin_;
    uint64_t bytes_ = 0;
};

}  // namespace inlay
