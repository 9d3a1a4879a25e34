#include "template/builtin_support.h"

#include <algorithm>

#include "core/utf8.h"

namespace inlay::tmpl {

std::string as_text(const Value& v, std::string_view what) {
    if (v.is_string()) return v.as_string();
    if (v.is_undefined()) return {};
    fail(INLAY_ERR_BAD_FORMAT, "{} expects a string, got '{}'", what, v.type_name());
}

int64_t as_integer(const Value& v, std::string_view what) {
    if (v.is_int()) return v.as_int();
    if (v.is_bool()) return v.as_bool();
    fail(INLAY_ERR_BAD_FORMAT, "{} expects an integer, got '{}'", what, v.type_name());
}

std::string ascii_lower(std::string s) {
    for (char& c : s)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return s;
}
std::string ascii_upper(std::string s) {
    for (char& c : s)
        if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    return s;
}
bool is_ascii_alpha(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// Python's str.strip/lstrip/rstrip: whitespace, or any of the code points of `chars`.
std::string py_strip(const std::string& s, const Value& chars, bool left, bool right) {
    const auto cps = code_points(s);
    std::vector<uint32_t> set;
    const bool by_set = !chars.is_undefined() && !chars.is_none();
    if (by_set) set = code_points(as_text(chars, "strip"));
    auto strip_it = [&](uint32_t cp) {
        return by_set ? std::find(set.begin(), set.end(), cp) != set.end() : is_python_space(cp);
    };
    size_t b = 0, e = cps.size();
    if (left)
        while (b < e && strip_it(cps[b])) ++b;
    if (right)
        while (e > b && strip_it(cps[e - 1])) --e;
    return from_code_points(cps, b, e);
}

Array py_split(const std::string& s, const Value& sep_v, int64_t maxsplit) {
    Array out;
    if (sep_v.is_undefined() || sep_v.is_none()) {
        const auto cps = code_points(s);
        size_t i = 0;
        while (true) {
            while (i < cps.size() && is_python_space(cps[i])) ++i;
            if (i >= cps.size()) break;
            if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) {
                size_t e = cps.size();
                while (e > i && is_python_space(cps[e - 1])) --e;
                out.emplace_back(from_code_points(cps, i, e));
                break;
            }
            size_t j = i;
            while (j < cps.size() && !is_python_space(cps[j])) ++j;
            out.emplace_back(from_code_points(cps, i, j));
            i = j;
        }
        return out;
    }
    const std::string sep = as_text(sep_v, "split");
    if (sep.empty()) fail(INLAY_ERR_BAD_FORMAT, "split: empty separator");
    size_t start = 0;
    while (true) {
        const size_t at = s.find(sep, start);
        if (at == std::string::npos || (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit)) {
            out.emplace_back(s.substr(start));
            break;
        }
        out.emplace_back(s.substr(start, at - start));
        start = at + sep.size();
    }
    return out;
}

std::string py_replace(const std::string& s, const std::string& old, const std::string& repl, int64_t count,
                       const Limits& limits) {
    std::string out;
    int64_t done = 0;
    if (old.empty()) {  // Python inserts `repl` around every character
        const auto cps = code_points(s);
        for (size_t i = 0; i <= cps.size(); ++i) {
            if (count < 0 || done < count) {
                out += repl;
                ++done;
            }
            if (i < cps.size()) utf8::append_codepoint(out, cps[i]);
            check_string_size(out.size(), limits);
        }
        return out;
    }
    size_t start = 0;
    while (true) {
        const size_t at = count >= 0 && done >= count ? std::string::npos : s.find(old, start);
        if (at == std::string::npos) {
            out.append(s, start);
            break;
        }
        out.append(s, start, at - start);
        out += repl;
        check_string_size(out.size(), limits);
        start = at + old.size();
        ++done;
    }
    check_string_size(out.size(), limits);
    return out;
}

bool starts_or_ends(const std::string& s, const Value& affix, bool starts, std::string_view what) {
    auto one = [&](const Value& a) {
        const std::string t = as_text(a, what);
        return starts ? std::string_view(s).starts_with(t) : std::string_view(s).ends_with(t);
    };
    if (affix.is_array()) {
        return std::any_of(affix.as_array()->begin(), affix.as_array()->end(), one);
    }
    if (!affix.is_string()) fail(INLAY_ERR_BAD_FORMAT, "{} expects a string or a tuple of strings", what);
    return one(affix);
}

std::string py_title(const std::string& s) {
    std::string out = s;
    bool prev_letter = false;
    for (char& c : out) {
        if (is_ascii_alpha(c)) {
            c = prev_letter ? ascii_lower(std::string(1, c))[0] : ascii_upper(std::string(1, c))[0];
            prev_letter = true;
        } else {
            prev_letter = static_cast<unsigned char>(c) >= 0x80 && prev_letter;
        }
    }
    return out;
}

std::string py_capitalize(const std::string& s) {
    std::string out = ascii_lower(s);
    if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 'a' + 'A');
    return out;
}

}  // namespace inlay::tmpl
