// The builtin tests, str/dict methods and global functions.
#include "template/builtins.h"

#include <algorithm>
#include <ctime>
#include <map>

#include "core/utf8.h"
#include "template/builtin_support.h"

namespace inlay::tmpl {

namespace {

// ---- tests ----

using TestFn = bool (*)(const Value& in, Args& a);

bool cmp_arg(const Value& in, Args& a, std::string_view op) {
    const Value other = a.required(0, "other");
    a.done(1);
    return binary_op(op, in, other, Limits{}).truthy();
}

const std::map<std::string, TestFn, std::less<>>& tests() {
    static const std::map<std::string, TestFn, std::less<>> table = {
        {"defined",
         [](const Value& v, Args& a) {
             a.done(0);
             return !v.is_undefined();
         }},
        {"undefined",
         [](const Value& v, Args& a) {
             a.done(0);
             return v.is_undefined();
         }},
        {"none",
         [](const Value& v, Args& a) {
             a.done(0);
             return v.is_none();
         }},
        {"string",
         [](const Value& v, Args& a) {
             a.done(0);
             return v.is_string();
         }},
        {"number",
         [](const Value& v, Args& a) {
             a.done(0);
             return v.is_number();
         }},
        {"integer",
         [](const Value& v, Args& a) {
             a.done(0);
             return v.is_int();
         }},
        {"float",
         [](const Value& v, Args& a) {
             a.done(0);
             return v.is_float();
         }},
        {"boolean",
         [](const Value& v, Args& a) {
             a.done(0);
             return v.is_bool();
         }},
        {"true",
         [](const Value& v, Args& a) {
             a.done(0);
             return v.is_bool() && v.as_bool();
         }},
        {"false",
         [](const Value& v, Args& a) {
             a.done(0);
             return v.is_bool() && !v.as_bool();
         }},
        {"mapping",
         [](const Value& v, Args& a) {
             a.done(0);
             return v.is_object();
         }},
        {"iterable",
         [](const Value& v, Args& a) {
             a.done(0);
             return v.is_array() || v.is_object() || v.is_string();
         }},
        {"sequence",
         [](const Value& v, Args& a) {
             a.done(0);
             return v.is_array() || v.is_object() || v.is_string();
         }},
        {"callable",
         [](const Value& v, Args& a) {
             a.done(0);
             return v.is_function();
         }},
        {"odd",
         [](const Value& v, Args& a) {
             a.done(0);
             return as_integer(v, "odd") % 2 != 0;
         }},
        {"even",
         [](const Value& v, Args& a) {
             a.done(0);
             return as_integer(v, "even") % 2 == 0;
         }},
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
        {"escaped",
         [](const Value&, Args& a) {
             a.done(0);
             return false;
         }},
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
                if (!is_ascii_alpha(c)) continue;
                cased = true;
                if ((name == "islower") != (c >= 'a' && c <= 'z')) return Value(false);
            }
            return Value(cased);
        }
        // ASCII classes; other characters count as neither digits nor letters.
        return Value(std::all_of(s.begin(), s.end(), [&](char c) {
            const bool digit = c >= '0' && c <= '9';
            if (name == "isdigit") return digit;
            if (name == "isalpha") return is_ascii_alpha(c);
            return digit || is_ascii_alpha(c);
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
        if (name == "keys")
            out.emplace_back(k);
        else if (name == "values")
            out.push_back(v);
        else
            out.emplace_back(Array{Value(k), v});
    }
    return Value(std::move(out));
}

constexpr std::string_view k_string_methods[] = {
    "strip",      "lstrip",  "rstrip",  "split",      "startswith", "endswith", "replace",
    "upper",      "lower",   "title",   "capitalize", "find",       "count",    "join",
    "splitlines", "isdigit", "isalpha", "isalnum",    "isspace",    "islower",  "isupper"};
constexpr std::string_view k_dict_methods[] = {"items", "keys", "values", "get"};

}  // namespace

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
    g.set("namespace",
          Value::function([make_object](CallArgs& args) { return make_object(args, true, "namespace"); }, "namespace"));
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
                                  const size_t n =
                                      format.size() < 200 ? std::strftime(buf, sizeof buf, format.c_str(), &tm) : 0;
                                  return Value(std::string(buf, n));
                              },
                              "strftime_now"));
    return g;
}

std::vector<std::string_view> test_names() {
    std::vector<std::string_view> out;
    for (const auto& [k, _] : tests()) out.push_back(k);
    return out;
}

}  // namespace inlay::tmpl
