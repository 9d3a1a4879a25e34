#include "template/value.h"

#include <charconv>
#include <cmath>

#include "core/error.h"
#include "core/utf8.h"

namespace inlay::tmpl {

const Value* Object::find(std::string_view key) const {
    for (const auto& [k, v] : items)
        if (k == key) return &v;
    return nullptr;
}

Value* Object::find(std::string_view key) {
    for (auto& [k, v] : items)
        if (k == key) return &v;
    return nullptr;
}

void Object::set(std::string key, Value value) {
    if (Value* v = find(key)) {
        *v = std::move(value);
        return;
    }
    items.emplace_back(std::move(key), std::move(value));
}

Value Value::undefined(std::string hint) {
    Value v;
    if (!hint.empty()) v.data_ = Undefined{std::make_shared<const std::string>(std::move(hint))};
    return v;
}

Value Value::none() {
    Value v;
    v.data_ = None{};
    return v;
}

Value Value::function(Function f, std::string name) {
    Value v;
    v.data_ =
        Callable{std::make_shared<const Function>(std::move(f)), std::make_shared<const std::string>(std::move(name))};
    return v;
}

namespace {

template <class Json>
Value value_from_json(const Json& j) {
    switch (j.type()) {
        case nlohmann::detail::value_t::null:
            return Value::none();
        case nlohmann::detail::value_t::boolean:
            return Value(j.template get<bool>());
        case nlohmann::detail::value_t::number_integer:
            return Value(j.template get<int64_t>());
        case nlohmann::detail::value_t::number_unsigned: {
            const auto u = j.template get<uint64_t>();
            if (u > static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<double>(u));
            return Value(static_cast<int64_t>(u));
        }
        case nlohmann::detail::value_t::number_float:
            return Value(j.template get<double>());
        case nlohmann::detail::value_t::string: {
            const auto& s = j.template get_ref<const std::string&>();
            utf8::require_valid(s, "a string of the template context");
            return Value(s);
        }
        case nlohmann::detail::value_t::array: {
            Array a;
            a.reserve(j.size());
            for (const auto& e : j) a.push_back(value_from_json(e));
            return Value(std::move(a));
        }
        case nlohmann::detail::value_t::object: {
            Object o;
            o.items.reserve(j.size());
            for (const auto& [k, v] : j.items()) {
                utf8::require_valid(k, "a key of the template context");
                o.items.emplace_back(k, value_from_json(v));  // JSON object keys are unique
            }
            return Value(std::move(o));
        }
        default:
            break;
    }
    fail(INLAY_ERR_INVALID_ARGUMENT, "template context: unsupported JSON value of type {}", j.type_name());
}

}  // namespace

Value Value::from_json(const nlohmann::json& j) {
    return value_from_json(j);
}

Value Value::from_json(const nlohmann::ordered_json& j) {
    return value_from_json(j);
}

Value::Kind Value::kind() const {
    return static_cast<Kind>(data_.index());
}

double Value::as_double() const {
    if (is_int()) return static_cast<double>(as_int());
    if (is_bool()) return as_bool() ? 1.0 : 0.0;
    return std::get<double>(data_);
}

const Function& Value::as_function() const {
    return *std::get<Callable>(data_).fn;
}

const std::string& Value::function_name() const {
    return *std::get<Callable>(data_).name;
}

const std::string& Value::undefined_hint() const {
    static const std::string empty;
    if (const auto* u = std::get_if<Undefined>(&data_); u && u->hint) return *u->hint;
    return empty;
}

bool Value::truthy() const {
    switch (kind()) {
        case Kind::undefined:
        case Kind::none:
            return false;
        case Kind::boolean:
            return as_bool();
        case Kind::integer:
            return as_int() != 0;
        case Kind::floating:
            return std::get<double>(data_) != 0.0;
        case Kind::string:
            return !as_string().empty();
        case Kind::array:
            return !as_array()->empty();
        case Kind::object:
            return !as_object()->items.empty();
        case Kind::function:
            return true;
    }
    return false;
}

std::string python_float_repr(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
    // Shortest round-trip digits, then Python's layout: fixed notation for decimal
    // exponents in [-4, 16), else d.ddde+XX.
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    const std::string_view sci(buf, static_cast<size_t>(r.ptr - buf));
    const size_t e = sci.find('e');
    std::string_view mant = sci.substr(0, e);
    int exp = 0;
    std::from_chars(sci.data() + e + 1 + (sci[e + 1] == '+' ? 1 : 0), sci.data() + sci.size(), exp);
    std::string sign;
    if (!mant.empty() && mant.front() == '-') {
        sign = "-";
        mant.remove_prefix(1);
    }
    std::string digits;
    for (const char c : mant)
        if (c != '.') digits += c;
    if (exp >= -4 && exp < 16) {
        std::string out;
        if (exp < 0) {
            out = "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
        } else {
            const auto int_len = static_cast<size_t>(exp) + 1;
            if (digits.size() <= int_len) {
                out = digits + std::string(int_len - digits.size(), '0') + ".0";
            } else {
                out = digits.substr(0, int_len) + "." + digits.substr(int_len);
            }
        }
        return sign + out;
    }
    std::string out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    return fmt::format("{}{}e{}{:02d}", sign, out, exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
}

namespace {

std::string python_string_repr(const std::string& s) {
    // Python prefers single quotes unless the text has one and no double quote.
    const bool use_double = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
    const char q = use_double ? '"' : '\'';
    std::string out(1, q);
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (c == q || c == '\\') {
            out += '\\';
            out += c;
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (u < 0x20 || u == 0x7f) {
            out += fmt::format("\\x{:02x}", u);
        } else {
            out += c;
        }
    }
    out += q;
    return out;
}

void json_string(std::string& out, const std::string& s) {
    out += '"';
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            case '\b':
                out += "\\b";
                break;
            case '\f':
                out += "\\f";
                break;
            default:
                if (u < 0x20)
                    out += fmt::format("\\u{:04x}", u);
                else
                    out += c;
        }
    }
    out += '"';
}

void to_json_into(const Value& v, std::string& out, int indent, std::string_view item_sep, std::string_view key_sep,
                  int depth) {
    if (depth > 512) fail(INLAY_ERR_BAD_FORMAT, "tojson: value nested too deeply");
    auto newline = [&](int level) {
        if (indent < 0) return;
        out += '\n';
        out.append(static_cast<size_t>(indent) * static_cast<size_t>(level), ' ');
    };
    switch (v.kind()) {
        case Value::Kind::none:
            out += "null";
            return;
        case Value::Kind::boolean:
            out += v.as_bool() ? "true" : "false";
            return;
        case Value::Kind::integer:
            out += std::to_string(v.as_int());
            return;
        case Value::Kind::floating: {
            const double d = v.as_double();
            out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d < 0 ? "-Infinity" : "Infinity") : python_float_repr(d);
            return;
        }
        case Value::Kind::string:
            json_string(out, v.as_string());
            return;
        case Value::Kind::array: {
            const Array& a = *v.as_array();
            out += '[';
            for (size_t i = 0; i < a.size(); ++i) {
                if (i) out += item_sep;
                newline(depth + 1);
                to_json_into(a[i], out, indent, item_sep, key_sep, depth + 1);
            }
            if (!a.empty()) newline(depth);
            out += ']';
            return;
        }
        case Value::Kind::object: {
            const Object& o = *v.as_object();
            out += '{';
            for (size_t i = 0; i < o.items.size(); ++i) {
                if (i) out += item_sep;
                newline(depth + 1);
                json_string(out, o.items[i].first);
                out += key_sep;
                to_json_into(o.items[i].second, out, indent, item_sep, key_sep, depth + 1);
            }
            if (!o.items.empty()) newline(depth);
            out += '}';
            return;
        }
        case Value::Kind::undefined:
        case Value::Kind::function:
            break;
    }
    fail(INLAY_ERR_BAD_FORMAT, "tojson: a value of type {} is not JSON serializable", v.type_name());
}

