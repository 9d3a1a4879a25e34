#include "io/gguf_writer.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <system_error>

#include <fmt/ranges.h>

#include "core/error.h"
#include "io/atomic_file.h"

namespace inlay {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" as a little-endian u32
constexpr uint32_t kDefaultAlignment = 32;
constexpr std::string_view kAlignmentKey = "general.alignment";

struct IntRange {
    int64_t lo;
    int64_t hi;
};

IntRange int_range(ValueType type) {
    switch (type) {
        case ValueType::U8: return {0, 255};
        case ValueType::I8: return {-128, 127};
        case ValueType::U16: return {0, 65535};
        case ValueType::I16: return {-32768, 32767};
        case ValueType::U32: return {0, 4294967295LL};
        case ValueType::I32: return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
        case ValueType::BOOL: return {0, 1};
        case ValueType::U64: return {0, std::numeric_limits<int64_t>::max()};
        default: return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
    }
}

bool is_int_like(ValueType type) { return is_integer(type) || type == ValueType::BOOL; }

void check_value(std::string_view key, const MetadataValue& v) {
    const auto bad = [&](std::string_view why) {
        fail(INLAY_ERR_INVALID_ARGUMENT, "GGUF writer: key '{}' ({}): {}", key, value_type_name(v.type), why);
    };
    if (static_cast<uint32_t>(v.type) > static_cast<uint32_t>(ValueType::F64)) bad("unknown value type");
    if (v.type == ValueType::U64 && std::holds_alternative<uint64_t>(v.value)) return;
    if (is_int_like(v.type)) {
        const auto* i = std::get_if<int64_t>(&v.value);
        if (!i) bad("value is not an integer");
        const IntRange r = int_range(v.type);
        if (*i < r.lo || *i > r.hi) bad(fmt::format("{} is out of range", *i));
        return;
    }
    switch (v.type) {
        case ValueType::F32:
        case ValueType::F64:
            if (!std::holds_alternative<double>(v.value)) bad("value is not a float");
            return;
        case ValueType::STRING:
            if (!std::holds_alternative<std::string>(v.value)) bad("value is not a string");
            return;
        case ValueType::ARRAY: break;
        default: bad("unexpected type");
    }
    const auto* a = std::get_if<MetadataArray>(&v.value);
    if (!a) bad("value is not an array");
    if (static_cast<uint32_t>(a->elem_type) > static_cast<uint32_t>(ValueType::F64)) bad("unknown array element type");
    if (a->elem_type == ValueType::ARRAY) bad("nested arrays are not supported");
    if (is_int_like(a->elem_type)) {
        const IntRange r = int_range(a->elem_type);
        for (size_t i = 0; i < a->ints.size(); ++i) {
            if (a->ints[i] < r.lo || a->ints[i] > r.hi) bad(fmt::format("array element {} = {} is out of range", i, a->ints[i]));
        }
    }
}

class Out {
public:
    explicit Out(std::vector<std::byte>& bytes) : bytes_(bytes) {}

