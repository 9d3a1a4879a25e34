#include "io/safetensors_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <numeric>

#include "core/error.h"
#include "io/atomic_file.h"
#include "io/safetensors_json.h"

namespace inlay {

void SafetensorsWriter::add_metadata(const std::string& key, std::string value) {
    for (auto& [k, v] : metadata_) {
        if (k == key) {
            v = std::move(value);
            return;
        }
    }
    metadata_.emplace_back(key, std::move(value));
}

void SafetensorsWriter::add_tensor(std::string name, StDType dtype, std::vector<int64_t> shape,
                                   std::span<const std::byte> data) {
    if (name.empty() || name == "__metadata__")
        fail(INLAY_ERR_INVALID_ARGUMENT, "safetensors tensor name \"{}\" is not allowed", name);
    for (const auto& t : tensors_)
        if (t.name == name) fail(INLAY_ERR_INVALID_ARGUMENT, "safetensors tensor '{}' added twice", name);
    uint64_t n = 1;
    for (const int64_t d : shape) {
        if (d < 0) fail(INLAY_ERR_INVALID_ARGUMENT, "safetensors tensor '{}': negative dim {}", name, d);
        if (d != 0 && n > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d))
            fail(INLAY_ERR_INVALID_ARGUMENT, "safetensors tensor '{}': element count overflows", name);
        n *= static_cast<uint64_t>(d);
    }
    if (n > data.size() || n * st_dtype_size(dtype) != data.size())
        fail(INLAY_ERR_INVALID_ARGUMENT, "safetensors tensor '{}': {} bytes of data for {} {} elements", name,
             data.size(), n, st_dtype_name(dtype));
    tensors_.push_back({std::move(name), dtype, std::move(shape), {data.begin(), data.end()}});
}

std::vector<std::byte> SafetensorsWriter::file_bytes(const std::vector<size_t>& which) const {
    // Data placement: by descending element size, so every tensor stays aligned.
    std::vector<size_t> placed = which;
    std::stable_sort(placed.begin(), placed.end(), [&](size_t a, size_t b) {
        return st_dtype_size(tensors_[a].dtype) > st_dtype_size(tensors_[b].dtype);
    });
    std::vector<uint64_t> offset(tensors_.size(), 0);
    uint64_t pos = 0;
    for (const size_t i : placed) {
        offset[i] = pos;
        pos += tensors_[i].data.size();
    }
    Json header = Json::object();
    if (!metadata_.empty()) {
        Json md = Json::object();
        for (const auto& [k, v] : metadata_) md[k] = v;
        header["__metadata__"] = std::move(md);
    }
    for (const size_t i : which) {
        const Tensor& t = tensors_[i];
        header[t.name] = {{"dtype", st_dtype_name(t.dtype)},
                          {"shape", t.shape},
                          {"data_offsets", {offset[i], offset[i] + t.data.size()}}};
    }
    std::string text = header.dump();
    text.resize((text.size() + 7) / 8 * 8, ' ');
    std::vector<std::byte> out(8 + text.size() + pos);
    const uint64_t n = text.size();
    std::memcpy(out.data(), &n, 8);
    std::memcpy(out.data() + 8, text.data(), text.size());
    for (const size_t i : which) {
        if (!tensors_[i].data.empty())
            std::memcpy(out.data() + 8 + text.size() + offset[i], tensors_[i].data.data(), tensors_[i].data.size());
    }
    return out;
}

std::vector<std::byte> SafetensorsWriter::to_bytes() const {
    std::vector<size_t> all(tensors_.size());
    std::iota(all.begin(), all.end(), size_t{0});
    return file_bytes(all);
}

void SafetensorsWriter::write_file(const std::string& path) const {
    write_file_atomically(path, to_bytes());
}

std::vector<std::string> SafetensorsWriter::write_sharded(const std::string& folder, uint64_t max_shard_bytes) const {
    std::vector<std::vector<size_t>> shards;
    uint64_t in_shard = 0;
    for (size_t i = 0; i < tensors_.size(); ++i) {
        const uint64_t size = tensors_[i].data.size();
        if (shards.empty() || (in_shard > 0 && in_shard + size > max_shard_bytes)) {
            shards.emplace_back();
            in_shard = 0;
        }
        shards.back().push_back(i);
        in_shard += size;
    }
    if (shards.empty()) shards.emplace_back();
    std::vector<std::string> names;
    Json weight_map = Json::object();
    uint64_t total = 0;
    for (size_t s = 0; s < shards.size(); ++s) {
        names.push_back(fmt::format("model-{:05}-of-{:05}.safetensors", s + 1, shards.size()));
        write_file_atomically((std::filesystem::path(folder) / names.back()).string(), file_bytes(shards[s]));
        for (const size_t i : shards[s]) {
            weight_map[tensors_[i].name] = names.back();
            total += tensors_[i].data.size();
        }
    }
    const Json index = {{"metadata", {{"total_size", total}}}, {"weight_map", std::move(weight_map)}};
    const std::string text = index.dump(2) + "\n";
    write_file_atomically((std::filesystem::path(folder) / "model.safetensors.index.json").string(),
                          std::as_bytes(std::span(text)));
    return names;
}

}  // namespace inlay
