#include "bench_model.h"

#include <sys/resource.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app.h"
#include "bench_membw.h"
#include "bench_roofline.h"
#include "bench_stats.h"
#include "load.h"

namespace inlay::cli {
namespace {

int64_t peak_rss_bytes() {
    rusage usage{};
    if (getrusage(RUSAGE_SELF, &usage) != 0) return -1;
    return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

int resolved_threads(int32_t n_threads) {
    return n_threads > 0 ? n_threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// Hands every run its own token ids: run k's tokens are 100 + k + i (modulo the
// vocabulary), so no two runs share their first token and the prefix cache, which
// matches from position 0, finds nothing of one run in another.
class TokenSource {
public:
    explicit TokenSource(int32_t n_vocab) : n_vocab_(n_vocab) {}
    // The next run's context (n_depth tokens) and timed tokens (n_timed), in one list.
    std::vector<int32_t> next_run(int32_t n_tokens) {
        std::vector<int32_t> ids(static_cast<size_t>(n_tokens));
        for (int32_t i = 0; i < n_tokens; ++i)
            ids[static_cast<size_t>(i)] = static_cast<int32_t>((100 + run_ + int64_t{i}) % n_vocab_);
        ++run_;
        return ids;
    }

private:
    int32_t n_vocab_;
    int64_t run_ = 0;
};

void check_not_reused(const inlay_timings& t, const BenchTest& test) {
    if (t.prompt_tokens_reused != 0)
        throw std::runtime_error(fmt::format("the {} run reused {} cached prompt tokens in its timed part", test.name(),
                                             t.prompt_tokens_reused));
}

struct RunResult {
    double rate = 0.0;                 // tokens/s
    int64_t prompt_tokens_reused = 0;  // in the timed part (0, or check_not_reused threw)
};

// One run of `test`: resets the session, processes the context untimed, times the rest.
RunResult run_once(Session& session, const BenchTest& test, TokenSource& source) {
    const int32_t n_timed = test.is_pp() ? test.n_prompt : 1;
    const std::vector<int32_t> ids = source.next_run(test.n_depth + n_timed);
    const auto context = std::span(ids).first(static_cast<size_t>(test.n_depth));
    const auto timed = std::span(ids).subspan(static_cast<size_t>(test.n_depth));
    session.reset();
    if (!context.empty()) {
        GenerateOptions options;
        options.params.max_tokens = 0;
        (void)session.generate_tokens(context, options);
    }
    GenerateOptions options;
    options.params.max_tokens = test.is_pp() ? 0 : test.n_gen;
    options.params.temperature = 0.0f;
    options.params.ignore_eos = true;
    const Result result = session.generate_tokens(timed, options);
    const inlay_timings t = result.timings();
    check_not_reused(t, test);
    if (t.prompt_tokens != n_timed)
        throw std::runtime_error(fmt::format("the {} run prefilled {} tokens, not {}", test.name(), t.prompt_tokens, n_timed));
    if (test.is_pp()) return {t.prefill_s > 0 ? static_cast<double>(test.n_prompt) / t.prefill_s : 0.0, t.prompt_tokens_reused};
    if (t.generated_tokens != test.n_gen) {
        fmt::print(stderr, "inlay bench: warning: {} generated {} of {} tokens ({})\n", test.name(), t.generated_tokens,
                   test.n_gen, stop_reason_name(result.stop_reason()));
    }
    const double seconds = t.prefill_s + t.decode_s;
    return {seconds > 0 ? static_cast<double>(t.generated_tokens) / seconds : 0.0, t.prompt_tokens_reused};
}

struct TestResult {
    BenchTest test;
    std::vector<double> samples;
    int64_t prompt_tokens_reused = 0;
    double bytes_per_token = 0.0;  // tg only
};

double mean(const std::vector<double>& v) {
    if (v.empty()) return 0.0;
    double s = 0.0;
    for (double x : v) s += x;
    return s / static_cast<double>(v.size());
}

nlohmann::ordered_json test_json(const TestResult& r, std::optional<double> membw) {
    const double med = median(r.samples);
    nlohmann::ordered_json j = {
        {"name", r.test.name()},
        {"n_prompt", r.test.n_prompt},
        {"n_gen", r.test.n_gen},
        {"n_depth", r.test.n_depth},
        {"median_ts", med},
        {"avg_ts", mean(r.samples)},
        {"stddev_ts", stddev(r.samples)},
        {"samples_ts", r.samples},
        {"prompt_tokens_reused", r.prompt_tokens_reused},
    };
    if (!r.test.is_pp()) {
        j["bytes_per_token"] = r.bytes_per_token;
        j["bytes_per_s"] = med * r.bytes_per_token;
        if (membw && *membw > 0) j["roofline_share"] = med * r.bytes_per_token / *membw;
    }
    return j;
}

std::string membw_text(std::optional<double> membw, bool measured) {
    if (!membw) return "read bandwidth not measured (--membw)";
    return fmt::format("read bandwidth {:.1f} GB/s ({})", *membw / 1e9, measured ? "measured" : "given");
}

}  // namespace

int run_model_bench(const ModelBench& b) {
    // One sequence of the longest test's context, as llama-bench holds (its n_ctx): the
    // library's default budget (several sessions' worth) would let the runs' cached
    // blocks spread over more memory than the bench ever attends.
    const int32_t context_length = plan_context_length(b.tests);
    const int64_t kv_slots = (int64_t{context_length} + 15) / 16 * 16 + 2 * 16;  // + two blocks of slack
    // The engine's KV cache holds f16 K and V (its default, which `inlay bench` keeps);
    // the same figure sizes the budget and the decode bytes per token below.
    double kv_position = 0.0;
    try {
        kv_position = kv_bytes_per_position_f16_of_file(b.model_path);
    } catch (const std::runtime_error&) {
        // Unreadable or not a model: load_model reports it (after the command line's checks).
    }
    const auto kv_budget = static_cast<int64_t>(kv_position * static_cast<double>(kv_slots));
    LoadedModel loaded = load_model(b.model_path, b.n_threads, context_length, !b.json, b.device, kv_budget);
    Session session(loaded.model);
    const inlay_model_info info = loaded.model.info();
    TokenSource source(info.n_vocab);

    std::vector<TestResult> results;
    for (const BenchTest& test : b.tests) {
        TestResult r{test, {}, 0, 0.0};
        (void)run_once(session, test, source);  // warm-up
        for (int32_t k = 0; k < b.repetitions; ++k) {
            const RunResult run = run_once(session, test, source);
            r.samples.push_back(run.rate);
            r.prompt_tokens_reused += run.prompt_tokens_reused;
        }
        results.push_back(std::move(r));
    }
    // Before anything else allocates: the figure is the model's and its session's.
    const int64_t rss = peak_rss_bytes();
    const int threads = resolved_threads(b.n_threads);

    const uint64_t weight_bytes = decode_weight_bytes_of_file(b.model_path);
    for (TestResult& r : results)
        if (!r.test.is_pp()) r.bytes_per_token = decode_bytes_per_token(weight_bytes, kv_position, r.test.n_depth, r.test.n_gen);
    std::optional<double> membw = b.membw_bytes_per_s;
    if (b.measure_membw) membw = measure_read_bandwidth({.n_threads = threads, .buffer_bytes = b.membw_buffer_bytes});

    const auto first = [&](bool pp) -> const TestResult* {
        for (const TestResult& r : results)
            if (r.test.is_pp() == pp) return &r;
        return nullptr;
    };
    const TestResult* first_pp = first(true);
    const TestResult* first_tg = first(false);

    if (b.json) {
        nlohmann::ordered_json tests = nlohmann::ordered_json::array();
        for (const TestResult& r : results) tests.push_back(test_json(r, membw));
        const std::vector<double> none;
        // n_prompt, n_gen, the two rates and `samples` are those of the first pp and tg test
        // (the report's shape before the test lists; scripts read it).
        const nlohmann::ordered_json out = {
            {"model", b.model_path},
            {"threads", threads},
            {"n_prompt", first_pp ? first_pp->test.n_prompt : 0},
            {"n_gen", first_tg ? first_tg->test.n_gen : 0},
            {"repetitions", b.repetitions},
            {"load_s", loaded.load_s},
            {"prefill_tokens_per_s", first_pp ? median(first_pp->samples) : 0.0},
            {"decode_tokens_per_s", first_tg ? median(first_tg->samples) : 0.0},
            {"peak_rss_bytes", rss},
            {"membw_bytes_per_s", membw ? nlohmann::ordered_json(*membw) : nlohmann::ordered_json(nullptr)},
            {"weight_bytes_per_token", weight_bytes},
            {"samples",
             {{"prefill_tokens_per_s", first_pp ? first_pp->samples : none},
              {"decode_tokens_per_s", first_tg ? first_tg->samples : none}}},
            {"tests", tests},
        };
        write_stdout(out.dump() + "\n");
        return exit_ok;
    }
    const std::string name = std::filesystem::path(b.model_path).filename().string();
    std::string out = fmt::format("| {:<30} | {:>7} | {:>14} | {:>20} | {:>8} | {:>8} |\n", "model", "threads", "test",
                                  "t/s (median ± sd)", "GB/s", "roofline");
    out += fmt::format("| {:-<30} | {:->7} | {:->14} | {:->20} | {:->8} | {:->8} |\n", "", "", "", "", "", "");
    for (const TestResult& r : results) {
        const double med = median(r.samples);
        std::string gbps, share;
        if (!r.test.is_pp()) {
            gbps = fmt::format("{:.1f}", med * r.bytes_per_token / 1e9);
            if (membw && *membw > 0) share = fmt::format("{:.0f}%", 100.0 * med * r.bytes_per_token / *membw);
        }
        out += fmt::format("| {:<30} | {:>7} | {:>14} | {:>20} | {:>8} | {:>8} |\n", name, threads, r.test.name(),
                           fmt::format("{:.2f} ± {:.2f}", med, stddev(r.samples)), gbps, share);
    }
    out += fmt::format("\nload {:.3f} s, peak RSS {:.1f} MiB, {}, {} repetitions after one warm-up\n", loaded.load_s,
                       static_cast<double>(rss) / (1024.0 * 1024.0), membw_text(membw, b.measure_membw), b.repetitions);
    write_stdout(out);
    return exit_ok;
}

int run_membw_bench(int32_t n_threads, size_t buffer_bytes, bool json) {
    const int threads = resolved_threads(n_threads);
    const double bw = measure_read_bandwidth({.n_threads = threads, .buffer_bytes = buffer_bytes});
    if (json) {
        const nlohmann::ordered_json out = {
            {"threads", threads}, {"membw_bytes_per_s", bw}, {"membw_buffer_bytes", buffer_bytes}};
        write_stdout(out.dump() + "\n");
    } else {
        write_stdout(fmt::format("read bandwidth with {} threads: {:.1f} GB/s\n", threads, bw / 1e9));
    }
    return exit_ok;
}

}  // namespace inlay::cli
