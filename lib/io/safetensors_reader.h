// safetensors: validated, zero-copy views of Hugging Face weight files.
//
//   u64 N (little-endian) | N bytes of JSON header | data section
//
// SafetensorsFile is one file; SafetensorsSource is a model's weights as one
// WeightSource: a single file or the shards listed by model.safetensors.index.json.
//
// Everything in a file is untrusted. Every check names the file and the tensor at fault:
//   INLAY_ERR_TRUNCATED    the file is shorter than 8 bytes, than its declared header, or
//                          than a tensor's data_offsets
//   INLAY_ERR_BAD_FORMAT   header over 100,000,000 bytes (the format's limit), not a JSON
//                          object, nested deeper than the format allows, duplicate or empty
//                          tensor name, missing or mistyped dtype/shape/data_offsets,
//                          negative or non-integer dims, element or byte count overflow,
//                          data_offsets whose length differs from shape x dtype size,
//                          overlapping tensors, gaps or trailing bytes in the data section
//                          (as the reference implementation), __metadata__ that is not an
//                          object of strings; a bad index (see SafetensorsSource)
//   INLAY_ERR_UNSUPPORTED  a dtype name the format does not define (a newer format)
//   INLAY_ERR_IO           a file cannot be opened or mapped
// Tensors are kept in data order (ascending offsets).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "core/dtype.h"
#include "core/mapped_file.h"
#include "io/weight_source.h"

namespace inlay {

// The element types the safetensors format defines.
enum class StDType : uint8_t { BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64 };

std::string_view st_dtype_name(StDType type);  // "F32", "BF16", ...
std::optional<StDType> st_dtype_from_name(std::string_view name);
size_t st_dtype_size(StDType type);  // bytes per element
// The inlay element type of a float dtype (F32, F16, BF16); nullopt for the others.
std::optional<DType> st_dtype_to_dtype(StDType type);
// The safetensors dtype of F32, F16 or BF16; nullopt for block types.
std::optional<StDType> st_dtype_from_dtype(DType type);

struct StTensor {
    std::string name;
    StDType dtype = StDType::F32;
    std::vector<int64_t> shape;       // row-major: shape[0] is the outermost dimension
    std::span<const std::byte> data;  // into the file; may be unaligned
    uint64_t offset = 0;              // data_offsets[0], relative to the data section

    [[nodiscard]] int64_t n_elements() const;
};

class SafetensorsFile {
public:
    // Memory-maps and validates `path`.
    static std::unique_ptr<SafetensorsFile> open(const std::string& path);
    // Validates `bytes`, which it keeps; `origin` names them in messages.
    static std::unique_ptr<SafetensorsFile> from_bytes(std::vector<std::byte> bytes, std::string origin);

    SafetensorsFile(const SafetensorsFile&) = delete;
    SafetensorsFile& operator=(const SafetensorsFile&) = delete;
    ~SafetensorsFile() = default;

    // Read-only after construction: safe to use from several threads.
    [[nodiscard]] const std::vector<StTensor>& tensors() const { return tensors_; }
    [[nodiscard]] const StTensor* find(std::string_view name) const;
    // __metadata__, sorted by key (a JSON object has no order).
    [[nodiscard]] const std::vector<std::pair<std::string, std::string>>& metadata() const { return metadata_; }
    [[nodiscard]] const std::string& origin() const { return origin_; }
    [[nodiscard]] std::span<const std::byte> bytes() const { return bytes_; }
    [[nodiscard]] uint64_t header_size() const { return header_size_; }  // N
    [[nodiscard]] uint64_t data_offset() const { return 8 + header_size_; }

private:
    SafetensorsFile() = default;
    void parse();

    std::variant<std::monostate, MappedFile, std::vector<std::byte>> storage_;
    std::span<const std::byte> bytes_;
    std::string origin_;
    uint64_t header_size_ = 0;
    std::vector<StTensor> tensors_;
    std::vector<std::pair<std::string, std::string>> metadata_;
};

// A model's weights in safetensors as one WeightSource.
//
// tensors() holds a TensorView (ggml dimension order, i.e. the shape reversed) for every
// F32/F16/BF16 tensor of 1 to 4 dims, named as in the file. Other tensors (integer or
// 8-bit float dtypes, scalars, more than 4 dims) appear only in entries(), so a caller
// can say why a tensor it needs is unusable. Views point into the mappings (zero-copy)
// unless a tensor's data is not aligned to its element size; such a tensor is copied
// once into an aligned buffer (copied_tensors() counts them).
//
// metadata(): every file's __metadata__ as strings (first occurrence wins).
//
// Sharded folders: model.safetensors.index.json must be an object whose "weight_map"
// maps tensor names to shard file names. A shard name must be a plain file name in the
// same folder (no '/', '\\', "." or ".."): INLAY_ERR_BAD_FORMAT otherwise. Each listed
// tensor must be in its shard (INLAY_ERR_MISSING), and a shard may not hold a tensor the
// map does not assign to it (INLAY_ERR_BAD_FORMAT), so no tensor can come from two files.
class SafetensorsSource final : public WeightSource {
public:
    // `path`: a .safetensors file, a model.safetensors.index.json, or a folder holding
    // model.safetensors.index.json (preferred) or model.safetensors
    // (INLAY_ERR_MISSING when it holds neither).
    static std::unique_ptr<SafetensorsSource> open(const std::string& path);
    // From validated files (tests, in-memory models); tensor names must be unique across
    // them (INLAY_ERR_BAD_FORMAT).
    static std::unique_ptr<SafetensorsSource> from_files(std::vector<std::unique_ptr<SafetensorsFile>> files,
                                                         std::string origin);

    [[nodiscard]] const Metadata& metadata() const override { return metadata_; }
    [[nodiscard]] const std::vector<TensorView>& tensors() const override { return views_; }
    [[nodiscard]] const std::string& origin() const override { return origin_; }
    [[nodiscard]] uint64_t file_bytes() const override;

    // Every tensor of every file (any dtype), in file then data order.
    [[nodiscard]] const std::vector<const StTensor*>& entries() const { return entries_; }
    [[nodiscard]] const StTensor* find_entry(std::string_view name) const;
    [[nodiscard]] const std::vector<std::unique_ptr<SafetensorsFile>>& files() const { return files_; }
    [[nodiscard]] size_t copied_tensors() const { return owned_.size(); }

private:
    SafetensorsSource() = default;
    void build(std::vector<std::unique_ptr<SafetensorsFile>> files);

    std::string origin_;
    std::vector<std::unique_ptr<SafetensorsFile>> files_;
    std::vector<const StTensor*> entries_;
    std::vector<TensorView> views_;
    std::vector<std::unique_ptr<std::byte[]>> owned_;
    Metadata metadata_;
};

}  // namespace inlay
