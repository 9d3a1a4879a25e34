// The lexer of the Jinja-subset engine: template source -> tokens. It applies Jinja's
// whitespace control while lexing: "{%-"/"-%}" (and the same for {{ }} and {# #})
// strip whitespace on that side, trim_blocks drops the first newline after a block
// or comment tag, lstrip_blocks drops spaces and tabs between the start of a line
// and a block or comment tag ("{%+" keeps them). {% raw %}...{% endraw %} is text.
// As Jinja, "\r\n" and "\r" become "\n" first and one final newline is dropped.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace inlay::tmpl {

// An error at a place in the template: the message reads "NAME:LINE:COLUMN: ...".
class TemplateError : public Error {
public:
    using Error::Error;
};

struct Location {
    int line = 1;
    int column = 1;  // in bytes, 1-based
};

[[noreturn]] void fail_at(inlay_status status, const std::string& name, Location where, const std::string& message);

enum class TokenKind {
    text,        // template text (after whitespace control)
    expr_open,   // {{
    expr_close,  // }}
    stmt_open,   // {%
    stmt_close,  // %}
    name,
    string,  // text holds the decoded value
    integer,
    floating,
    op,  // + - * / // % ** ~ == != < <= > >= = ( ) [ ] { } , . : |
    end,
};

struct Token {
    TokenKind kind;
    std::string text;
    Location where;
    int64_t int_value = 0;
    double float_value = 0.0;
};

struct LexOptions {
    bool trim_blocks = true;  // Hugging Face's chat-template environment sets both
    bool lstrip_blocks = true;
    bool keep_trailing_newline = false;  // Jinja's default drops one final newline
};

// Throws TemplateError (INLAY_ERR_BAD_FORMAT) for an unterminated tag, string or
// comment, or a character that starts no token. `name` prefixes messages.
std::vector<Token> lex(std::string_view source, const LexOptions& options, const std::string& name);

}  // namespace inlay::tmpl
