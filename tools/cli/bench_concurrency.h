// `inlay bench --concurrency N`: N sessions generating at once (continuous batching).
#pragma once

#include <cstdint>
#include <string>

namespace inlay::cli {

struct ConcurrencyBench {
    std::string model_path;
    int32_t concurrency = 1;  // sessions (and threads) generating at once
    int32_t n_gen = 64;       // tokens each session generates (greedy, EOS ignored)
    int32_t n_prompt = 8;     // tokens of each session's prompt (all prompts differ)
    int32_t repetitions = 5;
    int32_t n_threads = 0;    // compute threads; 0 = all cores
    std::string device = "auto";  // --device
    bool json = false;
};

// Runs the benchmark and prints its report; returns the exit code.
int run_concurrency_bench(const ConcurrencyBench& bench);

}  // namespace inlay::cli
