// Shared pieces of the builtins (filters.cpp, builtins.cpp): argument access with
// Python's errors, and Python's string operations. Internal to the template component.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "template/operations.h"
#include "template/value.h"

namespace inlay::tmpl {

// Positional-or-keyword argument access for one builtin, with Python's errors.
class Args {
public:
    Args(CallArgs& args, std::string_view what) : args_(args), what_(what), used_(args.keyword.size(), false) {}

    // Argument `pos` (positional) or `name` (keyword), else `def`.
    Value get(size_t pos, std::string_view name, Value def = Value()) {
        return find(pos, name).value_or(std::move(def));
    }
    // The same, but absence is an error.
    Value required(size_t pos, std::string_view name) {
        auto v = find(pos, name);
        if (!v) fail(INLAY_ERR_BAD_FORMAT, "{} is missing the argument '{}'", what_, name);
        return std::move(*v);
    }
    // Fails on extra positional arguments or keywords that no get() asked for.
    void done(size_t max_positional) const {
        if (args_.positional.size() > max_positional)
            fail(INLAY_ERR_BAD_FORMAT, "{} takes at most {} arguments ({} given)", what_, max_positional,
                 args_.positional.size());
        for (size_t i = 0; i < used_.size(); ++i)
            if (!used_[i])
                fail(INLAY_ERR_BAD_FORMAT, "{} got an unexpected argument '{}'", what_, args_.keyword[i].first);
    }
    [[nodiscard]] size_t n_positional() const { return args_.positional.size(); }
    [[nodiscard]] const std::string& what() const { return what_; }

private:
    std::optional<Value> find(size_t pos, std::string_view name) {
        for (size_t i = 0; i < args_.keyword.size(); ++i) {
            if (args_.keyword[i].first != name) continue;
            if (pos < args_.positional.size()) fail(INLAY_ERR_BAD_FORMAT, "{} got argument '{}' twice", what_, name);
            used_[i] = true;
            return args_.keyword[i].second;
        }
        if (pos < args_.positional.size()) return args_.positional[pos];
        return std::nullopt;
    }

    CallArgs& args_;
    std::string what_;
    std::vector<bool> used_;
};

// A string argument (undefined reads as ""); other kinds throw naming `what`.
std::string as_text(const Value& v, std::string_view what);
int64_t as_integer(const Value& v, std::string_view what);
std::string ascii_lower(std::string s);
std::string ascii_upper(std::string s);
bool is_ascii_alpha(char c);
// Python's str.strip/lstrip/rstrip: whitespace, or any code point of `chars`.
std::string py_strip(const std::string& s, const Value& chars, bool left, bool right);
// Python's str.split (sep undefined/none: runs of whitespace).
Array py_split(const std::string& s, const Value& sep, int64_t maxsplit);
std::string py_replace(const std::string& s, const std::string& old, const std::string& repl, int64_t count,
                       const Limits& limits);
// str.startswith / endswith with a string or a list of strings.
bool starts_or_ends(const std::string& s, const Value& affix, bool starts, std::string_view what);
std::string py_title(const std::string& s);
std::string py_capitalize(const std::string& s);

}  // namespace inlay::tmpl
