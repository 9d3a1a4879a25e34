#include "bench_plan.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "args.h"

namespace inlay::cli {

std::string BenchTest::name() const {
    std::string out = is_pp() ? fmt::format("pp{}", n_prompt) : fmt::format("tg{}", n_gen);
    if (n_depth > 0) out += fmt::format(" @ d{}", n_depth);
    return out;
}

std::vector<int32_t> parse_size_list(std::string_view text, std::string_view option, int32_t max) {
    std::vector<int32_t> sizes;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t comma = std::min(text.find(',', start), text.size());
        const std::string_view item = text.substr(start, comma - start);
        int32_t v = -1;
        const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
        if (item.empty() || ec != std::errc{} || ptr != item.data() + item.size() || v < 0 || v > max) {
            const std::string shown(item.substr(0, 32));
            throw UsageError(fmt::format("{} expects a comma-separated list of integers in [0, {}], got '{}' in '{}'",
                                         option, max, shown, text.substr(0, 64)));
        }
        sizes.push_back(v);
        start = comma + 1;
    }
    return sizes;
}

std::vector<BenchTest> plan_bench(const std::vector<int32_t>& n_prompt, const std::vector<int32_t>& n_gen,
                                  const std::vector<int32_t>& n_depth) {
    std::vector<BenchTest> tests;
    for (const int32_t p : n_prompt)
        for (const int32_t d : n_depth)
            if (p > 0) tests.push_back({p, 0, d});
    for (const int32_t n : n_gen)
        for (const int32_t d : n_depth)
            if (n > 0) tests.push_back({0, n, d});
    return tests;
}

int32_t plan_context_length(const std::vector<BenchTest>& tests) {
    int64_t need = 1;
    for (const BenchTest& t : tests)
        need = std::max<int64_t>(need, int64_t{t.n_depth} + std::max<int64_t>(t.n_prompt, int64_t{t.n_gen} + 1));
    return static_cast<int32_t>(std::min<int64_t>(need + 16, INT32_MAX));
}

}  // namespace inlay::cli
