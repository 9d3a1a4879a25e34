// Shared by the llama.cpp reference tools (logits, tokenize, quantize): quiet logging
// and loading llama.cpp's CPU backend from the prebuilt libraries beside the tools.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "ggml-backend.h"
#include "llama.h"

namespace llamacpp_tool {

// Only warnings and errors reach stderr: the tests parse stdout and keep stderr for
// their messages.
inline void quiet_logs() {
    llama_log_set(
        [](ggml_log_level level, const char* text, void*) {
            if (level >= GGML_LOG_LEVEL_WARN) std::fputs(text, stderr);
        },
        nullptr);
}

inline bool cpu_has_amx() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("flags", 0) == 0) return line.find(" amx_tile") != std::string::npos;
    }
    return false;
}

// Loads the best CPU variant of the prebuilt ggml (INLAY_LLAMACPP_LIB_DIR, set by
// tools/llamacpp/CMakeLists.txt). On CPUs with AMX the sapphirerapids variant is left
// out: llama.cpp's AMX kernels of this release die with SIGILL there (see
// ../shared/tools/llamacpp-peer/README.md), so the best AVX-512 variant the CPU runs is
// loaded instead (INLAY_LLAMACPP_NO_AMX=1 in the environment forces that choice).
// Returns false when no variant loads.
inline bool load_cpu_backend() {
    const std::string dir = INLAY_LLAMACPP_LIB_DIR;
    const char* no_amx = std::getenv("INLAY_LLAMACPP_NO_AMX");
    if (cpu_has_amx() || (no_amx && std::string(no_amx) == "1")) {
        // Newest first; ggml refuses (score 0) a variant whose instructions the CPU lacks.
        for (const char* variant : {"zen4", "cooperlake", "cascadelake", "icelake", "skylakex", "cannonlake",
                                    "alderlake", "haswell", "sandybridge", "sse42", "x64"}) {
            const std::string path = dir + "/libggml-cpu-" + variant + ".so";
            if (std::ifstream(path).good() && ggml_backend_load(path.c_str()) != nullptr) return true;
        }
        return false;
    }
    ggml_backend_load_all_from_path(dir.c_str());
    return ggml_backend_dev_count() > 0;
}

// llama.cpp's model loader on the CPU, without progress output.
inline llama_model* load_model(const char* path, bool vocab_only) {
    llama_model_params params = llama_model_default_params();
    params.n_gpu_layers = 0;
    params.vocab_only = vocab_only;
    params.progress_callback = [](float, void*) { return true; };
    return llama_model_load_from_file(path, params);
}

}  // namespace llamacpp_tool
