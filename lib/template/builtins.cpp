#include "template/builtins.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ctime>
#include <map>
#include <optional>

#include "core/error.h"
#include "core/utf8.h"

namespace inlay::tmpl {

namespace {

// Positional-or-keyword argument access for one builtin, with Python's errors.
class Args {
public:
    Args(CallArgs& args, std::string_view what) : args_(args), what_(what), used_(args.keyword.size(), false) {}

    // Argument `pos` (positional) or `name` (keyword), else `def`.
    Value get(size_t pos, std::string_view name, Value def = Value()) { return find(pos, name).value_or(std::move(def)); }
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
            if (!used_[i]) fail(INLAY_ERR_BAD_FORMAT, "{} got an unexpected argument '{}'", what_, args_.keyword[i].first);
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

bool flag(const Value& v) {
    return v.truthy();
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
bool is_alpha(char c) {
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
        if (is_alpha(c)) {
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

std::string html_escape(const std::string& s) {
    std::string out;
    for (const char c : s) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&#34;"; break;
            case '\'': out += "&#39;"; break;
            default: out += c;
        }
    }
    return out;
}

// obj.a.b for Jinja's attribute="a.b" arguments.
Value attribute_path(const Value& obj, const std::string& path, const Limits& limits) {
    Value v = obj;
    size_t start = 0;
    while (true) {
        const size_t dot = path.find('.', start);
        const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        if (!part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; }))
            v = subscript(v, Value(static_cast<int64_t>(std::stoll(part))));
        else
            v = v.is_undefined() ? v : attribute(v, part, limits);
        if (dot == std::string::npos) return v;
        start = dot + 1;
    }
}

// A sort key: the attribute (if any), lower-cased when case-insensitive.
Value sort_key(const Value& v, const Value& attr, bool case_sensitive, const Limits& limits) {
    Value k = attr.is_string() ? attribute_path(v, attr.as_string(), limits) : v;
    if (!case_sensitive && k.is_string()) return Value(ascii_lower(k.as_string()));
    return k;
}

std::string python_format(const std::string& fmt_text, const std::vector<Value>& values) {
    std::string out;
    size_t next = 0;
    for (size_t i = 0; i < fmt_text.size(); ++i) {
        if (fmt_text[i] != '%') {
            out += fmt_text[i];
            continue;
        }
        if (i + 1 >= fmt_text.size()) fail(INLAY_ERR_BAD_FORMAT, "format: incomplete format");
        const char spec = fmt_text[++i];
        if (spec == '%') {
            out += '%';
            continue;
        }
        if (next >= values.size()) fail(INLAY_ERR_BAD_FORMAT, "format: not enough arguments for format string");
        const Value& v = values[next++];
        if (spec == 's') {
            out += v.str();
        } else if (spec == 'r') {
            out += v.repr();
        } else if (spec == 'd' || spec == 'i') {
            if (!v.is_number() && !v.is_bool()) fail(INLAY_ERR_BAD_FORMAT, "format: %d needs a number");
            out += std::to_string(v.is_float() ? static_cast<int64_t>(v.as_double()) : v.is_bool() ? v.as_bool() : v.as_int());
        } else {
            fail(INLAY_ERR_UNSUPPORTED, "format: the conversion '%{}' is not supported (supported: %s %r %d %i %%)", spec);
        }
    }
    if (next != values.size()) fail(INLAY_ERR_BAD_FORMAT, "format: not all arguments converted during string formatting");
    return out;
}

using FilterFn = Value (*)(const Value& in, Args& a, const Limits& limits);

Value f_trim(const Value& in, Args& a, const Limits&) {
    const Value chars = a.get(0, "chars");
    a.done(1);
    return Value(py_strip(in.str(), chars, true, true));
}

Value f_length(const Value& in, Args& a, const Limits&) {
    a.done(0);
    if (in.is_string()) return Value(static_cast<int64_t>(code_points(in.as_string()).size()));
    if (in.is_array()) return Value(static_cast<int64_t>(in.as_array()->size()));
    if (in.is_object()) return Value(static_cast<int64_t>(in.as_object()->items.size()));
    if (in.is_undefined()) return Value(0);
    fail(INLAY_ERR_BAD_FORMAT, "object of type '{}' has no length", in.type_name());
}

Value f_tojson(const Value& in, Args& a, const Limits& limits) {
    const Value indent = a.get(0, "indent");
    a.get(1, "ensure_ascii");
    const Value sort_keys = a.get(2, "sort_keys");
    a.done(3);
    if (sort_keys.truthy()) fail(INLAY_ERR_UNSUPPORTED, "tojson: sort_keys is not supported");
    const bool has_indent = !indent.is_undefined() && !indent.is_none();
    const int n = has_indent ? static_cast<int>(std::clamp<int64_t>(as_integer(indent, "tojson indent"), 0, 64)) : -1;
    std::string out = in.to_json(n, has_indent ? "," : ", ", ": ");
    check_string_size(out.size(), limits);
    return Value(std::move(out));
}

Value f_items(const Value& in, Args& a, const Limits&) {
    a.done(0);
    Array out;
    if (in.is_undefined()) return Value(std::move(out));
    if (!in.is_object()) fail(INLAY_ERR_BAD_FORMAT, "items expects a dict, got '{}'", in.type_name());
    for (const auto& [k, v] : in.as_object()->items) out.emplace_back(Array{Value(k), v});
    return Value(std::move(out));
}

Value f_string(const Value& in, Args& a, const Limits&) {
    a.done(0);
    return Value(in.str());
}

Value f_int(const Value& in, Args& a, const Limits&) {
    const Value def = a.get(0, "default", Value(0));
    const Value base = a.get(1, "base", Value(10));
    a.done(2);
    if (in.is_int()) return in;
    if (in.is_bool()) return Value(static_cast<int64_t>(in.as_bool()));
    if (in.is_float()) {
        const double d = in.as_double();
        if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return def;
        return Value(static_cast<int64_t>(d));
    }
    if (in.is_string()) {
        const std::string s = py_strip(in.as_string(), Value(), true, true);
        try {
            size_t used = 0;
            const long long v = std::stoll(s, &used, static_cast<int>(as_integer(base, "int base")));
            if (used == s.size()) return Value(static_cast<int64_t>(v));
        } catch (const std::exception&) {
        }
        try {  // Jinja falls back to int(float(s))
            size_t used = 0;
            const double d = std::stod(s, &used);
            if (used == s.size() && std::isfinite(d) && std::fabs(d) < 9.2e18) return Value(static_cast<int64_t>(d));
        } catch (const std::exception&) {
        }
    }
    return def;
}

Value f_float(const Value& in, Args& a, const Limits&) {
    const Value def = a.get(0, "default", Value(0.0));
    a.done(1);
    if (in.is_number() || in.is_bool()) return Value(in.as_double());
    if (in.is_string()) {
        try {
            const std::string s = py_strip(in.as_string(), Value(), true, true);
            size_t used = 0;
            const double d = std::stod(s, &used);
            if (used == s.size()) return Value(d);
        } catch (const std::exception&) {
        }
    }
    return def;
}

Value f_join(const Value& in, Args& a, const Limits& limits) {
    const Value sep = a.get(0, "d", Value(""));
    const Value attr = a.get(1, "attribute");
    a.done(2);
    std::string out;
    const std::string s = sep.str();
    bool first = true;
    for (const Value& v : iterate(in)) {
        if (!first) out += s;
        first = false;
        out += attr.is_string() ? attribute_path(v, attr.as_string(), limits).str() : v.str();
        check_string_size(out.size(), limits);
    }
    return Value(std::move(out));
}

Value f_first(const Value& in, Args& a, const Limits&) {
    a.done(0);
    const auto items = iterate(in);
    return items.empty() ? Value::undefined("first: the sequence is empty") : items.front();
}

Value f_last(const Value& in, Args& a, const Limits&) {
    a.done(0);
    const auto items = iterate(in);
    return items.empty() ? Value::undefined("last: the sequence is empty") : items.back();
}

Value f_default(const Value& in, Args& a, const Limits&) {
    const Value def = a.get(0, "default_value", Value(""));
    const Value boolean = a.get(1, "boolean", Value(false));
    a.done(2);
    if (in.is_undefined() || (flag(boolean) && !in.truthy())) return def;
    return in;
}

Value f_list(const Value& in, Args& a, const Limits&) {
    a.done(0);
    require_defined(in);
    return Value(iterate(in));
}

Value f_upper(const Value& in, Args& a, const Limits&) {
    a.done(0);
    return Value(ascii_upper(in.str()));
}
Value f_lower(const Value& in, Args& a, const Limits&) {
    a.done(0);
    return Value(ascii_lower(in.str()));
}
Value f_capitalize(const Value& in, Args& a, const Limits&) {
    a.done(0);
    return Value(py_capitalize(in.str()));
}
Value f_title(const Value& in, Args& a, const Limits&) {
    a.done(0);
    return Value(py_title(in.str()));
}

Value f_replace(const Value& in, Args& a, const Limits& limits) {
    const std::string old = as_text(a.required(0, "old"), "replace");
    const std::string repl = as_text(a.required(1, "new"), "replace");
    const Value count = a.get(2, "count");
    a.done(3);
    const int64_t n = count.is_undefined() || count.is_none() ? -1 : as_integer(count, "replace count");
    return Value(py_replace(in.str(), old, repl, n, limits));
}

Value f_reverse(const Value& in, Args& a, const Limits&) {
    a.done(0);
    if (in.is_string()) {
        auto cps = code_points(in.as_string());
        std::reverse(cps.begin(), cps.end());
        return Value(from_code_points(cps, 0, cps.size()));
    }
    auto items = iterate(in);
    std::reverse(items.begin(), items.end());
    return Value(std::move(items));
}

Value f_safe(const Value& in, Args& a, const Limits&) {
    a.done(0);
    return in;
}

Value f_escape(const Value& in, Args& a, const Limits&) {
    a.done(0);
    return Value(html_escape(in.str()));
}

Value f_abs(const Value& in, Args& a, const Limits&) {
    a.done(0);
    if (in.is_int()) {
        if (in.as_int() == INT64_MIN) fail(INLAY_ERR_BAD_FORMAT, "integer overflow in abs");
        return Value(in.as_int() < 0 ? -in.as_int() : in.as_int());
    }
    if (in.is_float()) return Value(std::fabs(in.as_double()));
    if (in.is_bool()) return Value(static_cast<int64_t>(in.as_bool()));
    fail(INLAY_ERR_BAD_FORMAT, "bad operand type for abs(): '{}'", in.type_name());
}

Value f_round(const Value& in, Args& a, const Limits&) {
    const int64_t precision = as_integer(a.get(0, "precision", Value(0)), "round precision");
    const std::string method = as_text(a.get(1, "method", Value("common")), "round method");
    a.done(2);
    if (!in.is_number() && !in.is_bool()) fail(INLAY_ERR_BAD_FORMAT, "round expects a number, got '{}'", in.type_name());
    const double x = in.as_double();
    if (method == "common" && precision >= 0 && precision <= 300 && std::isfinite(x)) {
        // Python's round(): the correctly rounded decimal (halves to even), read back.
        const std::string text = fmt::format("{:.{}f}", x, precision);
        double r = 0;
        std::from_chars(text.data(), text.data() + text.size(), r);
        return Value(r);
    }
    const double scale = std::pow(10.0, static_cast<double>(std::clamp<int64_t>(precision, -308, 308)));
    double r = 0;
    if (method == "common")
        r = std::nearbyint(x * scale);  // halves to even (the default rounding mode)
    else if (method == "ceil")
        r = std::ceil(x * scale);
    else if (method == "floor")
        r = std::floor(x * scale);
    else
        fail(INLAY_ERR_BAD_FORMAT, "round: method must be common, ceil or floor");
    return Value(r / scale);
}

Value f_indent(const Value& in, Args& a, const Limits& limits) {
    const Value width = a.get(0, "width", Value(4));
    const bool first = flag(a.get(1, "first", Value(false)));
    const bool blank = flag(a.get(2, "blank", Value(false)));
    a.done(3);
    const std::string pad = width.is_string() ? width.as_string()
                                              : std::string(static_cast<size_t>(std::clamp<int64_t>(
                                                                as_integer(width, "indent width"), 0, 1024)),
                                                            ' ');
    const std::string s = in.str();
    std::vector<std::string> lines;
    size_t start = 0;
    while (start < s.size()) {
        const size_t nl = s.find('\n', start);
        if (nl == std::string::npos) {
            lines.push_back(s.substr(start));
            break;
        }
        lines.push_back(s.substr(start, nl - start));
        start = nl + 1;
    }
    std::string out;
    for (size_t i = 0; i < lines.size(); ++i) {
        if (i) out += '\n';
        if ((i > 0 || first) && (blank || !lines[i].empty())) out += pad;
        out += lines[i];
        check_string_size(out.size(), limits);
    }
    if (!s.empty() && s.back() == '\n') out += '\n';
    return Value(std::move(out));
}

Value f_format(const Value& in, Args& a, const Limits& limits) {
    std::vector<Value> values;
    for (size_t i = 0; i < a.n_positional(); ++i) values.push_back(a.get(i, ""));
    a.done(a.n_positional());
    std::string out = python_format(as_text(in, "format"), values);
    check_string_size(out.size(), limits);
    return Value(std::move(out));
}

Value f_wordcount(const Value& in, Args& a, const Limits&) {
    a.done(0);
    return Value(static_cast<int64_t>(py_split(in.str(), Value(), -1).size()));
}

Value f_attr(const Value& in, Args& a, const Limits& limits) {
    const std::string name = as_text(a.required(0, "name"), "attr");
    a.done(1);
    if (in.is_object())
        if (const Value* v = in.as_object()->find(name)) return *v;
    return in.is_undefined() ? Value::undefined() : attribute(in, name, limits);
}

Value f_center(const Value& in, Args& a, const Limits&) {
    const int64_t width = std::clamp<int64_t>(as_integer(a.get(0, "width", Value(80)), "center width"), 0, 4096);
    a.done(1);
    const std::string s = in.str();
    const auto n = static_cast<int64_t>(code_points(s).size());
    if (n >= width) return Value(s);
    const int64_t total = width - n;
    const int64_t left = total / 2 + (total & width & 1);  // Python's str.center rounding
    return Value(std::string(static_cast<size_t>(left), ' ') + s + std::string(static_cast<size_t>(total - left), ' '));
}

Value f_sort(const Value& in, Args& a, const Limits& limits) {
    const bool reverse = flag(a.get(0, "reverse", Value(false)));
    const bool case_sensitive = flag(a.get(1, "case_sensitive", Value(false)));
    const Value attr = a.get(2, "attribute");
    a.done(3);
    auto items = iterate(in);
    std::vector<std::pair<Value, Value>> keyed;
    for (Value& v : items) keyed.emplace_back(sort_key(v, attr, case_sensitive, limits), std::move(v));
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
        return reverse ? compare(y.first, x.first) < 0 : compare(x.first, y.first) < 0;
    });
    Array out;
    for (auto& [k, v] : keyed) out.push_back(std::move(v));
    return Value(std::move(out));
}

