#include "io/safetensors_reader.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <filesystem>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "core/error.h"
#include "io/safetensors_json.h"

namespace inlay {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors is little-endian; big-endian hosts are unsupported");

// The format's own limit on the header (safetensors' MAX_HEADER_SIZE).
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
// A header is {name: {dtype, shape: [...], data_offsets: [...]}, __metadata__: {...}}.
constexpr int kMaxHeaderDepth = 3;
constexpr int kMaxIndexDepth = 3;
constexpr std::string_view kIndexName = "model.safetensors.index.json";
constexpr std::string_view kSingleName = "model.safetensors";

struct DTypeInfo {
    StDType type;
    std::string_view name;
    size_t size;
};

constexpr std::array<DTypeInfo, 15> kDTypes{{
    {StDType::BOOL, "BOOL", 1},
    {StDType::U8, "U8", 1},
    {StDType::I8, "I8", 1},
    {StDType::F8_E5M2, "F8_E5M2", 1},
    {StDType::F8_E4M3, "F8_E4M3", 1},
    {StDType::I16, "I16", 2},
    {StDType::U16, "U16", 2},
    {StDType::F16, "F16", 2},
    {StDType::BF16, "BF16", 2},
    {StDType::I32, "I32", 4},
    {StDType::U32, "U32", 4},
    {StDType::F32, "F32", 4},
    {StDType::F64, "F64", 8},
    {StDType::I64, "I64", 8},
    {StDType::U64, "U64", 8},
}};

const DTypeInfo& info(StDType type) {
    for (const auto& d : kDTypes)
        if (d.type == type) return d;
    fail(INLAY_ERR_INTERNAL, "unknown safetensors dtype {}", static_cast<int>(type));
}

[[noreturn]] void tensor_error(const std::string& origin, const std::string& name, const std::string& message) {
    fail(INLAY_ERR_BAD_FORMAT, "'{}': tensor '{}': {}", origin, name, message);
}

std::string read_text_file(const std::filesystem::path& path) {
    MappedFile f(path.string());
    return {reinterpret_cast<const char*>(f.data()), f.size()};
}

}  // namespace

std::string_view st_dtype_name(StDType type) {
    return info(type).name;
}

std::optional<StDType> st_dtype_from_name(std::string_view name) {
    for (const auto& d : kDTypes)
        if (d.name == name) return d.type;
    return std::nullopt;
}

size_t st_dtype_size(StDType type) {
    return info(type).size;
}

std::optional<DType> st_dtype_to_dtype(StDType type) {
    switch (type) {
        case StDType::F32:
            return DType::F32;
        case StDType::F16:
            return DType::F16;
        case StDType::BF16:
            return DType::BF16;
        default:
            return std::nullopt;
    }
}

std::optional<StDType> st_dtype_from_dtype(DType type) {
    switch (type) {
        case DType::F32:
            return StDType::F32;
        case DType::F16:
            return StDType::F16;
        case DType::BF16:
            return StDType::BF16;
        default:
            return std::nullopt;
    }
}

int64_t StTensor::n_elements() const {
    int64_t n = 1;
    for (const int64_t d : shape) n *= d;
    return n;
}

// ---- SafetensorsFile ------------------------------------------------------------------

std::unique_ptr<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
    std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
    f->origin_ = path;
    auto& mapped = f->storage_.emplace<MappedFile>(path);
    f->bytes_ = mapped.bytes();
    f->parse();
    return f;
}

std::unique_ptr<SafetensorsFile> SafetensorsFile::from_bytes(std::vector<std::byte> bytes, std::string origin) {
    std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
    f->origin_ = std::move(origin);
    auto& owned = f->storage_.emplace<std::vector<std::byte>>(std::move(bytes));
    f->bytes_ = owned;
    f->parse();
    return f;
}

const StTensor* SafetensorsFile::find(std::string_view name) const {
    for (const auto& t : tensors_)
        if (t.name == name) return &t;
    return nullptr;
}

