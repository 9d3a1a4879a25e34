// Helpers of the template tests.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "template/template.h"

namespace inlay::test {

nlohmann::ordered_json read_json(const std::filesystem::path& path);

// Renders `source` with the JSON object `context`.
std::string render(const std::string& source, const nlohmann::ordered_json& context = nlohmann::ordered_json::object(),
                   tmpl::TemplateOptions options = {});

// The status and message of parsing and rendering `source`; INLAY_OK and the output
// when it succeeds.
struct Outcome {
    inlay_status status;
    std::string text;
};
Outcome try_render(const std::string& source, const nlohmann::ordered_json& context = nlohmann::ordered_json::object(),
                   tmpl::TemplateOptions options = {});

}  // namespace inlay::test
