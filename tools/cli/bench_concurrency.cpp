// inlay bench --concurrency N: N sessions on one model, each on its own thread, generate
// n_gen tokens at once from different prompts of n_prompt tokens (ids 100 + 13 s + k,
// modulo the vocabulary). The model's engine batches them: each forward pass carries one
// token of every session, so weights are read once per step for all of them.
//
//   aggregate decode tokens/s = sum over sessions of (tokens - 1) / (last end - first
//       first-token time): the steady batched decode rate (each first token comes from
//       the prompt pass);
//   per-session latency: time to first token and mean time per later token.
// One warm-up run, then the median of R runs.
#include "bench_concurrency.h"
#include "load.h"

#include <sys/resource.h>

#include <algorithm>
#include <barrier>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app.h"
#include "bench_stats.h"
#include "inlay/inlay.hpp"

namespace inlay::cli {
namespace {

struct Run {
    double aggregate_decode = 0.0;  // tokens/s
    double aggregate_total = 0.0;   // all generated tokens over the whole wall time
    double ttft_mean = 0.0;         // s
    double ttft_max = 0.0;
    double per_token_mean = 0.0;    // s per token after the first, mean over sessions
    double per_token_max = 0.0;
    int64_t tokens = 0;
};

Run run_once(const Model& model, const ConcurrencyBench& b, int32_t n_gen) {
    const auto n_vocab = static_cast<int32_t>(model.info().n_vocab);
    const auto n = static_cast<size_t>(b.concurrency);
    std::vector<double> start(n), first(n), end(n);
    std::vector<int64_t> count(n);
    std::vector<std::string> errors(n);
    std::barrier sync(static_cast<std::ptrdiff_t>(n));
    std::vector<std::thread> threads;
    for (size_t s = 0; s < n; ++s) {
        threads.emplace_back([&, s] {
            try {
                Session session(model);
                std::vector<int32_t> prompt(static_cast<size_t>(b.n_prompt));
                for (int32_t k = 0; k < b.n_prompt; ++k)
                    prompt[static_cast<size_t>(k)] = static_cast<int32_t>((100 + 13 * s + static_cast<size_t>(k)) %
                                                                          static_cast<size_t>(n_vocab));
                GenerateOptions options;
                options.params.max_tokens = n_gen;
                options.params.temperature = 0.0f;
                options.params.ignore_eos = true;
                sync.arrive_and_wait();
                start[s] = now_seconds();
                first[s] = 0.0;
                const Result r = session.generate_tokens(prompt, options, [&](int32_t, std::string_view) {
                    if (first[s] == 0.0) first[s] = now_seconds();
                    return true;
                });
                end[s] = now_seconds();
                count[s] = static_cast<int64_t>(r.tokens().size());
            } catch (const std::exception& e) {
                errors[s] = e.what();
            }
        });
    }
    for (auto& t : threads) t.join();
    for (const auto& e : errors)
        if (!e.empty()) throw Error(INLAY_ERR_INTERNAL, e);
    Run run;
    const double t0 = *std::min_element(start.begin(), start.end());
    const double t_first = *std::min_element(first.begin(), first.end());
    const double t_end = *std::max_element(end.begin(), end.end());
    int64_t decode_tokens = 0;
    for (size_t s = 0; s < n; ++s) {
        run.tokens += count[s];
        decode_tokens += std::max<int64_t>(0, count[s] - 1);
        const double ttft = first[s] - start[s];
        run.ttft_mean += ttft / static_cast<double>(n);
        run.ttft_max = std::max(run.ttft_max, ttft);
        const double per_token = count[s] > 1 ? (end[s] - first[s]) / static_cast<double>(count[s] - 1) : 0.0;
        run.per_token_mean += per_token / static_cast<double>(n);
        run.per_token_max = std::max(run.per_token_max, per_token);
    }
    run.aggregate_decode = t_end > t_first ? static_cast<double>(decode_tokens) / (t_end - t_first) : 0.0;
    run.aggregate_total = t_end > t0 ? static_cast<double>(run.tokens) / (t_end - t0) : 0.0;
    return run;
}

}  // namespace

int run_concurrency_bench(const ConcurrencyBench& b) {
    // Room for every session's whole conversation at once: nothing is preempted.
    const int32_t context = b.n_prompt + b.n_gen + 16;
    const int64_t blocks = static_cast<int64_t>(b.concurrency) * ((context + 15) / 16 + 1);
    KvPool pool(0, 16, blocks);
    ModelOptions options;
    apply_device(b.device, options);
    options.n_threads = b.n_threads;
    options.context_length = context;
    options.kv_pool = &pool;
    const double t_load = now_seconds();
    const Model model = Model::load(b.model_path, options);
    const double load_s = now_seconds() - t_load;

    (void)run_once(model, b, std::min<int32_t>(b.n_gen, 8));  // warm-up
    std::vector<Run> runs;
    for (int32_t r = 0; r < b.repetitions; ++r) runs.push_back(run_once(model, b, b.n_gen));
    auto pick = [&](double Run::*field) {
        std::vector<double> v;
        for (const Run& run : runs) v.push_back(run.*field);
        return median(v);
    };
    std::vector<double> samples;
    for (const Run& run : runs) samples.push_back(run.aggregate_decode);
    const inlay_metrics m = model.metrics();
    const int threads = b.n_threads > 0 ? b.n_threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    const int64_t rss = static_cast<int64_t>(usage.ru_maxrss) * 1024;

    if (b.json) {
        const nlohmann::ordered_json out = {
            {"model", b.model_path},
            {"threads", threads},
            {"concurrency", b.concurrency},
            {"n_prompt", b.n_prompt},
            {"n_gen", b.n_gen},
            {"repetitions", b.repetitions},
            {"load_s", load_s},
            {"aggregate_decode_tokens_per_s", pick(&Run::aggregate_decode)},
            {"aggregate_tokens_per_s", pick(&Run::aggregate_total)},
            {"time_to_first_token_s", {{"mean", pick(&Run::ttft_mean)}, {"max", pick(&Run::ttft_max)}}},
            {"per_token_latency_s", {{"mean", pick(&Run::per_token_mean)}, {"max", pick(&Run::per_token_max)}}},
            {"forward_passes", m.steps},
            {"forward_passes_pipelined", m.steps_pipelined},
            {"forward_passes_ids_only", m.steps_ids_only},
            {"step_seconds_mean", m.step_seconds_mean},
            {"step_seconds_max", m.step_seconds_max},
            {"metrics",
             {{"blocks_total", m.blocks_total},
              {"blocks_free", m.blocks_free},
              {"blocks_cached", m.blocks_cached},
              {"blocks_shared", m.blocks_shared},
              {"sequences_running", m.sequences_running},
              {"sequences_waiting", m.sequences_waiting},
              {"preemptions", m.preemptions},
              {"tokens_prefilled", m.tokens_prefilled},
              {"tokens_generated", m.tokens_generated},
              {"prefix_tokens_reused", m.prefix_tokens_reused},
              {"generated_tokens_per_s", m.generated_tokens_per_s}}},
            {"peak_rss_bytes", rss},
            {"samples", {{"aggregate_decode_tokens_per_s", samples}}},
        };
        write_stdout(out.dump() + "\n");
        return exit_ok;
    }
    std::string out = fmt::format("model {}, {} threads, {} sessions x {} tokens (prompts of {}), median of {} runs\n",
                                  b.model_path, threads, b.concurrency, b.n_gen, b.n_prompt, b.repetitions);
    out += fmt::format("  aggregate decode   {:10.2f} tokens/s\n", pick(&Run::aggregate_decode));
    out += fmt::format("  aggregate overall  {:10.2f} tokens/s\n", pick(&Run::aggregate_total));
    out += fmt::format("  first token        {:10.1f} ms mean, {:.1f} ms max\n", pick(&Run::ttft_mean) * 1e3,
                       pick(&Run::ttft_max) * 1e3);
    out += fmt::format("  per later token    {:10.1f} ms mean, {:.1f} ms max (per session)\n",
                       pick(&Run::per_token_mean) * 1e3, pick(&Run::per_token_max) * 1e3);
    out += fmt::format("  forward passes {} ({} pipelined, {} ids only), {:.1f} ms each ({:.1f} ms max); load {:.3f} s, "
                       "peak RSS {:.1f} MiB\n",
                       m.steps, m.steps_pipelined, m.steps_ids_only, m.step_seconds_mean * 1e3,
                       m.step_seconds_max * 1e3, load_s, static_cast<double>(rss) / (1024.0 * 1024.0));
    out += fmt::format("  KV blocks {} total, {} free ({} cached), {} shared; preemptions {}; tokens prefilled {}, "
                       "generated {}, prefix reused {}\n",
                       m.blocks_total, m.blocks_free, m.blocks_cached, m.blocks_shared, m.preemptions,
                       m.tokens_prefilled, m.tokens_generated, m.prefix_tokens_reused);
    write_stdout(out);
    return exit_ok;
}

}  // namespace inlay::cli
