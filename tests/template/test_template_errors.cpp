// Malformed and hostile templates: clear errors with line and column, the right
// status, and bounded work (steps, output, recursion, sizes); never a crash or hang.
#include <catch2/catch.hpp>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>

#include "support/test_paths.h"
#include "template/chat_template.h"
#include "template/template_test_util.h"

using namespace inlay;
using json = nlohmann::ordered_json;

namespace {

void expect_error(const std::string& source, inlay_status status, const std::string& fragment,
                  const json& context = json::object()) {
    const test::Outcome got = test::try_render(source, context);
    INFO("template: " << source << "\nmessage: " << got.text);
    CHECK(got.status == status);
    CHECK_THAT(got.text, Catch::Contains(fragment));
}

}  // namespace

TEST_CASE("syntax errors name line and column", "[template][errors]") {
    expect_error("{{ x", INLAY_ERR_BAD_FORMAT, "template:1:1: unterminated '{{'");
    expect_error("ab\n  {% if x %}", INLAY_ERR_BAD_FORMAT, "missing '{% endif %}'");
    expect_error("{% endfor %}", INLAY_ERR_BAD_FORMAT, "template:1:4: unexpected '{% endfor %}'");
    expect_error("line\n{{ 1 + }}", INLAY_ERR_BAD_FORMAT, "template:2:8: expected an expression, found '}}'");
    expect_error("{% frobnicate %}", INLAY_ERR_BAD_FORMAT, "unknown statement 'frobnicate'");
    expect_error("{% include 'x.j2' %}", INLAY_ERR_UNSUPPORTED, "the 'include' statement is not supported");
    expect_error("{{ 'abc }}", INLAY_ERR_BAD_FORMAT, "template:1:4: unterminated string");
    expect_error("{# never closed", INLAY_ERR_BAD_FORMAT, "unterminated comment");
    expect_error("{{ a $ b }}", INLAY_ERR_BAD_FORMAT, "template:1:6: unexpected character '$'");
    expect_error("{{ 99999999999999999999 }}", INLAY_ERR_BAD_FORMAT, "integer too large");
    expect_error("{{ '\\ud800' }}", INLAY_ERR_BAD_FORMAT, "invalid \\u escape");
    expect_error("{% break %}", INLAY_ERR_BAD_FORMAT, "'break' outside a for loop");
    expect_error("{% for x in y %}{% macro m() %}{% break %}{% endmacro %}{% endfor %}", INLAY_ERR_BAD_FORMAT,
                 "'break' outside a for loop");
    expect_error("{% raw %}never ends", INLAY_ERR_BAD_FORMAT, "unterminated {% raw %}");
    expect_error("{% set %}", INLAY_ERR_BAD_FORMAT, "expected a name");
    expect_error("{{ f(a=1, 2) }}", INLAY_ERR_BAD_FORMAT, "positional argument follows keyword");
}

