// The parser of the Jinja-subset engine: tokens -> syntax tree.
#pragma once

#include <string>
#include <vector>

#include "template/ast.h"
#include "template/lexer.h"

namespace inlay::tmpl {

// Parses a whole template. Syntax errors throw TemplateError with status
// INLAY_ERR_BAD_FORMAT; statements the engine does not implement (include, import,
// extends, block, ...) INLAY_ERR_UNSUPPORTED. Nesting deeper than max_depth
// (expressions and blocks) is an error, so that parsing and rendering never exhaust
// the stack.
Body parse(const std::vector<Token>& tokens, const std::string& name, int max_depth = 64);

}  // namespace inlay::tmpl