void SafetensorsFile::parse() {
    const auto size = static_cast<uint64_t>(bytes_.size());
    if (size < 8)
        fail(INLAY_ERR_TRUNCATED, "'{}': file of {} bytes ends inside the 8-byte header length", origin_, size);
    std::memcpy(&header_size_, bytes_.data(), 8);
    if (header_size_ > kMaxHeaderBytes)
        fail(INLAY_ERR_BAD_FORMAT, "'{}': header length {} exceeds the format's limit of {} bytes", origin_,
             header_size_, kMaxHeaderBytes);
    if (header_size_ > size - 8)
        fail(INLAY_ERR_TRUNCATED, "'{}': header of {} bytes runs past the end of the file ({} bytes)", origin_,
             header_size_, size);
    std::string_view text(reinterpret_cast<const char*>(bytes_.data() + 8), static_cast<size_t>(header_size_));
    if (text.empty() || text.front() != '{')
        fail(INLAY_ERR_BAD_FORMAT, "'{}': header does not start with '{{' (not a safetensors file)", origin_);
    while (!text.empty() && text.back() == ' ') text.remove_suffix(1);  // the format pads with spaces
    const Json header = parse_untrusted_json(text, origin_, kMaxHeaderDepth);
    if (!header.is_object()) fail(INLAY_ERR_BAD_FORMAT, "'{}': header is not a JSON object", origin_);

    const uint64_t data_size = size - 8 - header_size_;
    const std::byte* data = bytes_.data() + 8 + header_size_;
    for (const auto& [name, entry] : header.items()) {
        if (name == "__metadata__") {
            if (!entry.is_object())
                fail(INLAY_ERR_BAD_FORMAT, "'{}': __metadata__ is a {}, not an object of strings", origin_,
                     json_type_name(entry));
            for (const auto& [key, value] : entry.items()) {
                if (!value.is_string())
                    fail(INLAY_ERR_BAD_FORMAT, "'{}': __metadata__ \"{}\" is a {}, not a string", origin_, key,
                         json_type_name(value));
                metadata_.emplace_back(key, value.get<std::string>());
            }
            continue;
        }
        if (name.empty()) fail(INLAY_ERR_BAD_FORMAT, "'{}': empty tensor name", origin_);
        if (!entry.is_object())
            tensor_error(origin_, name, fmt::format("entry is a {}, not an object", json_type_name(entry)));
        StTensor t;
        t.name = name;

        const auto dtype_it = entry.find("dtype");
        if (dtype_it == entry.end()) tensor_error(origin_, name, "no \"dtype\"");
        if (!dtype_it->is_string())
            tensor_error(origin_, name, fmt::format("\"dtype\" is a {}, not a string", json_type_name(*dtype_it)));
        const auto& dtype_name = dtype_it->get_ref<const std::string&>();
        const auto dtype = st_dtype_from_name(dtype_name);
        if (!dtype)
            fail(INLAY_ERR_UNSUPPORTED, "'{}': tensor '{}': dtype \"{}\" is not supported", origin_, name,
                 dtype_name.substr(0, 32));
        t.dtype = *dtype;

        const auto shape_it = entry.find("shape");
        if (shape_it == entry.end()) tensor_error(origin_, name, "no \"shape\"");
        if (!shape_it->is_array())
            tensor_error(origin_, name, fmt::format("\"shape\" is a {}, not an array", json_type_name(*shape_it)));
        for (const auto& d : *shape_it) {
            const auto dim = json_int(d);
            if (!dim || *dim < 0)
                tensor_error(origin_, name, fmt::format("shape entry {} is not a non-negative integer", d.dump()));
            t.shape.push_back(*dim);
        }
        // Element count, checked for overflow (a zero dim makes any product empty).
        const uint64_t elem = st_dtype_size(t.dtype);
        uint64_t n = std::find(t.shape.begin(), t.shape.end(), 0) != t.shape.end() ? 0 : 1;
        for (const int64_t d : t.shape) {
            if (n == 0) break;
            const auto u = static_cast<uint64_t>(d);
            if (n > std::numeric_limits<uint64_t>::max() / elem / u)
                tensor_error(
                    origin_, name,
                    fmt::format("shape [{}] of {} overflows the byte count", fmt::join(t.shape, ", "), dtype_name));
            n *= u;
        }

        const auto offsets_it = entry.find("data_offsets");
        if (offsets_it == entry.end()) tensor_error(origin_, name, "no \"data_offsets\"");
        if (!offsets_it->is_array() || offsets_it->size() != 2)
            tensor_error(origin_, name, "\"data_offsets\" is not an array of two integers");
        const auto begin = json_int((*offsets_it)[0]);
        const auto end = json_int((*offsets_it)[1]);
        if (!begin || !end || *begin < 0 || *end < 0)
            tensor_error(origin_, name, "\"data_offsets\" are not non-negative integers");
        if (*end < *begin)
            tensor_error(origin_, name, fmt::format("data_offsets [{}, {}] end before they begin", *begin, *end));
        const auto ub = static_cast<uint64_t>(*begin), ue = static_cast<uint64_t>(*end);
        if (ue - ub != n * elem)
            tensor_error(origin_, name,
                         fmt::format("data_offsets [{}, {}] hold {} bytes, but shape [{}] of {} needs {}", ub, ue,
                                     ue - ub, fmt::join(t.shape, ", "), dtype_name, n * elem));
        if (ue > data_size)
            fail(INLAY_ERR_TRUNCATED,
                 "'{}': tensor '{}': data_offsets [{}, {}] run past the end of the data ({} bytes)", origin_, name, ub,
                 ue, data_size);
        t.offset = ub;
        t.data = {data + ub, static_cast<size_t>(ue - ub)};
        tensors_.push_back(std::move(t));
    }

    // The data section must be exactly the tensors, back to back (as safetensors' own
    // validation requires): no overlaps, no gaps, no trailing bytes.
    std::stable_sort(tensors_.begin(), tensors_.end(), [](const StTensor& a, const StTensor& b) {
        return a.offset != b.offset ? a.offset < b.offset : a.data.size() < b.data.size();
    });
    uint64_t expected = 0;
    const StTensor* previous = nullptr;
    for (const auto& t : tensors_) {
        if (t.offset < expected)
            fail(INLAY_ERR_BAD_FORMAT, "'{}': tensor '{}' (data [{}, {})) overlaps tensor '{}' (data [{}, {}))",
                 origin_, t.name, t.offset, t.offset + t.data.size(), previous->name, previous->offset,
                 previous->offset + previous->data.size());
        if (t.offset > expected)
            fail(INLAY_ERR_BAD_FORMAT, "'{}': {} unused bytes in the data section before tensor '{}' (offset {})",
                 origin_, t.offset - expected, t.name, t.offset);
        expected = t.offset + t.data.size();
        previous = &t;
    }
    if (expected != data_size)
        fail(INLAY_ERR_BAD_FORMAT, "'{}': {} bytes after the last tensor's data (the data section ends at {})", origin_,
             data_size - expected, expected);
}

