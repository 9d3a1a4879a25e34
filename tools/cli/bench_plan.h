// The test matrix of `inlay bench -m MODEL`, as llama-bench builds it: every prompt size
// (-p) and every generation size (-n) at every depth (-d), each a list like "128,512".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace inlay::cli {

struct BenchTest {
    int32_t n_prompt = 0;  // pp: prompt tokens timed (0 for a tg test)
    int32_t n_gen = 0;     // tg: tokens generated (0 for a pp test)
    int32_t n_depth = 0;   // context the session holds before the timed part

    [[nodiscard]] bool is_pp() const { return n_prompt > 0; }
    // "pp512", "tg64 @ d512" (llama-bench's table names).
    [[nodiscard]] std::string name() const;
};

// A comma-separated list of integers in [0, max] ("128,512"); throws UsageError naming
// `option` for an empty list or entry, or one that is not such a number.
std::vector<int32_t> parse_size_list(std::string_view text, std::string_view option, int32_t max);

// pp tests (sizes in order, each over the depths), then tg tests likewise. Sizes of 0 are
// skipped, as -p 0 / -n 0 skip a test.
std::vector<BenchTest> plan_bench(const std::vector<int32_t>& n_prompt, const std::vector<int32_t>& n_gen,
                                  const std::vector<int32_t>& n_depth);

// Context the session needs for every test: the largest depth plus the longest timed part
// (a tg test of N tokens holds N + 1: its one-token prompt and N - 1 later ones, and the
// last generated token), plus a margin.
int32_t plan_context_length(const std::vector<BenchTest>& tests);

}  // namespace inlay::cli
