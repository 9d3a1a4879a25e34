// GgufWriter: builds a GGUF (version 2 or 3) file from metadata and tensors.
//
// Keys and tensors are written in the order they were added; each tensor's data starts
// at the next multiple of the alignment (zero padding), so re-writing a file read by
// GgufFile in its own order reproduces it byte for byte when it was laid out that way
// (as llama.cpp lays out its files).
//
// general.alignment: the constructor's alignment governs the layout. copy_metadata()
// skips that key; add_metadata() accepts it only as a u32 equal to the alignment (it is
// then written where it was added). Otherwise it is appended after the other keys when
// the alignment is not the default 32.
//
// Every argument is checked when it is added (so to_bytes() cannot fail on content):
// bad values throw inlay::Error(INLAY_ERR_INVALID_ARGUMENT) naming the key or tensor.
// Not thread-safe; the writer owns copies of everything added.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "io/metadata.h"

namespace inlay {

class GgufWriter {
public:
    // version: 2 or 3; alignment: a power of two (bytes).
    explicit GgufWriter(uint32_t version = 3, uint32_t alignment = 32);

    // Keeps insertion order. Empty or duplicate key, a value that does not fit its
    // declared type (e.g. 300 as U8, a nested array): INLAY_ERR_INVALID_ARGUMENT.
    void add_metadata(std::string key, MetadataValue value);
    // Adds every entry of `md` in order, except general.alignment.
    void copy_metadata(const Metadata& md);
    // Copies `data`, which must hold exactly the bytes of a tensor of `type` and dims
    // `ne` (ggml order, 1..4 dims, each >= 0, ne[0] a multiple of the block size).
    void add_tensor(std::string name, DType type, std::vector<int64_t> ne, std::span<const std::byte> data);

    [[nodiscard]] uint32_t version() const { return version_; }
    [[nodiscard]] uint32_t alignment() const { return alignment_; }
    [[nodiscard]] size_t tensor_count() const { return tensors_.size(); }
    // Size of the file to_bytes() / write_file() produce.
    [[nodiscard]] uint64_t file_size() const;

    [[nodiscard]] std::vector<std::byte> to_bytes() const;
    // Writes to a temporary file beside `path`, then renames it over `path`, so a
    // reader never sees a half-written file. INLAY_ERR_IO on failure (nothing is left
    // behind).
    void write_file(const std::string& path) const;

private:
    struct Tensor {
        std::string name;
        DType type;
        std::vector<int64_t> ne;
        std::vector<std::byte> data;
    };

    [[nodiscard]] std::vector<std::byte> header_bytes() const;

    uint32_t version_;
    uint32_t alignment_;
    bool alignment_key_added_ = false;
    Metadata metadata_;
    std::vector<Tensor> tensors_;
};

}  // namespace inlay
