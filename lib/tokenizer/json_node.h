// JsonNode: typed, checked access to untrusted JSON (tokenizer.json,
// tokenizer_config.json). Every failure is an inlay::Error (INLAY_ERR_BAD_FORMAT
// unless said otherwise) whose message names the file and the JSON pointer of the
// value at fault, e.g. "tokenizer.json: /model/merges/17: expected a string".
//
// A JsonNode is a view: it refers to the json value and to the origin string, which
// must outlive it. Cheap to copy; thread-compatible.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"
#include "core/utf8.h"

namespace inlay {

// Parses JSON text; a syntax error (or invalid UTF-8 in a string) throws
// INLAY_ERR_BAD_FORMAT naming `origin` and the parser's position.
nlohmann::json parse_json_text(std::string_view text, std::string_view origin);

// `key` escaped for a JSON pointer (RFC 6901: '~' -> "~0", '/' -> "~1").
std::string json_pointer_token(std::string_view key);

class JsonNode {
public:
    JsonNode(const nlohmann::json& value, const std::string& origin, std::string path = "")
        : value_(&value), origin_(&origin), path_(std::move(path)) {}

    [[nodiscard]] const nlohmann::json& json() const { return *value_; }
    [[nodiscard]] const std::string& origin() const { return *origin_; }
    // The JSON pointer of this value ("" for the document, shown as "/").
    [[nodiscard]] const std::string& path() const { return path_; }
    [[nodiscard]] std::string where() const { return fmt::format("{}: {}", *origin_, path_.empty() ? "/" : path_); }

    [[nodiscard]] bool is_null() const { return value_->is_null(); }
    [[nodiscard]] bool is_string() const { return value_->is_string(); }
    [[nodiscard]] bool is_object() const { return value_->is_object(); }
    [[nodiscard]] bool is_array() const { return value_->is_array(); }

    // Member `key` of an object, or nullopt when absent. Fails if this is no object.
    [[nodiscard]] std::optional<JsonNode> find(std::string_view key) const {
        require_object();
        const auto it = value_->find(key);
        if (it == value_->end()) return std::nullopt;
        return JsonNode(*it, *origin_, path_ + "/" + json_pointer_token(key));
    }
    // Member `key`, absent or null -> nullopt.
    [[nodiscard]] std::optional<JsonNode> find_non_null(std::string_view key) const {
        auto n = find(key);
        if (n && n->is_null()) return std::nullopt;
        return n;
    }
    // Member `key`; INLAY_ERR_BAD_FORMAT when absent.
    [[nodiscard]] JsonNode at(std::string_view key) const {
        auto n = find(key);
        if (!n) fail(INLAY_ERR_BAD_FORMAT, "{}: the member \"{}\" is missing", where(), key);
        return *n;
    }
    // Element i of an array (i < size()).
    [[nodiscard]] JsonNode at(size_t i) const {
        require_array();
        if (i >= value_->size()) fail(INLAY_ERR_BAD_FORMAT, "{}: expected at least {} elements", where(), i + 1);
        return JsonNode((*value_)[i], *origin_, path_ + "/" + std::to_string(i));
    }
    // Number of elements of an array.
    [[nodiscard]] size_t size() const {
        require_array();
        return value_->size();
    }

    [[nodiscard]] const std::string& string() const {
        if (!value_->is_string()) fail(INLAY_ERR_BAD_FORMAT, "{}: expected a string, found {}", where(), type_name());
        return value_->get_ref<const std::string&>();
    }
    [[nodiscard]] bool boolean() const {
        if (!value_->is_boolean())
            fail(INLAY_ERR_BAD_FORMAT, "{}: expected true or false, found {}", where(), type_name());
        return value_->get<bool>();
    }
    // An integer in [lo, hi].
    [[nodiscard]] int64_t integer(int64_t lo, int64_t hi) const {
        int64_t v = 0;
        if (value_->is_number_integer() && !value_->is_number_unsigned()) {
            v = value_->get<int64_t>();
        } else if (value_->is_number_unsigned()) {
            const auto u = value_->get<uint64_t>();
            if (u > static_cast<uint64_t>(hi))
                fail(INLAY_ERR_BAD_FORMAT, "{}: {} is out of range [{}, {}]", where(), u, lo, hi);
            v = static_cast<int64_t>(u);
        } else {
            fail(INLAY_ERR_BAD_FORMAT, "{}: expected an integer, found {}", where(), type_name());
        }
        if (v < lo || v > hi) fail(INLAY_ERR_BAD_FORMAT, "{}: {} is out of range [{}, {}]", where(), v, lo, hi);
        return v;
    }
    void require_object() const {
        if (!value_->is_object()) fail(INLAY_ERR_BAD_FORMAT, "{}: expected an object, found {}", where(), type_name());
    }
    void require_array() const {
        if (!value_->is_array()) fail(INLAY_ERR_BAD_FORMAT, "{}: expected an array, found {}", where(), type_name());
    }
    [[nodiscard]] const char* type_name() const { return value_->type_name(); }

private:
    const nlohmann::json* value_;
    const std::string* origin_;
    std::string path_;
};

inline std::string json_pointer_token(std::string_view key) {
    std::string out;
    out.reserve(key.size());
    for (const char c : key) {
        if (c == '~')
            out += "~0";
        else if (c == '/')
            out += "~1";
        else
            out += c;
    }
    return out;
}

inline nlohmann::json parse_json_text(std::string_view text, std::string_view origin) {
    try {
        return nlohmann::json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::exception& e) {
        // e.what() reads "[json.exception.parse_error.101] parse error at line 1, column 2: ...".
        std::string_view what = e.what();
        if (const size_t close = what.find("] "); close != std::string_view::npos) what.remove_prefix(close + 2);
        // The message echoes the bytes read, which may be ill-formed UTF-8.
        fail(INLAY_ERR_BAD_FORMAT, "{}: not valid JSON: {}", origin, utf8::quoted(what));
    }
}

}  // namespace inlay
