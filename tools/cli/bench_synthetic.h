// `inlay bench --synthetic SHAPE --dtype T`: a named model shape with random weights made
// in memory (no download), run through the executor of the chosen device: prompt
// processing, batch-1 decode (with the bytes of weights and KV it reads per token, and
// the bandwidth that makes), and batched decode.
#pragma once

#include <cstdint>
#include <string>

namespace inlay::cli {

struct SyntheticBench {
    std::string shape;            // llama3-8b, qwen3-8b, ...
    std::string dtype = "q4_k";   // weight type of the matrices
    std::string device = "auto";
    int32_t n_prompt = 2048;      // pp: one prompt of this many tokens (0 skips)
    int32_t n_gen = 64;           // tg: decode steps per run (0 skips)
    int32_t batch = 64;           // tgB: sequences decoding together (0 or 1 skips)
    int32_t repetitions = 3;
    int32_t n_threads = 0;
    bool json = false;
};

int run_synthetic_bench(const SyntheticBench& bench);

}  // namespace inlay::cli
