// The syntax tree of a parsed template. Built once by the parser, immutable after.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "template/lexer.h"
#include "template/value.h"

namespace inlay::tmpl {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
    enum class Kind {
        literal,    // value
        name,       // name
        list,       // items
        tuple,      // items (evaluates to a list)
        dict,       // items as key, value, key, value...
        attribute,  // items[0].name
        subscript,  // items[0][items[1]]
        slice,      // items[0][items[1]:items[2]:items[3]] (null parts absent)
        call,       // items[0](items[1..], keywords)
        filter,     // items[0] | name(items[1..], keywords)
        test,       // items[0] is [not] name(items[1..])
        unary,      // op items[0]: "not", "-", "+"
        binary,     // items[0] op items[1]: arithmetic, ~, comparisons, in, not in
        logical,    // items[0] and/or items[1] (short-circuit)
        condition,  // items[0] if items[1] else items[2] (items[2] may be null)
    };
    Kind kind;
    Location where;
    Value value;
    std::string name;  // name, attribute, filter, test, operator
    bool negated = false;
    std::vector<ExprPtr> items;
    std::vector<std::pair<std::string, ExprPtr>> keywords;
};

struct Node;
using Body = std::vector<std::unique_ptr<Node>>;

// A filter application of {% filter %} and {% set x | f %} blocks.
struct FilterCall {
    std::string name;
    Location where;
    std::vector<ExprPtr> args;
    std::vector<std::pair<std::string, ExprPtr>> keywords;
};

struct Node {
    enum class Kind {
        text,          // text
        output,        // {{ expr }}
        if_chain,      // branches (condition, body), else_body
        for_loop,      // targets in expr [if condition]: body, else_body
        set,           // targets = expr, or target.attribute = expr (attribute non-empty)
        set_block,     // {% set targets[0] | filters %}body{% endset %}
        macro,         // {% macro name(params) %}body{% endmacro %}
        call_block,    // {% call expr %}body{% endcall %}: caller() renders body
        filter_block,  // {% filter filters %}body{% endfilter %}
        break_loop,
        continue_loop,
    };
    Kind kind;
    Location where;
    std::string text;       // text, macro name
    std::string attribute;  // set: namespace attribute
    std::vector<std::string> targets;
    ExprPtr expr;
    ExprPtr condition;
    std::vector<std::pair<ExprPtr, Body>> branches;
    Body body;
    Body else_body;
    std::vector<std::pair<std::string, ExprPtr>> params;  // macro: name, default (may be null)
    std::vector<FilterCall> filters;
};

}  // namespace inlay::tmpl