Value f_dictsort(const Value& in, Args& a, const Limits&) {
    const bool case_sensitive = flag(a.get(0, "case_sensitive", Value(false)));
    const std::string by = as_text(a.get(1, "by", Value("key")), "dictsort by");
    const bool reverse = flag(a.get(2, "reverse", Value(false)));
    a.done(3);
    if (!in.is_object()) fail(INLAY_ERR_BAD_FORMAT, "dictsort expects a dict, got '{}'", in.type_name());
    if (by != "key" && by != "value") fail(INLAY_ERR_BAD_FORMAT, "dictsort: by must be 'key' or 'value'");
    std::vector<std::pair<std::string, Value>> items = in.as_object()->items;
    auto key = [&](const std::pair<std::string, Value>& p) {
        Value k = by == "key" ? Value(p.first) : p.second;
        if (!case_sensitive && k.is_string()) return Value(ascii_lower(k.as_string()));
        return k;
    };
    std::stable_sort(items.begin(), items.end(), [&](const auto& x, const auto& y) {
        return reverse ? compare(key(y), key(x)) < 0 : compare(key(x), key(y)) < 0;
    });
    Array out;
    for (auto& [k, v] : items) out.emplace_back(Array{Value(k), v});
    return Value(std::move(out));
}

Value f_unique(const Value& in, Args& a, const Limits& limits) {
    const bool case_sensitive = flag(a.get(0, "case_sensitive", Value(false)));
    const Value attr = a.get(1, "attribute");
    a.done(2);
    Array out;
    std::vector<Value> seen;
    for (const Value& v : iterate(in)) {
        const Value k = sort_key(v, attr, case_sensitive, limits);
        if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, k); })) continue;
        seen.push_back(k);
        out.push_back(v);
    }
    return Value(std::move(out));
}

