#include "model/families/hf_convert.h"

#include <fmt/format.h>

#include <charconv>
#include <filesystem>

#include "core/error.h"
#include "io/gguf_writer.h"
#include "model/families/hf_source.h"
#include "model/families/hf_tokenizer.h"
#include "quant/quantize.h"

namespace inlay {
namespace {

struct TypeName {
    ConvertType type;
    std::string_view name;
    DType dtype;
    uint32_t file_type;
};
constexpr TypeName kTypes[] = {
    {ConvertType::f32, "f32", DType::F32, 0},     {ConvertType::f16, "f16", DType::F16, 1},
    {ConvertType::bf16, "bf16", DType::BF16, 32}, {ConvertType::q8_0, "q8_0", DType::Q8_0, 7},
    {ConvertType::q4_k, "q4_k", DType::Q4_K, 15}, {ConvertType::q1_0, "q1_0", DType::Q1_0, 40},
};

const TypeName& entry(ConvertType type) {
    for (const auto& t : kTypes)
        if (t.type == type) return t;
    fail(INLAY_ERR_INTERNAL, "unknown conversion type {}", static_cast<int>(type));
}

// llama.cpp's use_more_bits(): the layers Q4_K_M gives Q6_K attn_v / ffn_down.
bool use_more_bits(int64_t layer, int64_t n_layers) {
    return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

// The block index of "blk.N.*", or -1.
int64_t layer_of(const std::string& name) {
    if (!name.starts_with("blk.")) return -1;
    int64_t layer = -1;
    const char* begin = name.data() + 4;
    const auto [end, ec] = std::from_chars(begin, name.data() + name.size(), layer);
    return ec == std::errc() && end != begin ? layer : -1;
}

bool fits(DType type, int64_t row_length) {
    return row_length % dtype_traits(type).block_elems == 0;
}

}  // namespace

std::optional<ConvertType> convert_type_from_name(std::string_view name) {
    for (const auto& t : kTypes)
        if (t.name == name) return t.type;
    return std::nullopt;
}

std::string_view convert_type_name(ConvertType type) {
    return entry(type).name;
}
uint32_t convert_file_type(ConvertType type) {
    return entry(type).file_type;
}

DType convert_tensor_type(ConvertType type, const std::string& name, int n_dims, int64_t row_length, int64_t layer,
                          int64_t n_layers, bool tied_output, std::string* why) {
    if (why) why->clear();
    if (n_dims < 2 || name == "rope_freqs.weight") return DType::F32;
    const DType requested = entry(type).dtype;
    DType t = requested;
    std::string reason;
    const bool output = name == "output.weight" || (tied_output && name == "token_embd.weight");
    if ((type == ConvertType::q4_k || type == ConvertType::q1_0) && output) {
        t = DType::Q6_K;
        reason = "the output projection gets Q6_K (as llama-quantize)";
    } else if (type == ConvertType::q4_k && layer >= 0 &&
               (name.ends_with(".attn_v.weight") || name.ends_with(".ffn_down.weight")) &&
               use_more_bits(layer, n_layers)) {
        t = DType::Q6_K;
        reason = "Q4_K_M gives this layer's attn_v/ffn_down Q6_K (as llama-quantize)";
    }
    // Fallbacks for rows that do not fill whole blocks.
    while (!fits(t, row_length)) {
        const DType from = t;
        t = (t == DType::Q4_K || t == DType::Q6_K || t == DType::Q1_0) ? DType::Q8_0 : DType::F16;
        reason = fmt::format("rows of {} are not a multiple of the {} block ({}): {} instead", row_length,
                             dtype_name(from), dtype_traits(from).block_elems, dtype_name(t));
    }
    if (why && t != requested) *why = reason;
    return t;
}

ConvertReport convert_hf_folder(const std::string& folder, const std::string& out_path, const ConvertOptions& options) {
    auto src = HfModelSource::open(folder, HfSourceOptions{.permute_qk = true});
    const HfConfig& c = src->config();
    ConvertReport report;
    report.architecture = c.model_type;

    GgufWriter w;
    // Architecture and name first, then file type, as llama.cpp's converter orders them.
    const Metadata& md = src->metadata();
    w.add_metadata("general.architecture", *md.find("general.architecture"));
    w.add_metadata("general.name",
                   options.name.empty() ? *md.find("general.name") : MetadataValue::from_string(options.name));
    w.add_metadata("general.file_type", MetadataValue::from_int(ValueType::U32, convert_file_type(options.type)));
    const bool quantized =
        options.type != ConvertType::f32 && options.type != ConvertType::f16 && options.type != ConvertType::bf16;
    if (quantized) w.add_metadata("general.quantization_version", MetadataValue::from_int(ValueType::U32, 2));
    for (const auto& [key, value] : md.entries())
        if (!key.starts_with("general.")) w.add_metadata(key, value);
    const Metadata tokenizer = gguf_tokenizer_metadata_from_folder(folder, c);
    for (const auto& [key, value] : tokenizer.entries()) w.add_metadata(key, value);

    std::vector<float> row_f32;
    std::vector<std::byte> out;
    for (const TensorView& t : src->tensors()) {
        std::string why;
        const DType type = convert_tensor_type(options.type, t.name, t.n_dims, t.row_length(), layer_of(t.name),
                                               c.num_hidden_layers, c.tie_word_embeddings, &why);
        const size_t out_row = *row_bytes(type, t.row_length());
        const auto n_rows = static_cast<size_t>(t.n_rows());
        out.resize(out_row * n_rows);
        row_f32.resize(static_cast<size_t>(t.row_length()));
        for (size_t r = 0; r < n_rows; ++r) {
            quant::dequantize_row(t.type, t.data + r * t.row_stride(), row_f32.data(), t.row_length());
            quant::quantize_row(type, row_f32.data(), out.data() + r * out_row, t.row_length());
        }
        w.add_tensor(t.name, type, std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims), out);
        report.tensors.push_back({t.name, type, why});
        report.n_params += t.n_elements();
    }
    w.write_file(out_path);
    report.file_bytes = w.file_size();
    return report;
}

}  // namespace inlay
