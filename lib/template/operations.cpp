#include "template/operations.h"

#include <cmath>

#include "core/error.h"
#include "core/utf8.h"
#include "template/builtins.h"

namespace inlay::tmpl {

void check_string_size(size_t bytes, const Limits& limits) {
    if (bytes > limits.max_string_bytes)
        fail(INLAY_ERR_BAD_FORMAT, "a string of {} bytes exceeds the limit of {} bytes", bytes,
             limits.max_string_bytes);
}

void check_list_size(size_t items, const Limits& limits) {
    if (items > limits.max_list_items)
        fail(INLAY_ERR_BAD_FORMAT, "a list of {} items exceeds the limit of {} items", items, limits.max_list_items);
}

void require_defined(const Value& v) {
    if (!v.is_undefined()) return;
    const std::string& hint = v.undefined_hint();
    fail(INLAY_ERR_BAD_FORMAT, "{}", hint.empty() ? "a value is undefined" : hint);
}

std::vector<uint32_t> code_points(std::string_view s) {
    std::vector<uint32_t> out;
    out.reserve(s.size());
    for (size_t pos = 0; pos < s.size();) out.push_back(utf8::decode_valid(s, pos));
    return out;
}

std::string from_code_points(const std::vector<uint32_t>& cps, size_t begin, size_t end) {
    std::string out;
    for (size_t i = begin; i < end; ++i) utf8::append_codepoint(out, cps[i]);
    return out;
}

bool is_python_space(uint32_t cp) {
    return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
           cp == 0x3000;
}

namespace {

bool is_intlike(const Value& v) {
    return v.is_int() || v.is_bool();
}
int64_t to_int(const Value& v) {
    return v.is_bool() ? static_cast<int64_t>(v.as_bool()) : v.as_int();
}
bool is_numeric(const Value& v) {
    return v.is_number() || v.is_bool();
}

[[noreturn]] void type_error(std::string_view op, const Value& a, const Value& b) {
    require_defined(a);
    require_defined(b);
    fail(INLAY_ERR_BAD_FORMAT, "unsupported operand types for {}: '{}' and '{}'", op, a.type_name(), b.type_name());
}

void check_overflow(std::string_view op, bool overflow) {
    if (overflow) fail(INLAY_ERR_BAD_FORMAT, "integer overflow in '{}'", op);
}

Value repeat(const Value& seq, int64_t n, const Limits& limits) {
    if (n <= 0) return seq.is_string() ? Value(std::string()) : Value(Array{});
    const auto count = static_cast<uint64_t>(n);
    if (seq.is_string()) {
        const std::string& s = seq.as_string();
        if (!s.empty() && count > limits.max_string_bytes / s.size() + 1)
            check_string_size(limits.max_string_bytes + 1, limits);
        check_string_size(s.size() * count, limits);
        std::string out;
        out.reserve(s.size() * count);
        for (uint64_t i = 0; i < count; ++i) out += s;
        return Value(std::move(out));
    }
    const Array& a = *seq.as_array();
    if (!a.empty() && count > limits.max_list_items / a.size() + 1) check_list_size(limits.max_list_items + 1, limits);
    check_list_size(a.size() * count, limits);
    Array out;
    for (uint64_t i = 0; i < count; ++i) out.insert(out.end(), a.begin(), a.end());
    return Value(std::move(out));
}

Value arithmetic(std::string_view op, const Value& a, const Value& b, const Limits& limits) {
    if (op == "+") {
        if (a.is_string() && b.is_string()) {
            check_string_size(a.as_string().size() + b.as_string().size(), limits);
            return Value(a.as_string() + b.as_string());
        }
        if (a.is_array() && b.is_array()) {
            check_list_size(a.as_array()->size() + b.as_array()->size(), limits);
            Array out = *a.as_array();
            out.insert(out.end(), b.as_array()->begin(), b.as_array()->end());
            return Value(std::move(out));
        }
    }
    if (op == "*") {
        if ((a.is_string() || a.is_array()) && is_intlike(b)) return repeat(a, to_int(b), limits);
        if (is_intlike(a) && (b.is_string() || b.is_array())) return repeat(b, to_int(a), limits);
    }
    if (op == "%" && a.is_string())
        fail(INLAY_ERR_UNSUPPORTED, "string formatting with '%' is not supported (use ~ or the format filter)");
    if (!is_numeric(a) || !is_numeric(b)) type_error(op, a, b);

    if (is_intlike(a) && is_intlike(b)) {
        const int64_t x = to_int(a);
        const int64_t y = to_int(b);
        int64_t r = 0;
        if (op == "+" || op == "-" || op == "*") {
            const bool overflow = op == "+"   ? __builtin_add_overflow(x, y, &r)
                                  : op == "-" ? __builtin_sub_overflow(x, y, &r)
                                              : __builtin_mul_overflow(x, y, &r);
            check_overflow(op, overflow);
            return Value(r);
        }
        if (op == "//" || op == "%") {
            if (y == 0) fail(INLAY_ERR_BAD_FORMAT, "integer division or modulo by zero");
            if (x == INT64_MIN && y == -1) fail(INLAY_ERR_BAD_FORMAT, "integer overflow in '{}'", op);
            int64_t q = x / y;
            int64_t m = x % y;
            if (m != 0 && ((m < 0) != (y < 0))) {  // Python floors toward negative infinity
                --q;
                m += y;
            }
            return Value(op == "//" ? q : m);
        }
        if (op == "**") {
            if (y < 0) return Value(std::pow(static_cast<double>(x), static_cast<double>(y)));
            int64_t result = 1;
            for (int64_t i = 0; i < y; ++i) {
                if (__builtin_mul_overflow(result, x, &result)) fail(INLAY_ERR_BAD_FORMAT, "integer overflow in '**'");
                if (result == 0 || result == 1) break;
            }
            return Value(result);
        }
    }
    const double x = a.as_double();
    const double y = b.as_double();
    if (op == "+") return Value(x + y);
    if (op == "-") return Value(x - y);
    if (op == "*") return Value(x * y);
    if (op == "/") {
        if (y == 0.0) fail(INLAY_ERR_BAD_FORMAT, "division by zero");
        return Value(x / y);
    }
    if (op == "//" || op == "%") {
        if (y == 0.0) fail(INLAY_ERR_BAD_FORMAT, "float division or modulo by zero");
        const double m = std::fmod(x, y);
        const double fm = m != 0.0 && ((m < 0) != (y < 0)) ? m + y : m;
        return Value(op == "//" ? std::floor(x / y) : fm);
    }
    if (op == "**") return Value(std::pow(x, y));
    fail(INLAY_ERR_INTERNAL, "unknown operator '{}'", op);
}

}  // namespace

int compare(const Value& a, const Value& b) {
    if (is_numeric(a) && is_numeric(b)) {
        if (is_intlike(a) && is_intlike(b)) {
            const int64_t x = to_int(a), y = to_int(b);
            return x < y ? -1 : x > y ? 1 : 0;
        }
        const double x = a.as_double(), y = b.as_double();
        return x < y ? -1 : x > y ? 1 : 0;
    }
    if (a.is_string() && b.is_string()) {
        const int c = a.as_string().compare(b.as_string());  // UTF-8 byte order is code point order
        return c < 0 ? -1 : c > 0 ? 1 : 0;
    }
    if (a.is_array() && b.is_array()) {
        const Array& x = *a.as_array();
        const Array& y = *b.as_array();
        for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
            if (equals(x[i], y[i])) continue;
            return compare(x[i], y[i]);
        }
        return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
    }
    require_defined(a);
    require_defined(b);
    fail(INLAY_ERR_BAD_FORMAT, "cannot compare '{}' with '{}'", a.type_name(), b.type_name());
}

