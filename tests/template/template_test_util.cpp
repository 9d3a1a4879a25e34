#include "template/template_test_util.h"

#include <fstream>
#include <sstream>

namespace inlay::test {

nlohmann::ordered_json read_json(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path.string());
    std::stringstream ss;
    ss << in.rdbuf();
    return nlohmann::ordered_json::parse(ss.str());
}

std::string render(const std::string& source, const nlohmann::ordered_json& context, tmpl::TemplateOptions options) {
    tmpl::Object ctx;
    for (const auto& [k, v] : context.items()) ctx.set(k, tmpl::Value::from_json(v));
    return tmpl::Template(source, std::move(options)).render(ctx);
}

Outcome try_render(const std::string& source, const nlohmann::ordered_json& context, tmpl::TemplateOptions options) {
    try {
        return {INLAY_OK, render(source, context, std::move(options))};
    } catch (const Error& e) {
        return {e.status(), e.what()};
    }
}

}  // namespace inlay::test
