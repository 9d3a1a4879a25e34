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

// Loads `path`. Shows a progress bar on stderr when `show_progress` is set and stderr
// is a terminal. Throws inlay::Error on failure.
LoadedModel load_model(const std::string& path, int32_t n_threads, int32_t context_length, bool show_progress);

}  // namespace inlay::cli