bool contains(const Value& container, const Value& item) {
    if (container.is_string()) {
        if (!item.is_string()) {
            require_defined(item);
            fail(INLAY_ERR_BAD_FORMAT, "'in <string>' requires a string on the left, not '{}'", item.type_name());
        }
        return container.as_string().find(item.as_string()) != std::string::npos;
    }
    if (container.is_array()) {
        for (const Value& v : *container.as_array())
            if (equals(v, item)) return true;
        return false;
    }
    if (container.is_object()) return item.is_string() && container.as_object()->find(item.as_string()) != nullptr;
    if (container.is_undefined()) return false;
    fail(INLAY_ERR_BAD_FORMAT, "argument of type '{}' is not iterable", container.type_name());
}

Value binary_op(std::string_view op, const Value& a, const Value& b, const Limits& limits) {
    if (op == "==") return Value(equals(a, b));
    if (op == "!=") return Value(!equals(a, b));
    if (op == "<") return Value(compare(a, b) < 0);
    if (op == "<=") return Value(compare(a, b) <= 0);
    if (op == ">") return Value(compare(a, b) > 0);
    if (op == ">=") return Value(compare(a, b) >= 0);
    if (op == "in") return Value(contains(b, a));
    if (op == "not in") return Value(!contains(b, a));
    if (op == "~") {
        std::string s = a.str();
        const std::string t = b.str();
        check_string_size(s.size() + t.size(), limits);
        return Value(s + t);
    }
    return arithmetic(op, a, b, limits);
}