Value min_max(const Value& in, Args& a, const Limits& limits, bool want_max) {
    const bool case_sensitive = flag(a.get(0, "case_sensitive", Value(false)));
    const Value attr = a.get(1, "attribute");
    a.done(2);
    const auto items = iterate(in);
    if (items.empty()) return Value::undefined(fmt::format("{}: the sequence is empty", want_max ? "max" : "min"));
    size_t best = 0;
    for (size_t i = 1; i < items.size(); ++i) {
        const int c = compare(sort_key(items[i], attr, case_sensitive, limits), sort_key(items[best], attr, case_sensitive, limits));
        if (want_max ? c > 0 : c < 0) best = i;
    }
    return items[best];
}
Value f_min(const Value& in, Args& a, const Limits& limits) {
    return min_max(in, a, limits, false);
}
Value f_max(const Value& in, Args& a, const Limits& limits) {
    return min_max(in, a, limits, true);
}

Value f_sum(const Value& in, Args& a, const Limits& limits) {
    const Value attr = a.get(0, "attribute");
    Value total = a.get(1, "start", Value(0));
    a.done(2);
    for (const Value& v : iterate(in))
        total = binary_op("+", total, attr.is_string() ? attribute_path(v, attr.as_string(), limits) : v, limits);
    return total;
}

