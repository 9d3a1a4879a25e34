// Value: the dynamic value of the Jinja-subset template engine, with Python's
// semantics where templates rely on them (truthiness, equality, str()/repr(), JSON).
// Lists and dicts are shared by reference, as in Python; dicts keep insertion order.
//
// Values are not thread-safe; one render uses them from one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace inlay::tmpl {

class Value;
using Array = std::vector<Value>;

// An insertion-ordered string-keyed map. Namespaces (namespace()) are objects whose
// attributes `set` may assign.
struct Object {
    std::vector<std::pair<std::string, Value>> items;
    bool is_namespace = false;

    [[nodiscard]] const Value* find(std::string_view key) const;
    Value* find(std::string_view key);
    void set(std::string key, Value value);
};

// Arguments of a call: positional, then keyword.
struct CallArgs {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keyword;
};

// A builtin function, a bound method or a macro. Throws inlay::Error on failure.
using Function = std::function<Value(CallArgs& args)>;

class Value {
public:
    enum class Kind { undefined, none, boolean, integer, floating, string, array, object, function };

    Value() = default;  // undefined
    static Value undefined(std::string hint = {});
    static Value none();
    Value(bool b) : data_(b) {}                                         // NOLINT: implicit by design
    Value(int64_t i) : data_(i) {}                                      // NOLINT
    Value(int i) : data_(static_cast<int64_t>(i)) {}                    // NOLINT
    Value(double d) : data_(d) {}                                       // NOLINT
    Value(std::string s) : data_(std::move(s)) {}                       // NOLINT
    Value(const char* s) : data_(std::string(s)) {}                     // NOLINT
    Value(std::string_view s) : data_(std::string(s)) {}                // NOLINT
    Value(Array a) : data_(std::make_shared<Array>(std::move(a))) {}    // NOLINT
    Value(std::shared_ptr<Array> a) : data_(std::move(a)) {}            // NOLINT
    Value(Object o) : data_(std::make_shared<Object>(std::move(o))) {}  // NOLINT
    Value(std::shared_ptr<Object> o) : data_(std::move(o)) {}           // NOLINT
    static Value function(Function f, std::string name);

    // JSON -> Value (objects keep the order of the JSON value: use ordered_json to keep
    // the source order, as Python does). Strings must be valid UTF-8
    // (INLAY_ERR_INVALID_UTF8).
    static Value from_json(const nlohmann::json& j);
    static Value from_json(const nlohmann::ordered_json& j);

    [[nodiscard]] Kind kind() const;
    [[nodiscard]] bool is_undefined() const { return kind() == Kind::undefined; }
    [[nodiscard]] bool is_none() const { return kind() == Kind::none; }
    [[nodiscard]] bool is_bool() const { return kind() == Kind::boolean; }
    [[nodiscard]] bool is_int() const { return kind() == Kind::integer; }
    [[nodiscard]] bool is_float() const { return kind() == Kind::floating; }
    [[nodiscard]] bool is_number() const { return is_int() || is_float(); }  // bools excluded
    [[nodiscard]] bool is_string() const { return kind() == Kind::string; }
    [[nodiscard]] bool is_array() const { return kind() == Kind::array; }
    [[nodiscard]] bool is_object() const { return kind() == Kind::object; }
    [[nodiscard]] bool is_function() const { return kind() == Kind::function; }

    [[nodiscard]] bool as_bool() const { return std::get<bool>(data_); }
    [[nodiscard]] int64_t as_int() const { return std::get<int64_t>(data_); }
    [[nodiscard]] double as_double() const;  // int or float
    [[nodiscard]] const std::string& as_string() const { return std::get<std::string>(data_); }
    [[nodiscard]] const std::shared_ptr<Array>& as_array() const { return std::get<std::shared_ptr<Array>>(data_); }
    [[nodiscard]] const std::shared_ptr<Object>& as_object() const { return std::get<std::shared_ptr<Object>>(data_); }
    [[nodiscard]] const Function& as_function() const;
    [[nodiscard]] const std::string& function_name() const;
    // The reason an undefined value is undefined ("'x' is undefined"), for messages.
    [[nodiscard]] const std::string& undefined_hint() const;

    // Python truthiness (undefined and none are false).
    [[nodiscard]] bool truthy() const;
    // Python's str(): strings as they are, None -> "None", True -> "True", lists and
    // dicts as their repr(); undefined -> "".
    [[nodiscard]] std::string str() const;
    // Python's repr(): strings quoted.
    [[nodiscard]] std::string repr() const;
    // Python's json.dumps(ensure_ascii=False) with the given indent (< 0: none) and
    // separators; throws INLAY_ERR_BAD_FORMAT for values JSON cannot hold.
    [[nodiscard]] std::string to_json(int indent, std::string_view item_sep, std::string_view key_sep) const;
    // "string", "list", "dict", ... (Jinja's names), for messages.
    [[nodiscard]] std::string_view type_name() const;

private:
    struct Undefined {
        std::shared_ptr<const std::string> hint;
    };
    struct None {};
    struct Callable {
        std::shared_ptr<const Function> fn;
        std::shared_ptr<const std::string> name;
    };
    std::variant<Undefined, None, bool, int64_t, double, std::string, std::shared_ptr<Array>, std::shared_ptr<Object>,
                 Callable>
        data_;
};

// Python ==: numbers by value (1 == 1.0, True == 1), strings, lists and dicts by
// content; values of other kinds are unequal.
bool equals(const Value& a, const Value& b);

// Python's repr() of a float ("1.0", "0.1", "1e+16").
std::string python_float_repr(double d);

}  // namespace inlay::tmpl