// ---- SafetensorsSource ----------------------------------------------------------------

std::unique_ptr<SafetensorsSource> SafetensorsSource::from_files(std::vector<std::unique_ptr<SafetensorsFile>> files,
                                                                 std::string origin) {
    std::unique_ptr<SafetensorsSource> s(new SafetensorsSource());
    s->origin_ = std::move(origin);
    s->build(std::move(files));
    return s;
}

std::unique_ptr<SafetensorsSource> SafetensorsSource::open(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path p(path);
    if (fs::is_directory(p, ec)) {
        if (fs::exists(p / kIndexName, ec))
            p /= kIndexName;
        else if (fs::exists(p / kSingleName, ec))
            p /= kSingleName;
        else
            fail(INLAY_ERR_MISSING, "'{}' holds neither {} nor {}", path, kIndexName, kSingleName);
    }
    if (p.filename().string().ends_with(".json")) {
        // A sharded checkpoint: the index names the file of every tensor.
        const std::string index_origin = p.string();
        const Json index = parse_untrusted_json(read_text_file(p), index_origin, kMaxIndexDepth);
        if (!index.is_object()) fail(INLAY_ERR_BAD_FORMAT, "'{}': not a JSON object", index_origin);
        const auto map_it = index.find("weight_map");
        if (map_it == index.end()) fail(INLAY_ERR_BAD_FORMAT, "'{}': no \"weight_map\"", index_origin);
        if (!map_it->is_object())
            fail(INLAY_ERR_BAD_FORMAT, "'{}': \"weight_map\" is a {}, not an object", index_origin,
                 json_type_name(*map_it));
        std::vector<std::string> shard_names;                   // first-use order
        std::unordered_map<std::string, std::string> shard_of;  // tensor -> shard
        for (const auto& [tensor, shard] : map_it->items()) {
            if (!shard.is_string())
                fail(INLAY_ERR_BAD_FORMAT, "'{}': weight_map entry '{}' is a {}, not a file name", index_origin, tensor,
                     json_type_name(shard));
            const auto& name = shard.get_ref<const std::string&>();
            if (name.empty() || name == "." || name == ".." || name.find_first_of("/\\") != std::string::npos ||
                name.find('\0') != std::string::npos)
                fail(INLAY_ERR_BAD_FORMAT, "'{}': weight_map entry '{}': \"{}\" is not a file name in the same folder",
                     index_origin, tensor, name.substr(0, 64));
            if (std::find(shard_names.begin(), shard_names.end(), name) == shard_names.end())
                shard_names.push_back(name);
            shard_of.emplace(tensor, name);
        }
        std::vector<std::unique_ptr<SafetensorsFile>> files;
        for (const auto& name : shard_names) {
            const fs::path shard_path = p.parent_path() / name;
            if (!fs::exists(shard_path, ec))
                fail(INLAY_ERR_IO, "'{}': shard '{}' listed in the index does not exist", index_origin, name);
            files.push_back(SafetensorsFile::open(shard_path.string()));
            for (const auto& t : files.back()->tensors()) {
                const auto it = shard_of.find(t.name);
                if (it == shard_of.end() || it->second != name)
                    fail(INLAY_ERR_BAD_FORMAT, "'{}': tensor '{}' is in shard '{}' but the index {}", index_origin,
                         t.name, name,
                         it == shard_of.end() ? "does not list it" : "assigns it to '" + it->second + "'");
            }
        }
        for (const auto& [tensor, shard] : shard_of) {
            const auto it = std::find(shard_names.begin(), shard_names.end(), shard);
            if (!files[static_cast<size_t>(it - shard_names.begin())]->find(tensor))
                fail(INLAY_ERR_MISSING, "'{}': tensor '{}' is not in shard '{}' as the index says", index_origin,
                     tensor, shard);
        }
        std::unique_ptr<SafetensorsSource> s(new SafetensorsSource());
        s->origin_ = p.parent_path().string();
        s->build(std::move(files));
        return s;
    }
    std::vector<std::unique_ptr<SafetensorsFile>> files;
    files.push_back(SafetensorsFile::open(p.string()));
    std::unique_ptr<SafetensorsSource> s(new SafetensorsSource());
    s->origin_ = p.string();
    s->build(std::move(files));
    return s;
}

