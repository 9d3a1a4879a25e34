// The engine against Python's jinja2 (tests/template/data/jinja_cases.json, generated
// by make_jinja_cases.py with Hugging Face's chat-template environment), plus the
// features jinja2 cannot render without transformers' extensions.
#include <catch2/catch.hpp>

#include "support/test_paths.h"
#include "template/template_test_util.h"

using namespace inlay;
using json = nlohmann::ordered_json;

TEST_CASE("jinja2 reference cases render identically", "[template]") {
    const json doc = test::read_json(test::source_dir() / "tests/template/data/jinja_cases.json");
    const auto& cases = doc.at("cases");
    REQUIRE(cases.size() >= 60);
    for (const auto& c : cases) {
        const std::string name = c.at("name").get<std::string>();
        const std::string source = c.at("template").get<std::string>();
        INFO("case '" << name << "'\ntemplate: " << source);
        const test::Outcome got = test::try_render(source, c.at("context"));
        CHECK(got.status == INLAY_OK);
        CHECK(got.text == c.at("output").get<std::string>());
    }
}

TEST_CASE("generation blocks render their body (transformers' extension)", "[template]") {
    CHECK(test::render("a{% generation %}b {{ 1 }}{% endgeneration %}c") == "ab 1c");
}

TEST_CASE("context names shadow globals and values convert from JSON", "[template]") {
    CHECK(test::render("{{ range }}", {{"range", "mine"}}) == "mine");
    CHECK(test::render("{{ big }} {{ neg }} {{ f }}", {{"big", 18446744073709551615ull}, {"neg", -5}, {"f", 0.25}}) ==
          "1.8446744073709552e+19 -5 0.25");
    CHECK(test::render("{{ o.b }}{{ o.a }}", {{"o", {{"b", 1}, {"a", 2}}}}) == "12");
}

TEST_CASE("strftime_now formats the current time", "[template]") {
    const std::string year = test::render("{{ strftime_now('%Y') }}");
    REQUIRE(year.size() == 4);
    CHECK(year >= "2024");
}

TEST_CASE("trim_blocks and lstrip_blocks can be switched off", "[template]") {
    tmpl::TemplateOptions options;
    options.trim_blocks = false;
    options.lstrip_blocks = false;
    CHECK(test::render("  {% if true %}\nx{% endif %}", {}, options) == "  \nx");
    CHECK(test::render("  {% if true %}\nx{% endif %}") == "x");
}