TEST_CASE("evaluation errors name the place and the cause", "[template][errors]") {
    expect_error("{{ x | frobnicate }}", INLAY_ERR_UNSUPPORTED, "template:1:6: unknown filter 'frobnicate'");
    expect_error("\n {{ x is frobnicated }}", INLAY_ERR_UNSUPPORTED, "template:2:7: unknown test 'frobnicated'");
    expect_error("{{ a.b }}", INLAY_ERR_BAD_FORMAT, "'a' is undefined");
    expect_error("{{ a.b.c }}", INLAY_ERR_BAD_FORMAT, "'dict' object has no attribute 'b'", {{"a", json::object()}});
    expect_error("{{ 1 + 'a' }}", INLAY_ERR_BAD_FORMAT, "unsupported operand types for +: 'integer' and 'string'");
    expect_error("{{ 1 // 0 }}", INLAY_ERR_BAD_FORMAT, "division or modulo by zero");
    expect_error("{{ 2 ** 200 }}", INLAY_ERR_BAD_FORMAT, "integer overflow");
    expect_error("{{ 9223372036854775807 + 1 }}", INLAY_ERR_BAD_FORMAT, "integer overflow");
    expect_error("{{ 'a' < 1 }}", INLAY_ERR_BAD_FORMAT, "cannot compare 'string' with 'integer'");
    expect_error("{{ x() }}", INLAY_ERR_BAD_FORMAT, "'x' is undefined");
    expect_error("{{ 'a'() }}", INLAY_ERR_BAD_FORMAT, "not callable");
    expect_error("{{ 'a'.strip(1, 2) }}", INLAY_ERR_BAD_FORMAT, "takes at most 1 arguments");
    expect_error("{{ [1] | join(sep=',') }}", INLAY_ERR_BAD_FORMAT, "unexpected argument 'sep'");
    expect_error("{% set a, b = [1] %}", INLAY_ERR_BAD_FORMAT, "cannot unpack 1 values into 2 names");
    expect_error("{% set x = 1 %}{% set x.y = 2 %}", INLAY_ERR_BAD_FORMAT, "only namespace() objects");
    expect_error("{% for x in 5 %}{% endfor %}", INLAY_ERR_BAD_FORMAT, "'integer' object is not iterable");
    expect_error("{{ '%s' % 1 }}", INLAY_ERR_UNSUPPORTED, "string formatting with '%'");
    expect_error("{{ [1][::0] }}", INLAY_ERR_BAD_FORMAT, "slice step cannot be zero");
    expect_error("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}", INLAY_ERR_BAD_FORMAT,
                 "m() takes 1 arguments (2 given)");
}

TEST_CASE("raise_exception gives INVALID_ARGUMENT with the template's message", "[template][errors]") {
    expect_error("{% if messages | length == 0 %}{{ raise_exception('No messages!') }}{% endif %}",
                 INLAY_ERR_INVALID_ARGUMENT, "template:1:35: the chat template rejects its input: No messages!",
                 {{"messages", json::array()}});
}

TEST_CASE("runaway templates stop at their limits", "[template][errors]") {
    expect_error("{% for i in range(1000000) %}{% for j in range(1000000) %}{% endfor %}{% endfor %}",
                 INLAY_ERR_BAD_FORMAT, "steps (a runaway loop?)");
    expect_error("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", INLAY_ERR_BAD_FORMAT, "runaway macro recursion");
    expect_error("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}", INLAY_ERR_BAD_FORMAT,
                 "the rendered text exceeds");
    expect_error("{{ 'x' * 1000000000000 }}", INLAY_ERR_BAD_FORMAT, "exceeds the limit");
    expect_error("{{ range(1000000000000) | length }}", INLAY_ERR_BAD_FORMAT, "exceeds the limit");
    expect_error("{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
                 INLAY_ERR_BAD_FORMAT, "exceeds the limit");
    expect_error("{{ " + std::string(10000, '(') + "1" + std::string(10000, ')') + " }}", INLAY_ERR_BAD_FORMAT,
                 "nested more than");
    std::string deep;
    for (int i = 0; i < 5000; ++i) deep += "{% if true %}";
    expect_error(deep, INLAY_ERR_BAD_FORMAT, "nested more than");
    expect_error("{{ " + std::string(5000, '-') + "1 }}", INLAY_ERR_BAD_FORMAT, "nested more than");
}

