// GgufFile: a validated, zero-copy view of a GGUF (version 2 or 3) file.
//
// Everything in the file is untrusted. open()/from_bytes() check every count, length,
// type id, shape and offset before use and throw inlay::Error naming the file and the
// key or tensor (with its index) at fault:
//   INLAY_ERR_BAD_FORMAT   malformed content (magic, value type, bool byte, empty or
//                          duplicate key/tensor name, nested array, n_dims outside 1..4,
//                          negative dim, element or byte count overflow, ne[0] not a
//                          multiple of the block size, misaligned or overlapping tensor
//                          data, general.alignment not a u32 power of two, u64 array
//                          element above INT64_MAX)
//   INLAY_ERR_TRUNCATED    the file ends before something it declares (header field,
//                          string, array, the tensor data)
//   INLAY_ERR_UNSUPPORTED  a version other than 2/3, a ggml tensor type inlay lacks
//   INLAY_ERR_IO           the file cannot be opened or mapped
// Decisions beyond llama.cpp's reader:
//   - dims of 0 are accepted (as llama.cpp does); such a tensor has 0 bytes.
//   - tensors may appear in any order in the data section, but must not overlap.
//   - a u64 scalar is kept as uint64_t whatever its value; u64 array elements must fit
//     int64_t (MetadataArray stores int64_t).
//   - files without tensors (vocabulary-only) may end right after the KV section.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "core/mapped_file.h"
#include "io/weight_source.h"

namespace inlay {

class GgufFile final : public WeightSource {
public:
    // Memory-maps and validates the file at `path`. Tensor views point into the mapping.
    static std::unique_ptr<GgufFile> open(const std::string& path);
    // Validates `bytes`, which it keeps (tests, fuzzers, in-memory models). `origin`
    // names the bytes in messages. Tensor data keeps only the alignment of the vector's
    // allocation (16 bytes on x86-64), unlike a mapping (page-aligned).
    static std::unique_ptr<GgufFile> from_bytes(std::vector<std::byte> bytes, std::string origin);

    GgufFile(const GgufFile&) = delete;
    GgufFile& operator=(const GgufFile&) = delete;
    ~GgufFile() override = default;

    [[nodiscard]] uint32_t version() const { return version_; }  // 2 or 3
    // general.alignment, or 32 when the key is absent.
    [[nodiscard]] uint64_t alignment() const { return alignment_; }
    // Absolute offset of the tensor data section. For a file without tensors: the
    // aligned end of the header, clamped to the file size.
    [[nodiscard]] uint64_t data_offset() const { return data_offset_; }
    // The whole file (valid as long as this object lives).
    [[nodiscard]] std::span<const std::byte> bytes() const { return bytes_; }
    // Offset of tensor `index` (file order) relative to data_offset(), as stored.
    [[nodiscard]] uint64_t tensor_offset(size_t index) const { return offsets_.at(index); }

    // WeightSource. Safe to call from several threads at once (read-only).
    [[nodiscard]] const Metadata& metadata() const override { return metadata_; }
    [[nodiscard]] const std::vector<TensorView>& tensors() const override { return tensors_; }
    [[nodiscard]] const std::string& origin() const override { return origin_; }
    [[nodiscard]] uint64_t file_bytes() const override { return bytes_.size(); }

private:
    GgufFile() = default;
    void parse();

    std::variant<std::monostate, MappedFile, std::vector<std::byte>> storage_;
    std::span<const std::byte> bytes_;
    std::string origin_;
    uint32_t version_ = 0;
    uint64_t alignment_ = 32;
    uint64_t data_offset_ = 0;
    Metadata metadata_;
    std::vector<TensorView> tensors_;
    std::vector<uint64_t> offsets_;
};

}  // namespace inlay