void repr_into(const Value& v, std::string& out, int depth) {
    if (depth > 512) fail(INLAY_ERR_BAD_FORMAT, "value nested too deeply to print");
    switch (v.kind()) {
        case Value::Kind::string:
            out += python_string_repr(v.as_string());
            return;
        case Value::Kind::array: {
            out += '[';
            const Array& a = *v.as_array();
            for (size_t i = 0; i < a.size(); ++i) {
                if (i) out += ", ";
                repr_into(a[i], out, depth + 1);
            }
            out += ']';
            return;
        }
        case Value::Kind::object: {
            out += '{';
            const Object& o = *v.as_object();
            for (size_t i = 0; i < o.items.size(); ++i) {
                if (i) out += ", ";
                out += python_string_repr(o.items[i].first);
                out += ": ";
                repr_into(o.items[i].second, out, depth + 1);
            }
            out += '}';
            return;
        }
        default:
            out += v.str();
            return;
    }
}

}  // namespace

std::string Value::str() const {
    switch (kind()) {
        case Kind::undefined:
            return {};
        case Kind::none:
            return "None";
        case Kind::boolean:
            return as_bool() ? "True" : "False";
        case Kind::integer:
            return std::to_string(as_int());
        case Kind::floating:
            return python_float_repr(std::get<double>(data_));
        case Kind::string:
            return as_string();
        case Kind::array:
        case Kind::object:
            return repr();
        case Kind::function:
            return "<function " + function_name() + ">";
    }
    return {};
}