std::vector<Value> iterate(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::undefined:
            return {};
        case Value::Kind::array:
            return *v.as_array();
        case Value::Kind::object: {
            std::vector<Value> keys;
            for (const auto& [k, _] : v.as_object()->items) keys.emplace_back(k);
            return keys;
        }
        case Value::Kind::string: {
            std::vector<Value> chars;
            const std::string& s = v.as_string();
            for (size_t pos = 0; pos < s.size();) {
                const size_t start = pos;
                utf8::decode_valid(s, pos);
                chars.emplace_back(s.substr(start, pos - start));
            }
            return chars;
        }
        default:
            break;
    }
    fail(INLAY_ERR_BAD_FORMAT, "'{}' object is not iterable", v.type_name());
}

namespace {

// Python's index normalisation; false when out of range.
bool normalize_index(int64_t& i, size_t size) {
    const auto n = static_cast<int64_t>(size);
    if (i < 0) i += n;
    return i >= 0 && i < n;
}

}  // namespace

Value subscript(const Value& obj, const Value& key) {
    require_defined(obj);
    if (obj.is_array() && is_intlike(key)) {
        int64_t i = to_int(key);
        const Array& a = *obj.as_array();
        if (!normalize_index(i, a.size()))
            return Value::undefined(fmt::format("list index {} is out of range", to_int(key)));
        return a[static_cast<size_t>(i)];
    }
    if (obj.is_string() && is_intlike(key)) {
        const auto cps = code_points(obj.as_string());
        int64_t i = to_int(key);
        if (!normalize_index(i, cps.size()))
            return Value::undefined(fmt::format("string index {} is out of range", to_int(key)));
        return Value(from_code_points(cps, static_cast<size_t>(i), static_cast<size_t>(i) + 1));
    }
    if (obj.is_object() && key.is_string()) {
        if (const Value* v = obj.as_object()->find(key.as_string())) return *v;
        return Value::undefined(fmt::format("'{}' object has no attribute '{}'", obj.type_name(), key.as_string()));
    }
    if (key.is_string()) return attribute(obj, key.as_string(), Limits{});
    return Value::undefined(fmt::format("'{}' object has no item {}", obj.type_name(), key.repr()));
}

Value slice(const Value& obj, const Value& start_v, const Value& stop_v, const Value& step_v) {
    require_defined(obj);
    auto part = [](const Value& v, const char* what) -> std::optional<int64_t> {
        if (v.is_undefined() || v.is_none()) return std::nullopt;
        if (!is_intlike(v)) fail(INLAY_ERR_BAD_FORMAT, "slice {} must be an integer, not '{}'", what, v.type_name());
        return to_int(v);
    };
    const int64_t step = part(step_v, "step").value_or(1);
    if (step == 0) fail(INLAY_ERR_BAD_FORMAT, "slice step cannot be zero");
    std::vector<uint32_t> cps;
    size_t n = 0;
    if (obj.is_array()) {
        n = obj.as_array()->size();
    } else if (obj.is_string()) {
        cps = code_points(obj.as_string());
        n = cps.size();
    } else {
        fail(INLAY_ERR_BAD_FORMAT, "'{}' object cannot be sliced", obj.type_name());
    }
    const auto len = static_cast<int64_t>(n);
    // Python's PySlice_AdjustIndices.
    auto adjust = [&](std::optional<int64_t> v, int64_t def) {
        if (!v) return def;
        int64_t i = *v;
        if (i < 0) {
            i += len;
            if (i < 0) i = step < 0 ? -1 : 0;
        } else if (i >= len) {
            i = step < 0 ? len - 1 : len;
        }
        return i;
    };
    const int64_t start = adjust(part(start_v, "start"), step < 0 ? len - 1 : 0);
    const int64_t stop = adjust(part(stop_v, "stop"), step < 0 ? -1 : len);
    std::vector<size_t> picked;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) picked.push_back(static_cast<size_t>(i));
    if (obj.is_array()) {
        Array out;
        out.reserve(picked.size());
        for (const size_t i : picked) out.push_back((*obj.as_array())[i]);
        return Value(std::move(out));
    }
    std::string out;
    for (const size_t i : picked) utf8::append_codepoint(out, cps[i]);
    return Value(std::move(out));
}

Value attribute(const Value& obj, const std::string& name, const Limits& limits) {
    require_defined(obj);
    if (Value m = bound_method(obj, name, limits); !m.is_undefined()) return m;
    if (obj.is_object()) {
        if (const Value* v = obj.as_object()->find(name)) return *v;
    }
    return Value::undefined(fmt::format("'{}' object has no attribute '{}'", obj.type_name(), name));
}

}  // namespace inlay::tmpl