    template <class T>
    void put(T value) {
        const size_t at = bytes_.size();
        bytes_.resize(at + sizeof(T));
        std::memcpy(bytes_.data() + at, &value, sizeof(T));
    }
    void put_string(std::string_view s) {
        put<uint64_t>(s.size());
        const auto* p = reinterpret_cast<const std::byte*>(s.data());
        bytes_.insert(bytes_.end(), p, p + s.size());
    }
    void put_int(ValueType type, int64_t v) {
        switch (type) {
            case ValueType::U8: case ValueType::BOOL: put(static_cast<uint8_t>(v)); break;
            case ValueType::I8: put(static_cast<int8_t>(v)); break;
            case ValueType::U16: put(static_cast<uint16_t>(v)); break;
            case ValueType::I16: put(static_cast<int16_t>(v)); break;
            case ValueType::U32: put(static_cast<uint32_t>(v)); break;
            case ValueType::I32: put(static_cast<int32_t>(v)); break;
            case ValueType::U64: put(static_cast<uint64_t>(v)); break;
            default: put(v); break;
        }
    }
    void put_float(ValueType type, double v) {
        if (type == ValueType::F32) put(static_cast<float>(v));
        else put(v);
    }
    void put_value(const MetadataValue& v) {
        put(static_cast<uint32_t>(v.type));
        if (v.type == ValueType::U64 && std::holds_alternative<uint64_t>(v.value)) {
            put(std::get<uint64_t>(v.value));
        } else if (v.type == ValueType::F32 || v.type == ValueType::F64) {
            put_float(v.type, std::get<double>(v.value));
        } else if (v.type == ValueType::STRING) {
            put_string(std::get<std::string>(v.value));
        } else if (v.type == ValueType::ARRAY) {
            const auto& a = std::get<MetadataArray>(v.value);
            put(static_cast<uint32_t>(a.elem_type));
            put<uint64_t>(a.size());
            if (a.elem_type == ValueType::STRING) {
                for (const auto& s : a.strings) put_string(s);
            } else if (a.elem_type == ValueType::F32 || a.elem_type == ValueType::F64) {
                for (double f : a.floats) put_float(a.elem_type, f);
            } else {
                for (int64_t i : a.ints) put_int(a.elem_type, i);
            }
        } else {
            put_int(v.type, std::get<int64_t>(v.value));
        }
    }
    void pad_to(uint64_t alignment) {
        const uint64_t size = bytes_.size();
        bytes_.resize(static_cast<size_t>((size + alignment - 1) / alignment * alignment), std::byte{0});
    }

private:
    std::vector<std::byte>& bytes_;
};

uint64_t align_up(uint64_t n, uint64_t alignment) { return (n + alignment - 1) / alignment * alignment; }

}  // namespace

GgufWriter::GgufWriter(uint32_t version, uint32_t alignment) : version_(version), alignment_(alignment) {
    if (version != 2 && version != 3) fail(INLAY_ERR_INVALID_ARGUMENT, "GGUF writer: version {} (must be 2 or 3)", version);
    if (alignment == 0 || !std::has_single_bit(alignment)) {
        fail(INLAY_ERR_INVALID_ARGUMENT, "GGUF writer: alignment {} is not a power of two", alignment);
    }
}

void GgufWriter::add_metadata(std::string key, MetadataValue value) {
    if (key.empty()) fail(INLAY_ERR_INVALID_ARGUMENT, "GGUF writer: empty key name");
    check_value(key, value);
    if (key == kAlignmentKey) {
        if (value.type != ValueType::U32 || std::get<int64_t>(value.value) != alignment_) {
            fail(INLAY_ERR_INVALID_ARGUMENT, "GGUF writer: general.alignment must be the u32 {} given to the writer, not {} {}",
                 alignment_, value_type_name(value.type), value.to_string());
        }
    }
    if (metadata_.contains(key)) fail(INLAY_ERR_INVALID_ARGUMENT, "GGUF writer: duplicate key '{}'", key);
    if (key == kAlignmentKey) alignment_key_added_ = true;
    metadata_.add(std::move(key), std::move(value));
}

void GgufWriter::copy_metadata(const Metadata& md) {
    for (const auto& [key, value] : md.entries()) {
        if (key != kAlignmentKey) add_metadata(key, value);
    }
}

