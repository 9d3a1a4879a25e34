#include "io/safetensors_json.h"

#include <limits>
#include <set>
#include <vector>

#include "core/error.h"
#include "core/utf8.h"

namespace inlay {
namespace {

// Deepest nesting of arrays/objects in `text`, ignoring brackets inside strings. Stops
// counting once `limit` is exceeded (the text is rejected anyway).
int max_nesting(std::string_view text, int limit) {
    int depth = 0, deepest = 0;
    bool in_string = false, escaped = false;
    for (const char c : text) {
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                in_string = false;
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '{' || c == '[') {
            deepest = std::max(deepest, ++depth);
            if (deepest > limit) return deepest;
        } else if (c == '}' || c == ']') {
            --depth;
        }
    }
    return deepest;
}

}  // namespace

Json parse_untrusted_json(std::string_view text, const std::string& origin, int max_depth) {
    // JSON text never holds a raw NUL; nlohmann would stop reading at one.
    if (const size_t nul = text.find('\0'); nul != std::string_view::npos)
        fail(INLAY_ERR_BAD_FORMAT, "'{}': invalid JSON: a NUL byte at offset {}", origin, nul);
    if (max_nesting(text, max_depth) > max_depth)
        fail(INLAY_ERR_BAD_FORMAT, "'{}': JSON nested deeper than {} levels", origin, max_depth);
    // One set of keys per open object, to reject duplicates.
    std::vector<std::set<std::string>> keys;
    const Json::parser_callback_t on_event = [&](int, Json::parse_event_t event, Json& parsed) {
        switch (event) {
            case Json::parse_event_t::object_start:
                keys.emplace_back();
                break;
            case Json::parse_event_t::object_end:
                if (!keys.empty()) keys.pop_back();
                break;
            case Json::parse_event_t::key: {
                const auto& key = parsed.get_ref<const std::string&>();
                if (!keys.empty() && !keys.back().insert(key).second)
                    fail(INLAY_ERR_BAD_FORMAT, "'{}': duplicate JSON key \"{}\"", origin, key);
                break;
            }
            default:
                break;
        }
        return true;
    };
    try {
        return Json::parse(text.begin(), text.end(), on_event);
    } catch (const Json::exception& e) {
        // The parser's message quotes the bytes it read, which may be ill-formed UTF-8.
        fail(INLAY_ERR_BAD_FORMAT, "'{}': invalid JSON: {}", origin, utf8::quoted(e.what()));
    }
}

std::string_view json_type_name(const Json& value) {
    if (value.is_number_integer()) return "integer";
    if (value.is_number_float()) return "number";
    return value.type_name();
}

std::optional<int64_t> json_int(const Json& value) {
    if (value.is_number_unsigned()) {
        const auto u = value.get<uint64_t>();
        if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
        return static_cast<int64_t>(u);
    }
    if (value.is_number_integer()) return value.get<int64_t>();
    return std::nullopt;
}

std::optional<double> json_number(const Json& value) {
    if (!value.is_number()) return std::nullopt;
    return value.get<double>();
}

}  // namespace inlay
