#include "support/llamacpp.h"

#include <cstdlib>
#include <stdexcept>

namespace inlay::test {

std::string llamacpp_missing() {
    const std::string missing = INLAY_LLAMACPP_MISSING;
    if (!missing.empty()) return missing;
    for (const char* name : {"logits", "tokenize", "quantize"}) {
        if (!std::filesystem::exists(llamacpp_tool(name)))
            return llamacpp_tool(name).string() + " is not built (target llamacpp_tools)";
    }
    return "";
}

std::filesystem::path llamacpp_tool(const std::string& name) {
    return std::filesystem::path(INLAY_LLAMACPP_BIN_DIR) / ("llamacpp-" + name);
}

std::filesystem::path llamacpp_models_dir() {
    if (const char* env = std::getenv("INLAY_LLAMACPP_MODELS"); env && *env) return env;
    return INLAY_LLAMACPP_MODELS_DIR;
}

std::filesystem::path make_tiny_gguf_script() {
    return std::filesystem::path(INLAY_LLAMACPP_DIR) / "make_tiny_gguf.py";
}

void make_tiny_gguf(const std::filesystem::path& out, const std::string& args) {
    const std::filesystem::path log = out.string() + ".log";
    const std::string cmd = "python3 '" + make_tiny_gguf_script().string() + "' '" + out.string() + "' " + args +
                            " > '" + log.string() + "' 2>&1";
    if (std::system(cmd.c_str()) != 0) throw std::runtime_error(cmd + " failed: " + read_file(log));
}

}  // namespace inlay::test
