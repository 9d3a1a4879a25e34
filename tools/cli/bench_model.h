// inlay bench -m MODEL: the llama-bench tests (bench_plan.h) on one loaded model, with the
// decode bandwidth of every tg test and its share of the machine's read bandwidth.
//   pp at depth D: the session first holds D context tokens (untimed), then one batch of
//       P prompt tokens is timed; rate = P / prefill_s.
//   tg at depth D: after the same context, N tokens from a one-token prompt (greedy, EOS
//       ignored); rate = N / (prefill_s + decode_s).
// Every run uses token ids no other run starts with, so the prefix cache cannot serve a
// run from an earlier one; a timed part that reuses cached KV anyway is an error, not a
// figure. One warm-up run of each test, then R measured ones: median, mean, sd.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench_plan.h"

namespace inlay::cli {

struct ModelBench {
    std::string model_path;
    std::vector<BenchTest> tests;
    int32_t repetitions = 5;
    int32_t n_threads = 0;
    std::string device = "auto";
    bool json = false;
    bool measure_membw = false;                   // --membw: measure after the tests
    size_t membw_buffer_bytes = size_t{1} << 30;  // --membw-mib
    std::optional<double> membw_bytes_per_s;      // --membw-gbps: a figure given instead
};

int run_model_bench(const ModelBench& bench);

// inlay bench --membw without a model: the read bandwidth alone.
int run_membw_bench(int32_t n_threads, size_t buffer_bytes, bool json);

}  // namespace inlay::cli