// map(attribute="x", default=...) or map("filter", args...).
Value f_map(const Value& in, Args& a, const Limits& limits) {
    const Value attr = a.get(99, "attribute");
    Array out;
    if (attr.is_string()) {
        const Value def = a.get(99, "default");
        a.done(0);
        for (const Value& v : iterate(in)) {
            Value r = attribute_path(v, attr.as_string(), limits);
            out.push_back(r.is_undefined() && !def.is_undefined() ? def : r);
        }
        return Value(std::move(out));
    }
    const std::string filter = as_text(a.required(0, "filter"), "map");
    CallArgs rest;
    for (size_t i = 1; i < a.n_positional(); ++i) rest.positional.push_back(a.get(i, ""));
    a.done(a.n_positional());
    for (const Value& v : iterate(in)) {
        CallArgs copy = rest;
        out.push_back(apply_filter(filter, v, copy, limits));
    }
    return Value(std::move(out));
}

// select/reject(test, args...) and selectattr/rejectattr(attribute, test, args...).
Value select_impl(const Value& in, Args& a, const Limits& limits, bool by_attribute, bool keep) {
    size_t pos = 0;
    std::string attr;
    if (by_attribute) attr = as_text(a.required(pos++, "attribute"), a.what());
    const Value test = a.get(pos++, "test");
    CallArgs rest;
    for (size_t i = pos; i < a.n_positional(); ++i) rest.positional.push_back(a.get(i, ""));
    a.done(a.n_positional());
    Array out;
    for (const Value& v : iterate(in)) {
        const Value subject = by_attribute ? attribute_path(v, attr, limits) : v;
        bool pass = false;
        if (test.is_undefined() || test.is_none()) {
            pass = subject.truthy();
        } else {
            CallArgs copy = rest;
            pass = apply_test(as_text(test, a.what()), subject, copy);
        }
        if (pass == keep) out.push_back(v);
    }
    return Value(std::move(out));
}
Value f_select(const Value& in, Args& a, const Limits& limits) {
    return select_impl(in, a, limits, false, true);
}
Value f_reject(const Value& in, Args& a, const Limits& limits) {
    return select_impl(in, a, limits, false, false);
}
Value f_selectattr(const Value& in, Args& a, const Limits& limits) {
    return select_impl(in, a, limits, true, true);
}
Value f_rejectattr(const Value& in, Args& a, const Limits& limits) {
    return select_impl(in, a, limits, true, false);
}

