#include "bench_roofline.h"

#include <filesystem>
#include <stdexcept>

#include "backend/common/kv_geometry.h"
#include "core/error.h"
#include "core/tensor_view.h"
#include "io/gguf_reader.h"
#include "model/families/family.h"
#include "model/families/hf_source.h"

namespace inlay::cli {

uint64_t decode_weight_bytes(const std::vector<TensorView>& tensors) {
    bool tied = true;
    for (const TensorView& t : tensors)
        if (t.name == "output.weight") tied = false;
    uint64_t bytes = 0;
    for (const TensorView& t : tensors) {
        const bool one_row = t.name == "token_embd.weight" && !tied && t.n_rows() > 0;
        bytes += one_row ? t.nbytes / static_cast<uint64_t>(t.n_rows()) : t.nbytes;
    }
    return bytes;
}

namespace {

// Runs `read` on the model at `path` opened as a WeightSource (GGUF file or HF folder).
template <class F>
auto with_source(const std::string& path, F&& read) {
    try {
        std::error_code ec;
        if (std::filesystem::is_directory(path, ec)) return read(*HfModelSource::open(path));
        return read(*GgufFile::open(path));
    } catch (const Error& e) {
        // The library's internal error type; the caller knows only the wrapper's.
        throw std::runtime_error(std::string(inlay_status_name(e.status())) + ": " + e.what());
    }
}

}  // namespace

uint64_t decode_weight_bytes_of_file(const std::string& path) {
    return with_source(path, [](const WeightSource& s) { return decode_weight_bytes(s.tensors()); });
}

double kv_bytes_per_position_f16_of_file(const std::string& path) {
    return with_source(path, [](const WeightSource& s) {
        const DecoderSpec spec = spec_from_gguf_metadata(s.metadata());
        return kv_bytes_per_position_f16(spec.n_layers, spec.n_kv_heads, spec.head_dim);
    });
}

double kv_bytes_per_position(const KvGeometry& geometry) {
    return static_cast<double>(kv_canonical_block_bytes(geometry)) / static_cast<double>(geometry.block_size);
}

double kv_bytes_per_position_f16(int64_t n_layers, int64_t n_kv_heads, int64_t head_dim) {
    KvGeometry g;
    g.n_layers = n_layers;
    g.n_kv_heads = n_kv_heads;
    g.head_dim = head_dim;
    g.dtype = DType::F16;
    return kv_bytes_per_position(g);
}

double decode_bytes_per_token(uint64_t weight_bytes, double kv_bytes_per_position, int64_t n_depth, int64_t n_gen) {
    // Mean of n_depth + 1 .. n_depth + n_gen attended positions.
    const double positions = static_cast<double>(n_depth) + (static_cast<double>(n_gen) + 1.0) / 2.0;
    return static_cast<double>(weight_bytes) + kv_bytes_per_position * positions;
}

}  // namespace inlay::cli
