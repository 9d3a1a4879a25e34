// The builtin filters (Jinja2's, with transformers' tojson).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

#include "template/builtin_support.h"
#include "template/builtins.h"

namespace inlay::tmpl {

namespace {

bool flag(const Value& v) {
    return v.truthy();
}

std::string html_escape(const std::string& s) {
    std::string out;
    for (const char c : s) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&#34;";
                break;
            case '\'':
                out += "&#39;";
                break;
            default:
                out += c;
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
            out += std::to_string(v.is_float()  ? static_cast<int64_t>(v.as_double())
                                  : v.is_bool() ? v.as_bool()
                                                : v.as_int());
        } else {
            fail(INLAY_ERR_UNSUPPORTED, "format: the conversion '%{}' is not supported (supported: %s %r %d %i %%)",
                 spec);
        }
    }
    if (next != values.size())
        fail(INLAY_ERR_BAD_FORMAT, "format: not all arguments converted during string formatting");
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
    if (!in.is_number() && !in.is_bool())
        fail(INLAY_ERR_BAD_FORMAT, "round expects a number, got '{}'", in.type_name());
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
    const std::string pad =
        width.is_string()
            ? width.as_string()
            : std::string(static_cast<size_t>(std::clamp<int64_t>(as_integer(width, "indent width"), 0, 1024)), ' ');
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
        const int c = compare(sort_key(items[i], attr, case_sensitive, limits),
                              sort_key(items[best], attr, case_sensitive, limits));
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
        {"abs", f_abs},
        {"attr", f_attr},
        {"capitalize", f_capitalize},
        {"center", f_center},
        {"count", f_length},
        {"d", f_default},
        {"default", f_default},
        {"dictsort", f_dictsort},
        {"e", f_escape},
        {"escape", f_escape},
        {"first", f_first},
        {"float", f_float},
        {"format", f_format},
        {"indent", f_indent},
        {"int", f_int},
        {"items", f_items},
        {"join", f_join},
        {"last", f_last},
        {"length", f_length},
        {"list", f_list},
        {"lower", f_lower},
        {"map", f_map},
        {"max", f_max},
        {"min", f_min},
        {"reject", f_reject},
        {"rejectattr", f_rejectattr},
        {"replace", f_replace},
        {"reverse", f_reverse},
        {"round", f_round},
        {"safe", f_safe},
        {"select", f_select},
        {"selectattr", f_selectattr},
        {"sort", f_sort},
        {"string", f_string},
        {"sum", f_sum},
        {"title", f_title},
        {"tojson", f_tojson},
        {"trim", f_trim},
        {"unique", f_unique},
        {"upper", f_upper},
        {"wordcount", f_wordcount},
    };
    return table;
}

}  // namespace

Value apply_filter(const std::string& name, const Value& input, CallArgs& args, const Limits& limits) {
    const auto& table = filters();
    const auto it = table.find(name);
    if (it == table.end()) fail(INLAY_ERR_UNSUPPORTED, "unknown filter '{}'", name);
    Args a(args, "filter '" + name + "'");
    return it->second(input, a, limits);
}

std::vector<std::string_view> filter_names() {
    std::vector<std::string_view> out;
    for (const auto& [k, _] : filters()) out.push_back(k);
    return out;
}

}  // namespace inlay::tmpl
