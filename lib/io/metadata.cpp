#include "io/metadata.h"

#include <fmt/format.h>

#include "core/error.h"

namespace inlay {

std::string_view value_type_name(ValueType type) {
    switch (type) {
        case ValueType::U8: return "u8";
        case ValueType::I8: return "i8";
        case ValueType::U16: return "u16";
        case ValueType::I16: return "i16";
        case ValueType::U32: return "u32";
        case ValueType::I32: return "i32";
        case ValueType::F32: return "f32";
        case ValueType::BOOL: return "bool";
        case ValueType::STRING: return "string";
        case ValueType::ARRAY: return "array";
        case ValueType::U64: return "u64";
        case ValueType::I64: return "i64";
        case ValueType::F64: return "f64";
    }
    return "unknown";
}

bool is_integer(ValueType type) {
    switch (type) {
        case ValueType::U8: case ValueType::I8: case ValueType::U16: case ValueType::I16:
        case ValueType::U32: case ValueType::I32: case ValueType::U64: case ValueType::I64:
            return true;
        default:
            return false;
    }
}

size_t MetadataArray::size() const {
    switch (elem_type) {
        case ValueType::F32: case ValueType::F64: return floats.size();
        case ValueType::STRING: return strings.size();
        default: return ints.size();
    }
}

std::string MetadataValue::to_string(size_t max_elems) const {
    switch (type) {
        case ValueType::STRING: {
            const auto& s = std::get<std::string>(value);
            if (s.size() > 120) return fmt::format("\"{}...\" ({} bytes)", s.substr(0, 117), s.size());
            return fmt::format("\"{}\"", s);
        }
        case ValueType::F32: case ValueType::F64: return fmt::format("{}", std::get<double>(value));
        case ValueType::BOOL: return std::get<int64_t>(value) ? "true" : "false";
        case ValueType::U64: return fmt::format("{}", std::get<uint64_t>(value));
        case ValueType::ARRAY: {
            const auto& a = std::get<MetadataArray>(value);
            std::string out = fmt::format("[{}; {}] [", value_type_name(a.elem_type), a.size());
            const size_t n = std::min(a.size(), max_elems);
            for (size_t i = 0; i < n; ++i) {
                if (i) out += ", ";
                if (a.elem_type == ValueType::STRING) out += fmt::format("\"{}\"", a.strings[i]);
                else if (a.elem_type == ValueType::F32 || a.elem_type == ValueType::F64) out += fmt::format("{}", a.floats[i]);
                else out += fmt::format("{}", a.ints[i]);
            }
            if (n < a.size()) out += ", ...";
            return out + "]";
        }
        default: return fmt::format("{}", std::get<int64_t>(value));
    }
}

bool Metadata::add(std::string key, MetadataValue value) {
    if (index_.count(key)) return false;
    index_.emplace(key, entries_.size());
    entries_.emplace_back(std::move(key), std::move(value));
    return true;
}

void Metadata::set(std::string key, MetadataValue value) {
    if (auto it = index_.find(key); it != index_.end()) {
        entries_[it->second].second = std::move(value);
        return;
    }
    add(std::move(key), std::move(value));
}

const MetadataValue* Metadata::find(std::string_view key) const {
    auto it = index_.find(std::string(key));
    return it == index_.end() ? nullptr : &entries_[it->second].second;
}

namespace {
const MetadataValue& require(const Metadata& md, std::string_view key) {
    const MetadataValue* v = md.find(key);
    if (!v) fail(INLAY_ERR_MISSING, "metadata key '{}' is missing", key);
    return *v;
}

// Integers and bools; u64 values may be stored either way (the reader keeps them as
// uint64_t, hand-built metadata may use from_int).
int64_t as_int(std::string_view key, const MetadataValue& v) {
    if (const auto* up = std::get_if<uint64_t>(&v.value)) {
        const uint64_t u = *up;
        if (u > static_cast<uint64_t>(INT64_MAX)) fail(INLAY_ERR_BAD_FORMAT, "metadata key '{}': value {} is too large", key, u);
        return static_cast<int64_t>(u);
    }
    if (!is_integer(v.type) && v.type != ValueType::BOOL)
        fail(INLAY_ERR_BAD_FORMAT, "metadata key '{}' has type {}, expected an integer", key, value_type_name(v.type));
    return std::get<int64_t>(v.value);
}
}  // namespace

int64_t Metadata::get_int(std::string_view key) const { return as_int(key, require(*this, key)); }

std::optional<int64_t> Metadata::get_int_opt(std::string_view key) const {
    const MetadataValue* v = find(key);
    if (!v) return std::nullopt;
    return as_int(key, *v);
}

int64_t Metadata::get_int_in(std::string_view key, int64_t lo, int64_t hi) const {
    const int64_t v = get_int(key);
    if (v < lo || v > hi) fail(INLAY_ERR_BAD_FORMAT, "metadata key '{}' = {} is outside [{}, {}]", key, v, lo, hi);
    return v;
}

std::optional<int64_t> Metadata::get_int_in_opt(std::string_view key, int64_t lo, int64_t hi) const {
    if (!contains(key)) return std::nullopt;
    return get_int_in(key, lo, hi);
}

double Metadata::get_float(std::string_view key) const {
    const MetadataValue& v = require(*this, key);
    if (v.type == ValueType::F32 || v.type == ValueType::F64) return std::get<double>(v.value);
    if (is_integer(v.type)) return static_cast<double>(as_int(key, v));
    fail(INLAY_ERR_BAD_FORMAT, "metadata key '{}' has type {}, expected a number", key, value_type_name(v.type));
}

std::optional<double> Metadata::get_float_opt(std::string_view key) const {
    if (!contains(key)) return std::nullopt;
    return get_float(key);
}

bool Metadata::get_bool(std::string_view key) const {
    const MetadataValue& v = require(*this, key);
    if (v.type == ValueType::BOOL || is_integer(v.type)) return as_int(key, v) != 0;
    fail(INLAY_ERR_BAD_FORMAT, "metadata key '{}' has type {}, expected bool", key, value_type_name(v.type));
}

std::optional<bool> Metadata::get_bool_opt(std::string_view key) const {
    if (!contains(key)) return std::nullopt;
    return get_bool(key);
}

const std::string& Metadata::get_string(std::string_view key) const {
    const MetadataValue& v = require(*this, key);
    if (v.type != ValueType::STRING) fail(INLAY_ERR_BAD_FORMAT, "metadata key '{}' has type {}, expected string", key, value_type_name(v.type));
    return std::get<std::string>(v.value);
}

std::optional<std::string> Metadata::get_string_opt(std::string_view key) const {
    if (!contains(key)) return std::nullopt;
    return get_string(key);
}

const MetadataArray& Metadata::get_array(std::string_view key) const {
    const MetadataValue& v = require(*this, key);
    if (v.type != ValueType::ARRAY) fail(INLAY_ERR_BAD_FORMAT, "metadata key '{}' has type {}, expected array", key, value_type_name(v.type));
    return std::get<MetadataArray>(v.value);
}

const MetadataArray* Metadata::get_array_opt(std::string_view key) const {
    if (!contains(key)) return nullptr;
    return &get_array(key);
}

const std::vector<std::string>& Metadata::get_string_array(std::string_view key) const {
    const MetadataArray& a = get_array(key);
    if (a.elem_type != ValueType::STRING) fail(INLAY_ERR_BAD_FORMAT, "metadata key '{}' is an array of {}, expected strings", key, value_type_name(a.elem_type));
    return a.strings;
}

}  // namespace inlay