void GgufWriter::add_tensor(std::string name, DType type, std::vector<int64_t> ne, std::span<const std::byte> data) {
    if (name.empty()) fail(INLAY_ERR_INVALID_ARGUMENT, "GGUF writer: empty tensor name");
    for (const auto& t : tensors_) {
        if (t.name == name) fail(INLAY_ERR_INVALID_ARGUMENT, "GGUF writer: duplicate tensor '{}'", name);
    }
    if (!dtype_from_id(static_cast<uint32_t>(type))) {
        fail(INLAY_ERR_INVALID_ARGUMENT, "GGUF writer: tensor '{}': unknown type {}", name, static_cast<uint32_t>(type));
    }
    if (ne.empty() || ne.size() > 4) {
        fail(INLAY_ERR_INVALID_ARGUMENT, "GGUF writer: tensor '{}': {} dims (must be 1..4)", name, ne.size());
    }
    uint64_t rows = 1;
    for (size_t d = 0; d < ne.size(); ++d) {
        if (ne[d] < 0) fail(INLAY_ERR_INVALID_ARGUMENT, "GGUF writer: tensor '{}': dim {} is negative", name, d);
        if (d == 0) continue;
        const auto n = static_cast<uint64_t>(ne[d]);
        if (n != 0 && rows > std::numeric_limits<uint64_t>::max() / n) {
            fail(INLAY_ERR_INVALID_ARGUMENT, "GGUF writer: tensor '{}': size overflows", name);
        }
        rows *= n;
    }
    const auto row = row_bytes(type, ne[0]);
    if (!row) {
        fail(INLAY_ERR_INVALID_ARGUMENT, "GGUF writer: tensor '{}': ne[0] = {} is not a multiple of the {} block size",
             name, ne[0], dtype_name(type));
    }
    if (rows != 0 && *row > std::numeric_limits<uint64_t>::max() / rows) {
        fail(INLAY_ERR_INVALID_ARGUMENT, "GGUF writer: tensor '{}': size overflows", name);
    }
    const uint64_t nbytes = *row * rows;
    if (data.size() != nbytes) {
        fail(INLAY_ERR_INVALID_ARGUMENT, "GGUF writer: tensor '{}': {} data bytes given, {} x {} needs {}", name,
             data.size(), dtype_name(type), fmt::join(ne, "x"), nbytes);
    }
    tensors_.push_back({std::move(name), type, std::move(ne), std::vector<std::byte>(data.begin(), data.end())});
}

std::vector<std::byte> GgufWriter::header_bytes() const {
    std::vector<std::byte> bytes;
    Out out(bytes);
    const bool append_alignment = !alignment_key_added_ && alignment_ != kDefaultAlignment;
    out.put(kMagic);
    out.put(version_);
    out.put<uint64_t>(tensors_.size());
    out.put<uint64_t>(metadata_.size() + (append_alignment ? 1 : 0));
    for (const auto& [key, value] : metadata_.entries()) {
        out.put_string(key);
        out.put_value(value);
    }
    if (append_alignment) {
        out.put_string(kAlignmentKey);
        out.put_value(MetadataValue::from_int(ValueType::U32, alignment_));
    }
    uint64_t offset = 0;
    for (const auto& t : tensors_) {
        out.put_string(t.name);
        out.put(static_cast<uint32_t>(t.ne.size()));
        for (int64_t n : t.ne) out.put(static_cast<uint64_t>(n));
        out.put(static_cast<uint32_t>(t.type));
        out.put(offset);
        offset = align_up(offset + t.data.size(), alignment_);
    }
    // A file without tensors ends right after its header, as llama.cpp writes them.
    if (!tensors_.empty()) out.pad_to(alignment_);
    return bytes;
}

uint64_t GgufWriter::file_size() const {
    uint64_t size = header_bytes().size();
    for (size_t i = 0; i < tensors_.size(); ++i) {
        size += tensors_[i].data.size();
        if (i + 1 < tensors_.size()) size = align_up(size, alignment_);
    }
    return size;
}

std::vector<std::byte> GgufWriter::to_bytes() const {
    std::vector<std::byte> bytes = header_bytes();
    Out out(bytes);
    for (size_t i = 0; i < tensors_.size(); ++i) {
        bytes.insert(bytes.end(), tensors_[i].data.begin(), tensors_[i].data.end());
        // No padding after the last tensor: llama.cpp's files end with its data.
        if (i + 1 < tensors_.size()) out.pad_to(alignment_);
    }
    return bytes;
}

void GgufWriter::write_file(const std::string& path) const {
    AtomicFile file(path);
    const std::vector<std::byte> header = header_bytes();
    file.write(header.data(), header.size());
    uint64_t pos = header.size();
    static constexpr std::byte kZeros[64]{};
    for (size_t i = 0; i < tensors_.size(); ++i) {
        file.write(tensors_[i].data.data(), tensors_[i].data.size());
        pos += tensors_[i].data.size();
        if (i + 1 == tensors_.size()) break;
        for (uint64_t pad = align_up(pos, alignment_) - pos; pad > 0;) {
            const size_t n = static_cast<size_t>(std::min<uint64_t>(pad, sizeof(kZeros)));
            file.write(kZeros, n);
            pad -= n;
            pos += n;
        }
    }
    file.commit();
}

}  // namespace inlay
