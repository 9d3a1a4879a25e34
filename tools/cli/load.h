// Model loading for the `inlay` commands, with a progress bar on a terminal.
#pragma once

#include <cstdint>
#include <string>

#include "inlay/inlay.hpp"

namespace inlay::cli {

struct LoadedModel {
    Model model;
    double load_s = 0.0;  // wall-clock seconds of inlay_model_load
};

// The --device option's help line, shared by the commands that load a model.
inline constexpr const char* kDeviceHelp = "where to run: auto (a GPU if usable, else the CPU; default), cpu, cuda or cuda:N";

// Sets options.device / device_index from "auto", "cpu", "cuda" or "cuda:N" (UsageError
// otherwise).
void apply_device(const std::string& text, ModelOptions& options);

// Loads `path` on `device` ("auto", "cpu", "cuda", "cuda:N"; UsageError otherwise).
// Shows a progress bar on stderr when `show_progress` is set and stderr is a terminal.
// kv_budget_bytes: the KV cache's budget (0: the library's default). Throws inlay::Error
// on failure.
LoadedModel load_model(const std::string& path, int32_t n_threads, int32_t context_length, bool show_progress,
                       const std::string& device = "auto", int64_t kv_budget_bytes = 0);

}  // namespace inlay::cli