const std::map<std::string, FilterFn, std::less<>>& filters() {
    static const std::map<std::string, FilterFn, std::less<>> table = {
        {"abs", f_abs},       {"attr", f_attr},       {"capitalize", f_capitalize}, {"center", f_center},
        {"count", f_length},  {"d", f_default},       {"default", f_default},       {"dictsort", f_dictsort},
        {"e", f_escape},      {"escape", f_escape},   {"first", f_first},           {"float", f_float},
        {"format", f_format}, {"indent", f_indent},   {"int", f_int},               {"items", f_items},
        {"join", f_join},     {"last", f_last},       {"length", f_length},         {"list", f_list},
        {"lower", f_lower},   {"map", f_map},         {"max", f_max},               {"min", f_min},
        {"reject", f_reject}, {"rejectattr", f_rejectattr}, {"replace", f_replace}, {"reverse", f_reverse},
        {"round", f_round},   {"safe", f_safe},       {"select", f_select},         {"selectattr", f_selectattr},
        {"sort", f_sort},     {"string", f_string},   {"sum", f_sum},               {"title", f_title},
        {"tojson", f_tojson}, {"trim", f_trim},       {"unique", f_unique},         {"upper", f_upper},
        {"wordcount", f_wordcount},
    };
    return table;
}

// ---- tests ----

using TestFn = bool (*)(const Value& in, Args& a);

bool cmp_arg(const Value& in, Args& a, std::string_view op) {
    const Value other = a.required(0, "other");
    a.done(1);
    return binary_op(op, in, other, Limits{}).truthy();
}

