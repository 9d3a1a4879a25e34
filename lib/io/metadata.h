// Metadata: the typed key/value pairs of a model file (GGUF's KV section; the
// safetensors loader fills the same structure from config.json). Keys keep their
// file order. Typed getters throw inlay::Error naming the key: INLAY_ERR_MISSING
// when it is absent, INLAY_ERR_BAD_FORMAT when its type or value does not fit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

namespace inlay {

// GGUF value type ids.
enum class ValueType : uint32_t {
    U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7,
    STRING = 8, ARRAY = 9, U64 = 10, I64 = 11, F64 = 12,
};

std::string_view value_type_name(ValueType type);
bool is_integer(ValueType type);

// An array value. Elements live in the one vector that fits elem_type: integers and
// bools in `ints` (u64 values above INT64_MAX are rejected by the reader), floats in
// `floats`, strings in `strings`. Nested arrays are not supported.
struct MetadataArray {
    ValueType elem_type = ValueType::U8;
    std::vector<int64_t> ints;
    std::vector<double> floats;
    std::vector<std::string> strings;

    [[nodiscard]] size_t size() const;
};

struct MetadataValue {
    ValueType type = ValueType::U8;
    // Scalars: integers and bools as int64_t (u64 as uint64_t), floats as double.
    std::variant<int64_t, uint64_t, double, std::string, MetadataArray> value = int64_t{0};

    static MetadataValue from_int(ValueType type, int64_t v) { return {type, v}; }
    static MetadataValue from_u64(uint64_t v) { return {ValueType::U64, v}; }
    static MetadataValue from_float(ValueType type, double v) { return {type, v}; }
    static MetadataValue from_bool(bool v) { return {ValueType::BOOL, int64_t{v ? 1 : 0}}; }
    static MetadataValue from_string(std::string v) { return {ValueType::STRING, std::move(v)}; }
    static MetadataValue from_array(MetadataArray v) { return {ValueType::ARRAY, std::move(v)}; }

    // Short human-readable rendering (arrays abbreviated), for `inlay inspect`.
    [[nodiscard]] std::string to_string(size_t max_elems = 8) const;
};

class Metadata {
public:
    // Adds a key; returns false (and changes nothing) if it already exists.
    bool add(std::string key, MetadataValue value);
    // Adds or replaces a key.
    void set(std::string key, MetadataValue value);

    [[nodiscard]] const MetadataValue* find(std::string_view key) const;
    [[nodiscard]] bool contains(std::string_view key) const { return find(key) != nullptr; }
    [[nodiscard]] size_t size() const { return entries_.size(); }
    [[nodiscard]] const std::vector<std::pair<std::string, MetadataValue>>& entries() const { return entries_; }

    // Any integer type whose value fits; throws otherwise.
    [[nodiscard]] int64_t get_int(std::string_view key) const;
    [[nodiscard]] std::optional<int64_t> get_int_opt(std::string_view key) const;
    // Integer in [lo, hi]; throws INLAY_ERR_BAD_FORMAT naming the key and range.
    [[nodiscard]] int64_t get_int_in(std::string_view key, int64_t lo, int64_t hi) const;
    [[nodiscard]] std::optional<int64_t> get_int_in_opt(std::string_view key, int64_t lo, int64_t hi) const;
    // F32/F64 (integers are accepted and converted).
    [[nodiscard]] double get_float(std::string_view key) const;
    [[nodiscard]] std::optional<double> get_float_opt(std::string_view key) const;
    [[nodiscard]] bool get_bool(std::string_view key) const;
    [[nodiscard]] std::optional<bool> get_bool_opt(std::string_view key) const;
    [[nodiscard]] const std::string& get_string(std::string_view key) const;
    [[nodiscard]] std::optional<std::string> get_string_opt(std::string_view key) const;
    // Arrays; the element type must match the kind asked for.
    [[nodiscard]] const MetadataArray& get_array(std::string_view key) const;
    [[nodiscard]] const MetadataArray* get_array_opt(std::string_view key) const;
    [[nodiscard]] const std::vector<std::string>& get_string_array(std::string_view key) const;

private:
    std::vector<std::pair<std::string, MetadataValue>> entries_;
    std::unordered_map<std::string, size_t> index_;
};

}  // namespace inlay