void SafetensorsSource::build(std::vector<std::unique_ptr<SafetensorsFile>> files) {
    files_ = std::move(files);
    std::unordered_set<std::string_view> names;
    for (const auto& f : files_) {
        for (const auto& [key, value] : f->metadata()) metadata_.add(key, MetadataValue::from_string(value));
        for (const auto& t : f->tensors()) {
            if (!names.insert(t.name).second)
                fail(INLAY_ERR_BAD_FORMAT, "'{}': tensor '{}' appears in more than one file", origin_, t.name);
            entries_.push_back(&t);
            const auto type = st_dtype_to_dtype(t.dtype);
            if (!type || t.shape.empty() || t.shape.size() > 4) continue;
            TensorView v;
            v.name = t.name;
            v.type = *type;
            v.n_dims = static_cast<int>(t.shape.size());
            for (size_t i = 0; i < t.shape.size(); ++i) v.ne[i] = t.shape[t.shape.size() - 1 - i];
            v.nbytes = t.data.size();
            v.data = t.data.data();
            const size_t elem = st_dtype_size(t.dtype);
            if (reinterpret_cast<uintptr_t>(v.data) % elem != 0) {
                // Kernels read elements through typed pointers: give them an aligned copy.
                owned_.push_back(std::make_unique<std::byte[]>(v.nbytes));
                std::memcpy(owned_.back().get(), v.data, v.nbytes);
                v.data = owned_.back().get();
            }
            views_.push_back(std::move(v));
        }
    }
    build_index();
}

uint64_t SafetensorsSource::file_bytes() const {
    uint64_t total = 0;
    for (const auto& f : files_) total += f->bytes().size();
    return total;
}

const StTensor* SafetensorsSource::find_entry(std::string_view name) const {
    for (const StTensor* t : entries_)
        if (t->name == name) return t;
    return nullptr;
}

}  // namespace inlay
