// `inlay bench --draft MODEL | --lookup`: decode speed with and without speculative
// decoding, in the same sitting, rounds interleaved.
#pragma once

#include <cstdint>
#include <string>

#include "speculation_option.h"

namespace inlay::cli {

struct SpeculativeBench {
    std::string model_path;
    SpeculationArgs speculation;
    std::string text;          // the prompt (a repetitive one shows prompt lookup at work)
    int32_t n_gen = 128;       // tokens generated per run (greedy, EOS ignored)
    int32_t repetitions = 5;
    int32_t n_threads = 0;
    std::string device = "auto";
    bool json = false;
};

// Runs the benchmark and prints its report; returns the exit code. `parsed` tells which
// speculation options were given.
int run_speculative_bench(const SpeculativeBench& bench, const ParsedArgs& parsed);

}  // namespace inlay::cli
