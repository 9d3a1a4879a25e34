// Builtin filters, tests, methods and global functions of the Jinja-subset engine:
// those of Jinja2 and of Python's str/dict that chat templates use (see
// filter_names()/test_names()). Unknown names throw INLAY_ERR_UNSUPPORTED.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "template/operations.h"
#include "template/value.h"

namespace inlay::tmpl {

// input | name(args...)
Value apply_filter(const std::string& name, const Value& input, CallArgs& args, const Limits& limits);
// input is name(args...)
bool apply_test(const std::string& name, const Value& input, CallArgs& args);
bool has_test(std::string_view name);

// A method of obj (str methods on strings, items/keys/values/get on dicts) bound to
// it, or undefined when obj has no such method.
Value bound_method(const Value& obj, const std::string& name, const Limits& limits);

// Global functions: range, namespace, dict, raise_exception, strftime_now.
// raise_exception throws INLAY_ERR_INVALID_ARGUMENT with the template's message
// (the template rejects its input).
Object builtin_globals(const Limits& limits);

std::vector<std::string_view> filter_names();
std::vector<std::string_view> test_names();

}  // namespace inlay::tmpl
