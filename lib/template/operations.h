// The operators and accessors of the Jinja-subset engine, with Python's semantics:
// arithmetic (int overflow is an error, not a wrap), comparisons, `in`, iteration,
// subscripts and slices (strings index by code point), attribute lookup (methods
// first, then dict items, as Jinja's getattr). Errors are inlay::Error with status
// INLAY_ERR_BAD_FORMAT; the renderer adds the template location.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "template/value.h"

namespace inlay::tmpl {

// Bounds on what one render may build, so that a template cannot exhaust memory.
struct Limits {
    size_t max_string_bytes = size_t{16} << 20;
    size_t max_list_items = size_t{1} << 20;
};

// Throws INLAY_ERR_BAD_FORMAT if a string of `bytes` bytes would exceed the limits.
void check_string_size(size_t bytes, const Limits& limits);
void check_list_size(size_t items, const Limits& limits);

// Throws the "is undefined" error for an undefined value (what Jinja's
// StrictUndefined-like operations raise); no-op otherwise.
void require_defined(const Value& v);

// a op b for + - * / // % ** ~ == != < <= > >= in, not in.
Value binary_op(std::string_view op, const Value& a, const Value& b, const Limits& limits);
bool contains(const Value& container, const Value& item);
// Python ordering for numbers, strings and lists; <0, 0, >0.
int compare(const Value& a, const Value& b);

// The items a for loop visits: list items, dict keys, string characters; undefined
// gives none. Other kinds throw.
std::vector<Value> iterate(const Value& v);

// obj[key]; a missing key or index gives undefined (Jinja), an undefined obj throws.
Value subscript(const Value& obj, const Value& key);
// obj[start:stop:step] for lists and strings (parts may be undefined/none).
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step);
// obj.name: a method bound to obj, else a dict item, else undefined.
Value attribute(const Value& obj, const std::string& name, const Limits& limits);

// Code points of UTF-8 text and back, for per-character string operations.
std::vector<uint32_t> code_points(std::string_view s);
std::string from_code_points(const std::vector<uint32_t>& cps, size_t begin, size_t end);
// Python's str.isspace() for one code point.
bool is_python_space(uint32_t cp);

}  // namespace inlay::tmpl