std::string Value::repr() const {
    std::string out;
    repr_into(*this, out, 0);
    return out;
}

std::string Value::to_json(int indent, std::string_view item_sep, std::string_view key_sep) const {
    std::string out;
    to_json_into(*this, out, indent, item_sep, key_sep, 0);
    return out;
}

std::string_view Value::type_name() const {
    switch (kind()) {
        case Kind::undefined:
            return "undefined";
        case Kind::none:
            return "none";
        case Kind::boolean:
            return "boolean";
        case Kind::integer:
            return "integer";
        case Kind::floating:
            return "float";
        case Kind::string:
            return "string";
        case Kind::array:
            return "list";
        case Kind::object:
            return as_object()->is_namespace ? "namespace" : "dict";
        case Kind::function:
            return "function";
    }
    return "?";
}

bool equals(const Value& a, const Value& b) {
    const bool a_num = a.is_number() || a.is_bool();
    const bool b_num = b.is_number() || b.is_bool();
    if (a_num && b_num) {
        if ((a.is_int() || a.is_bool()) && (b.is_int() || b.is_bool())) {
            const int64_t x = a.is_bool() ? a.as_bool() : a.as_int();
            const int64_t y = b.is_bool() ? b.as_bool() : b.as_int();
            return x == y;
        }
        return a.as_double() == b.as_double();
    }
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case Value::Kind::undefined:
        case Value::Kind::none:
            return true;
        case Value::Kind::string:
            return a.as_string() == b.as_string();
        case Value::Kind::array: {
            const Array& x = *a.as_array();
            const Array& y = *b.as_array();
            if (x.size() != y.size()) return false;
            for (size_t i = 0; i < x.size(); ++i)
                if (!equals(x[i], y[i])) return false;
            return true;
        }
        case Value::Kind::object: {
            const Object& x = *a.as_object();
            const Object& y = *b.as_object();
            if (x.items.size() != y.items.size()) return false;
            for (const auto& [k, v] : x.items) {
                const Value* w = y.find(k);
                if (!w || !equals(v, *w)) return false;
            }
            return true;
        }
        case Value::Kind::function:
            return &a.as_function() == &b.as_function();
        default:
            return false;
    }
}

}  // namespace inlay::tmpl