const std::map<std::string, TestFn, std::less<>>& tests() {
    static const std::map<std::string, TestFn, std::less<>> table = {
        {"defined", [](const Value& v, Args& a) { a.done(0); return !v.is_undefined(); }},
        {"undefined", [](const Value& v, Args& a) { a.done(0); return v.is_undefined(); }},
        {"none", [](const Value& v, Args& a) { a.done(0); return v.is_none(); }},
        {"string", [](const Value& v, Args& a) { a.done(0); return v.is_string(); }},
        {"number", [](const Value& v, Args& a) { a.done(0); return v.is_number(); }},
        {"integer", [](const Value& v, Args& a) { a.done(0); return v.is_int(); }},
        {"float", [](const Value& v, Args& a) { a.done(0); return v.is_float(); }},
        {"boolean", [](const Value& v, Args& a) { a.done(0); return v.is_bool(); }},
        {"true", [](const Value& v, Args& a) { a.done(0); return v.is_bool() && v.as_bool(); }},
        {"false", [](const Value& v, Args& a) { a.done(0); return v.is_bool() && !v.as_bool(); }},
        {"mapping", [](const Value& v, Args& a) { a.done(0); return v.is_object(); }},
        {"iterable", [](const Value& v, Args& a) { a.done(0); return v.is_array() || v.is_object() || v.is_string(); }},
        {"sequence", [](const Value& v, Args& a) { a.done(0); return v.is_array() || v.is_object() || v.is_string(); }},
        {"callable", [](const Value& v, Args& a) { a.done(0); return v.is_function(); }},
        {"odd", [](const Value& v, Args& a) { a.done(0); return as_integer(v, "odd") % 2 != 0; }},
        {"even", [](const Value& v, Args& a) { a.done(0); return as_integer(v, "even") % 2 == 0; }},
        {"divisibleby",
         [](const Value& v, Args& a) {
             const int64_t n = as_integer(a.required(0, "num"), "divisibleby");
             a.done(1);
             if (n == 0) fail(INLAY_ERR_BAD_FORMAT, "divisibleby 0");
             return as_integer(v, "divisibleby") % n == 0;
         }},
        {"eq", [](const Value& v, Args& a) { return cmp_arg(v, a, "=="); }},
        {"equalto", [](const Value& v, Args& a) { return cmp_arg(v, a, "=="); }},
        {"==", [](const Value& v, Args& a) { return cmp_arg(v, a, "=="); }},
        {"ne", [](const Value& v, Args& a) { return cmp_arg(v, a, "!="); }},
        {"!=", [](const Value& v, Args& a) { return cmp_arg(v, a, "!="); }},
        {"lt", [](const Value& v, Args& a) { return cmp_arg(v, a, "<"); }},
        {"lessthan", [](const Value& v, Args& a) { return cmp_arg(v, a, "<"); }},
        {"<", [](const Value& v, Args& a) { return cmp_arg(v, a, "<"); }},
        {"le", [](const Value& v, Args& a) { return cmp_arg(v, a, "<="); }},
        {"<=", [](const Value& v, Args& a) { return cmp_arg(v, a, "<="); }},
        {"gt", [](const Value& v, Args& a) { return cmp_arg(v, a, ">"); }},
        {"greaterthan", [](const Value& v, Args& a) { return cmp_arg(v, a, ">"); }},
        {">", [](const Value& v, Args& a) { return cmp_arg(v, a, ">"); }},
        {"ge", [](const Value& v, Args& a) { return cmp_arg(v, a, ">="); }},
        {">=", [](const Value& v, Args& a) { return cmp_arg(v, a, ">="); }},
        {"in", [](const Value& v, Args& a) { return cmp_arg(v, a, "in"); }},
        {"sameas",
         [](const Value& v, Args& a) {
             const Value o = a.required(0, "other");
             a.done(1);
             if (v.kind() != o.kind()) return false;
             if (v.is_array()) return v.as_array() == o.as_array();
             if (v.is_object()) return v.as_object() == o.as_object();
             return equals(v, o);
         }},
        {"lower",
         [](const Value& v, Args& a) {
             a.done(0);
             return v.is_string() && ascii_lower(v.as_string()) == v.as_string();
         }},
        {"upper",
         [](const Value& v, Args& a) {
             a.done(0);
             return v.is_string() && ascii_upper(v.as_string()) == v.as_string();
         }},
        {"escaped", [](const Value&, Args& a) { a.done(0); return false; }},
    };
    return table;
}

// ---- methods ----

