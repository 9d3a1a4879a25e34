// Template: a Jinja2-subset template engine written for chat templates (Hugging Face
// tokenizer_config.json "chat_template", GGUF tokenizer.chat_template).
//
//   tmpl::Template t("{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}");
//   tmpl::Object ctx;
//   ctx.set("messages", tmpl::Value::from_json(messages_json));
//   std::string text = t.render(ctx);
//
// Supported: {{ }}, {% if/elif/else %}, {% for %} (tuple targets, inline `if`, else,
// loop.index/index0/revindex/revindex0/first/last/length/previtem/nextitem/cycle,
// break/continue), {% set %} (names, tuples, namespace attributes, blocks),
// {% macro %} and {% call %}, {% filter %}, {% raw %}, {% generation %}, comments and
// whitespace control (trim_blocks and lstrip_blocks on by default, as in
// transformers); literals, lists, dicts, tuples, attribute/subscript/slice access,
// calls with keywords, filters, tests, `not and or`, comparisons, `in`, `~`,
// arithmetic, conditional expressions; the filters, tests and str/dict methods of
// builtins.h; globals range, namespace, dict, raise_exception, strftime_now.
// Undefined values follow Jinja's default: they print as "" and are false, but
// reading an attribute of one is an error.
//
// Errors are inlay::Error (tmpl::TemplateError) whose message starts with
// "NAME:LINE:COLUMN:": syntax errors INLAY_ERR_BAD_FORMAT, unknown filters/tests and
// unsupported statements INLAY_ERR_UNSUPPORTED, raise_exception
// INLAY_ERR_INVALID_ARGUMENT, evaluation errors and exceeded limits (output size,
// evaluation steps, recursion) INLAY_ERR_BAD_FORMAT. Rendering never loops forever.
//
// A Template is immutable after construction; render() is const and may run from
// several threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "template/ast.h"
#include "template/operations.h"
#include "template/value.h"

namespace inlay::tmpl {

struct TemplateOptions {
    std::string name = "template";  // prefixes error messages
    bool trim_blocks = true;
    bool lstrip_blocks = true;
    Limits limits;                               // sizes of strings and lists built
    size_t max_output_bytes = size_t{16} << 20;  // of the rendered text
    uint64_t max_steps = 10'000'000;             // nodes, expressions and loop iterations
    int max_nesting = 64;                        // of blocks and expressions in the source
    int max_render_depth = 400;                  // of evaluation, macro calls included
};

class Template {
public:
    // Parses `source`. Throws TemplateError on syntax errors.
    explicit Template(std::string_view source, TemplateOptions options = {});

    // Renders with `context` (its names shadow the builtin globals).
    [[nodiscard]] std::string render(const Object& context) const;

    [[nodiscard]] const TemplateOptions& options() const { return options_; }

private:
    TemplateOptions options_;
    std::shared_ptr<const Body> body_;
};

}  // namespace inlay::tmpl