TEST_CASE("values that hold themselves are freed with the render", "[template][errors]") {
    // The context's `token` keeps `alive` alive for as long as a value holds it; each
    // template puts it into a namespace that ends up holding itself.
    const std::string make = "{% set ns = namespace(t=token) %}";
    const struct {
        std::string source, output;
    } cases[] = {
        {make + "{% set ns.me = ns %}{{ ns.me.me.t is defined }}", "True"},
        {make + "{% set ns.l = [dict(n=ns)] %}{{ ns.l[0].n.t is defined }}", "True"},
        {make + "{% set d = dict(n=ns) %}{% set ns.g = d.get %}{{ ns.g('n').t is defined }}", "True"},
        {make + "{% for x in [ns, 1] %}{% if loop.first %}{% set ns.l = loop %}{% endif %}{% endfor %}"
                "{{ ns.l.previtem.t is defined }}{{ ns.l.index }}",
         "True2"},
        {"{% for i in range(100) %}" + make + "{% set ns.me = ns %}{% endfor %}done", "done"},
        {make + "{% set other = namespace(ns=ns) %}{% set ns.other = other %}{{ raise_exception('no') }}", ""},
    };
    for (const auto& c : cases) {
        INFO("template: " << c.source);
        auto alive = std::make_shared<int>(0);
        const std::weak_ptr<int> watch = alive;
        {
            tmpl::Object context;
            context.set("token",
                        tmpl::Value::function([alive](tmpl::CallArgs&) { return tmpl::Value(*alive); }, "token"));
            alive.reset();
            const tmpl::Template t(c.source);
            if (c.output.empty()) {
                CHECK_THROWS_AS((void)t.render(context), Error);
            } else {
                CHECK(t.render(context) == c.output);
            }
            CHECK_FALSE(watch.expired());  // the context still holds it
        }
        CHECK(watch.expired());
    }
}

TEST_CASE("templates must be valid UTF-8, and so must context strings", "[template][errors]") {
    CHECK(test::try_render("ab\xff").status == INLAY_ERR_BAD_FORMAT);
    CHECK_THAT(test::try_render("ab\xff").text, Catch::Contains("not valid UTF-8"));
    const ChatTemplate t("{{ messages[0].content }}", "", "");
    CHECK_THROWS_AS(t.apply({{"user", "bad \xC3"}}, {}), Error);
    try {
        (void)t.apply({{"user", "bad \xC3"}}, {});
    } catch (const Error& e) {
        CHECK(e.status() == INLAY_ERR_INVALID_UTF8);
    }
}

// Random edits of the real Qwen3 template (the largest one at hand): every variant
// either renders or fails with an inlay::Error; nothing else may escape (and ASan
// checks the memory).
TEST_CASE("mutated chat templates never crash", "[template][errors][fuzz]") {
    const auto path = test::testdata("tokenizers/qwen3/tokenizer_config.json");
    INLAY_REQUIRE_FILE_OR_SKIP(path);
    const std::string source = test::read_json(path).at("chat_template").get<std::string>();
    const json messages = json::array({{{"role", "system"}, {"content", "S"}},
                                       {{"role", "user"}, {"content", "U"}},
                                       {{"role", "assistant"}, {"content", "<think>\nT\n</think>\n\nA"}},
                                       {{"role", "user"}, {"content", "V"}}});
    std::mt19937 rng(12345);
    const std::string alphabet = "{}%#-+|()[].,:'\"~=<>!*/ \nabx0";
    size_t rendered = 0, failed = 0;
    for (int i = 0; i < 1500; ++i) {
        std::string s = source;
        const int edits = 1 + static_cast<int>(rng() % 4);
        for (int k = 0; k < edits; ++k) {
            const size_t at = rng() % (s.size() + 1);
            switch (rng() % 3) {
                case 0:
                    s.insert(at, 1, alphabet[rng() % alphabet.size()]);
                    break;
                case 1:
                    if (at < s.size()) s.erase(at, 1 + rng() % 8);
                    break;
                default:
                    if (at < s.size()) s[at] = alphabet[rng() % alphabet.size()];
            }
        }
        try {
            const ChatTemplate t(s, "", "<|im_end|>");
            ChatTemplateInputs in;
            in.enable_thinking = (i % 2) == 0;
            (void)t.apply_json(messages, in);
            ++rendered;
        } catch (const Error&) {
            ++failed;
        }
    }
    CHECK(rendered + failed == 1500);
    CHECK(failed > 0);
    CHECK(rendered > 0);
}
