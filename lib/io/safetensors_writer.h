// SafetensorsWriter: builds safetensors files, single or sharded with
// model.safetensors.index.json, that SafetensorsFile (and Hugging Face's library) read.
//
// Layout: the header lists tensors in the order they were added; in the data section
// they are placed by descending element size (stable), so with the header padded with
// spaces to a multiple of 8 bytes every tensor is aligned to its element size.
//
// Arguments are checked when added (INLAY_ERR_INVALID_ARGUMENT naming the tensor): empty,
// duplicate or "__metadata__" names, negative dims, data whose size is not shape x dtype
// size. Not thread-safe; the writer owns copies of everything added.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "io/safetensors_reader.h"

namespace inlay {

class SafetensorsWriter {
public:
    // A __metadata__ entry (replaces an earlier one with the same key).
    void add_metadata(const std::string& key, std::string value);
    // shape is row-major (outermost first, as safetensors and torch write it); may be
    // empty (a scalar).
    void add_tensor(std::string name, StDType dtype, std::vector<int64_t> shape, std::span<const std::byte> data);

    [[nodiscard]] size_t tensor_count() const { return tensors_.size(); }
    [[nodiscard]] std::vector<std::byte> to_bytes() const;
    // Writes to a temporary file beside `path`, then renames it over `path`.
    // INLAY_ERR_IO on failure.
    void write_file(const std::string& path) const;
    // Writes the tensors into `folder` as model-0000i-of-0000n.safetensors shards, each
    // holding whole tensors of at most max_shard_bytes data (a larger tensor gets a shard
    // of its own), and model.safetensors.index.json mapping every tensor to its shard.
    // Returns the shard file names in order.
    std::vector<std::string> write_sharded(const std::string& folder, uint64_t max_shard_bytes) const;

private:
    struct Tensor {
        std::string name;
        StDType dtype;
        std::vector<int64_t> shape;
        std::vector<std::byte> data;
    };

    [[nodiscard]] std::vector<std::byte> file_bytes(const std::vector<size_t>& which) const;

    std::vector<std::pair<std::string, std::string>> metadata_;
    std::vector<Tensor> tensors_;
};

}  // namespace inlay