Value string_method(const std::string& s, const std::string& name, CallArgs& args, const Limits& limits) {
    Args a(args, "str." + name + "()");
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
        const Value chars = a.get(0, "chars");
        a.done(1);
        return Value(py_strip(s, chars, name != "rstrip", name != "lstrip"));
    }
    if (name == "split") {
        const Value sep = a.get(0, "sep");
        const Value maxsplit = a.get(1, "maxsplit", Value(-1));
        a.done(2);
        return Value(py_split(s, sep, as_integer(maxsplit, "split maxsplit")));
    }
    if (name == "startswith" || name == "endswith") {
        const Value affix = a.required(0, "prefix");
        a.done(1);
        return Value(starts_or_ends(s, affix, name == "startswith", name));
    }
    if (name == "replace") {
        const std::string old = as_text(a.required(0, "old"), "replace");
        const std::string repl = as_text(a.required(1, "new"), "replace");
        const int64_t count = as_integer(a.get(2, "count", Value(-1)), "replace count");
        a.done(3);
        return Value(py_replace(s, old, repl, count, limits));
    }
    if (name == "upper" || name == "lower" || name == "title" || name == "capitalize") {
        a.done(0);
        if (name == "upper") return Value(ascii_upper(s));
        if (name == "lower") return Value(ascii_lower(s));
        if (name == "title") return Value(py_title(s));
        return Value(py_capitalize(s));
    }
    if (name == "find" || name == "count") {
        const std::string sub = as_text(a.required(0, "sub"), name);
        a.done(1);
        if (name == "find") {
            const size_t at = s.find(sub);
            if (at == std::string::npos) return Value(-1);
            return Value(static_cast<int64_t>(code_points(std::string_view(s).substr(0, at)).size()));
        }
        if (sub.empty()) return Value(static_cast<int64_t>(code_points(s).size() + 1));
        int64_t n = 0;
        for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++n;
        return Value(n);
    }
    if (name == "join") {
        const Value items = a.required(0, "iterable");
        a.done(1);
        std::string out;
        bool first = true;
        for (const Value& v : iterate(items)) {
            if (!v.is_string()) fail(INLAY_ERR_BAD_FORMAT, "str.join(): expected str items, found '{}'", v.type_name());
            if (!first) out += s;
            first = false;
            out += v.as_string();
            check_string_size(out.size(), limits);
        }
        return Value(std::move(out));
    }
    if (name == "splitlines") {
        a.done(0);
        Array out;
        size_t start = 0;
        while (start < s.size()) {
            size_t nl = s.find_first_of("\r\n", start);
            if (nl == std::string::npos) {
                out.emplace_back(s.substr(start));
                break;
            }
            out.emplace_back(s.substr(start, nl - start));
            start = nl + (s.compare(nl, 2, "\r\n") == 0 ? 2 : 1);
        }
        return Value(std::move(out));
    }
    if (name == "isdigit" || name == "isalpha" || name == "isalnum" || name == "isspace" || name == "islower" ||
        name == "isupper") {
        a.done(0);
        if (s.empty()) return Value(false);
        if (name == "isspace") {
            const auto cps = code_points(s);
            return Value(std::all_of(cps.begin(), cps.end(), is_python_space));
        }
        if (name == "islower" || name == "isupper") {
            bool cased = false;
            for (const char c : s) {
                if (!is_alpha(c)) continue;
                cased = true;
                if ((name == "islower") != (c >= 'a' && c <= 'z')) return Value(false);
            }
            return Value(cased);
        }
        // ASCII classes; other characters count as neither digits nor letters.
        return Value(std::all_of(s.begin(), s.end(), [&](char c) {
            const bool digit = c >= '0' && c <= '9';
            if (name == "isdigit") return digit;
            if (name == "isalpha") return is_alpha(c);
            return digit || is_alpha(c);
        }));
    }
    fail(INLAY_ERR_INTERNAL, "str.{} is listed but not implemented", name);
}

Value dict_method(const std::shared_ptr<Object>& o, const std::string& name, CallArgs& args) {
    Args a(args, "dict." + name + "()");
    if (name == "get") {
        const Value key = a.required(0, "key");
        const Value def = a.get(1, "default", Value::none());
        a.done(2);
        if (key.is_string())
            if (const Value* v = o->find(key.as_string())) return *v;
        return def;
    }
    a.done(0);
    Array out;
    for (const auto& [k, v] : o->items) {
        if (name == "keys") out.emplace_back(k);
        else if (name == "values") out.push_back(v);
        else out.emplace_back(Array{Value(k), v});
    }
    return Value(std::move(out));
}

constexpr std::string_view k_string_methods[] = {
    "strip", "lstrip", "rstrip", "split", "startswith", "endswith", "replace", "upper", "lower", "title", "capitalize",
    "find", "count", "join", "splitlines", "isdigit", "isalpha", "isalnum", "isspace", "islower", "isupper"};
constexpr std::string_view k_dict_methods[] = {"items", "keys", "values", "get"};

}  // namespace

Value apply_filter(const std::string& name, const Value& input, CallArgs& args, const Limits& limits) {
    const auto& table = filters();
    const auto it = table.find(name);
    if (it == table.end()) fail(INLAY_ERR_UNSUPPORTED, "unknown filter '{}'", name);
    Args a(args, "filter '" + name + "'");
    return it->second(input, a, limits);
}

bool has_test(std::string_view name) {
    return tests().find(name) != tests().end();
}

