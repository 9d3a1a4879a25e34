// JSON from untrusted files (a safetensors header, a shard index, config.json): parse
// errors, duplicate keys (which nlohmann would silently merge) and excessive nesting all
// become INLAY_ERR_BAD_FORMAT naming the origin. Also the typed field access they share.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace inlay {

// std::map objects: keys come out sorted, not in file order (JSON objects are unordered),
// and building an object of n keys costs O(n log n). ordered_json's linear key lookup
// made it O(n^2): a minute for Qwen3's 151k-entry vocabulary, and a hang for a crafted
// safetensors header of millions of keys.
using Json = nlohmann::json;

// Parses `text`; `origin` names the file in messages. Nesting deeper than `max_depth`
// is rejected before parsing.
Json parse_untrusted_json(std::string_view text, const std::string& origin, int max_depth);

// Name of a JSON value's type for messages ("string", "array", ...).
std::string_view json_type_name(const Json& value);

// An integer (a JSON number without fraction or exponent) as int64_t, or nullopt for
// anything else, including integers beyond int64_t.
std::optional<int64_t> json_int(const Json& value);
// Any JSON number as a double, or nullopt.
std::optional<double> json_number(const Json& value);

}  // namespace inlay
