// llama.cpp as a reference: the tools of tools/llamacpp (built against llama.cpp's
// prebuilt libraries, see INLAY_LLAMACPP_DIR) and the files that come with them.
#pragma once

#include <filesystem>
#include <string>

#include "support/test_paths.h"

namespace inlay::test {

// Why llama.cpp's tools are unavailable in this build, or "" when they are built.
std::string llamacpp_missing();
// A tool of tools/llamacpp: "logits", "tokenize" or "quantize" (llamacpp-NAME).
std::filesystem::path llamacpp_tool(const std::string& name);
// llama.cpp's models/ folder at the libraries' commit: ggml-vocab-*.gguf with their
// .inp/.out vectors (INLAY_LLAMACPP_MODELS in the environment overrides it).
std::filesystem::path llamacpp_models_dir();
// Writes a random-weight GGUF with llamacpp-peer's make_tiny_gguf.py; `args` are its
// options (e.g. "--arch qwen3 --embd 576"). Throws when the script fails.
void make_tiny_gguf(const std::filesystem::path& out, const std::string& args);
// The script itself (INLAY_LLAMACPP_DIR/make_tiny_gguf.py).
std::filesystem::path make_tiny_gguf_script();

}  // namespace inlay::test

// Skips the rest of the current test case (INLAY_SKIP) when the tools are not built.
#define INLAY_REQUIRE_LLAMACPP_OR_SKIP()                                              \
    do {                                                                              \
        if (const std::string why_ = ::inlay::test::llamacpp_missing(); !why_.empty()) \
            INLAY_SKIP(why_);                                                         \
    } while (0)