bool apply_test(const std::string& name, const Value& input, CallArgs& args) {
    const auto& table = tests();
    const auto it = table.find(name);
    if (it == table.end()) fail(INLAY_ERR_UNSUPPORTED, "unknown test '{}'", name);
    Args a(args, "test '" + name + "'");
    return it->second(input, a);
}

Value bound_method(const Value& obj, const std::string& name, const Limits& limits) {
    if (obj.is_string() &&
        std::find(std::begin(k_string_methods), std::end(k_string_methods), name) != std::end(k_string_methods)) {
        return Value::function(
            [s = obj.as_string(), name, limits](CallArgs& args) { return string_method(s, name, args, limits); },
            "str." + name);
    }
    if (obj.is_object() && !obj.as_object()->is_namespace &&
        std::find(std::begin(k_dict_methods), std::end(k_dict_methods), name) != std::end(k_dict_methods)) {
        return Value::function([o = obj.as_object(), name](CallArgs& args) { return dict_method(o, name, args); },
                               "dict." + name);
    }
    return Value::undefined();
}

Object builtin_globals(const Limits& limits) {
    Object g;
    g.set("range", Value::function(
                       [limits](CallArgs& args) {
                           Args a(args, "range()");
                           if (args.positional.empty() || args.positional.size() > 3)
                               fail(INLAY_ERR_BAD_FORMAT, "range() takes 1 to 3 arguments");
                           int64_t start = 0, stop = 0, step = 1;
                           if (args.positional.size() == 1) {
                               stop = as_integer(a.get(0, ""), "range");
                           } else {
                               start = as_integer(a.get(0, ""), "range");
                               stop = as_integer(a.get(1, ""), "range");
                               if (args.positional.size() == 3) step = as_integer(a.get(2, ""), "range");
                           }
                           a.done(3);
                           if (step == 0) fail(INLAY_ERR_BAD_FORMAT, "range() step must not be zero");
                           const double count = std::ceil((static_cast<double>(stop) - static_cast<double>(start)) /
                                                          static_cast<double>(step));
                           if (count > static_cast<double>(limits.max_list_items))
                               check_list_size(limits.max_list_items + 1, limits);
                           Array out;
                           for (int64_t i = start; step > 0 ? i < stop : i > stop;) {
                               out.emplace_back(i);
                               if (__builtin_add_overflow(i, step, &i)) break;
                           }
                           return Value(std::move(out));
                       },
                       "range"));
    auto make_object = [](CallArgs& args, bool is_namespace, const char* what) {
        Object o;
        o.is_namespace = is_namespace;
        if (args.positional.size() > 1) fail(INLAY_ERR_BAD_FORMAT, "{}() takes at most one positional argument", what);
        if (!args.positional.empty()) {
            if (!args.positional[0].is_object()) fail(INLAY_ERR_BAD_FORMAT, "{}() expects a dict", what);
            for (const auto& [k, v] : args.positional[0].as_object()->items) o.set(k, v);
        }
        for (auto& [k, v] : args.keyword) o.set(k, v);
        return Value(std::move(o));
    };
    g.set("namespace", Value::function([make_object](CallArgs& args) { return make_object(args, true, "namespace"); },
                                       "namespace"));
    g.set("dict", Value::function([make_object](CallArgs& args) { return make_object(args, false, "dict"); }, "dict"));
    g.set("raise_exception", Value::function(
                                 [](CallArgs& args) -> Value {
                                     Args a(args, "raise_exception()");
                                     const std::string message = a.get(0, "message").str();
                                     fail(INLAY_ERR_INVALID_ARGUMENT, "the chat template rejects its input: {}",
                                          utf8::sanitize(message));
                                 },
                                 "raise_exception"));
    g.set("strftime_now", Value::function(
                              [](CallArgs& args) {
                                  Args a(args, "strftime_now()");
                                  const std::string format = as_text(a.required(0, "format"), "strftime_now");
                                  a.done(1);
                                  const std::time_t now = std::time(nullptr);
                                  std::tm tm{};
                                  localtime_r(&now, &tm);
                                  char buf[512];
                                  const size_t n = format.size() < 200 ? std::strftime(buf, sizeof buf, format.c_str(), &tm) : 0;
                                  return Value(std::string(buf, n));
                              },
                              "strftime_now"));
    return g;
}

std::vector<std::string_view> filter_names() {
    std::vector<std::string_view> out;
    for (const auto& [k, _] : filters()) out.push_back(k);
    return out;
}

std::vector<std::string_view> test_names() {
    std::vector<std::string_view> out;
    for (const auto& [k, _] : tests()) out.push_back(k);
    return out;
}

}  // namespace inlay::tmpl
