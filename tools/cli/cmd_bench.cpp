// inlay bench: prompt-processing (pp) and generation (tg) speed, measured like
// llama-bench and shared/tools/llamacpp-peer/bench.sh so the numbers compare:
//   pp: one batch of P prompt tokens in an empty session, different ids in every run
//       (so the prefix cache serves none); rate = P / prefill_s.
//   tg: N single-token steps after a one-token prompt (greedy, EOS ignored);
//       rate = N / (prefill_s + decode_s).
// One warm-up run of each, then the median of R repetitions.
// With --concurrency N it measures N sessions generating at once instead
// (bench_concurrency.cpp).
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app.h"
#include "args.h"
#include "bench_stats.h"
#include "bench_concurrency.h"
#include "bench_speculative.h"
#include "bench_synthetic.h"
#include "load.h"

namespace inlay::cli {
namespace {

int64_t peak_rss_bytes() {
    rusage usage{};
    if (getrusage(RUSAGE_SELF, &usage) != 0) return -1;
    return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

// Run `run` of the pp test: tokens 100 + run * P + i (modulo the vocabulary), so no
// two runs share a first block and the engine's prefix cache cannot serve a later run
// from an earlier one's KV; a run that reuses any KV anyway is an error, not a figure.
double run_pp(Session& session, int32_t n_prompt, int32_t n_vocab, int32_t run) {
    std::vector<int32_t> prompt(static_cast<size_t>(n_prompt));
    for (int32_t i = 0; i < n_prompt; ++i)
        prompt[static_cast<size_t>(i)] = static_cast<int32_t>((100 + int64_t{run} * n_prompt + i) % n_vocab);
    session.reset();
    GenerateOptions options;
    options.params.max_tokens = 0;
    const inlay_timings t = session.generate_tokens(prompt, options).timings();
    if (t.prompt_tokens_reused != 0)
        throw std::runtime_error(fmt::format("the pp run reused {} cached prompt tokens", t.prompt_tokens_reused));
    return t.prefill_s > 0 ? static_cast<double>(n_prompt) / t.prefill_s : 0.0;
}

double run_tg(Session& session, int32_t first_token, int32_t n_gen) {
    session.reset();
    GenerateOptions options;
    options.params.max_tokens = n_gen;
    options.params.temperature = 0.0f;
    options.params.ignore_eos = true;
    const int32_t prompt[] = {first_token};
    const Result result = session.generate_tokens(prompt, options);
    const inlay_timings t = result.timings();
    if (t.generated_tokens != n_gen) {
        fmt::print(stderr, "inlay bench: warning: generated {} of {} tokens ({})\n", t.generated_tokens, n_gen,
                   stop_reason_name(result.stop_reason()));
    }
    const double seconds = t.prefill_s + t.decode_s;
    return seconds > 0 ? static_cast<double>(t.generated_tokens) / seconds : 0.0;
}

}  // namespace

int run_bench(std::span<const std::string_view> args) {
    std::string model_path;
    int32_t n_prompt = 128;
    int32_t n_gen = 64;
    int32_t repetitions = 5;
    int32_t n_threads = 0;
    std::string device = "auto";
    int32_t concurrency = 0;
    std::string synthetic;
    std::string dtype = "q4_k";
    int32_t batch = 64;
    bool json = false;
    SpeculationArgs speculation;
    std::string text = "Once upon a time, there was a little girl named Lily. She loved to play outside";
    constexpr double limit = 1 << 20;

    CommandSpec spec{
        "bench",
        "(-m MODEL | --synthetic SHAPE [--dtype T] [--batch B]) [-p 128] [-n 64] [-r 5] [-t THREADS] "
        "[--device D] [--concurrency N | --draft MODEL | --lookup [--n-draft K] [--text TEXT]] [--json]",
        "Measures prompt processing (pp) and generation (tg) speed; median of R runs after a warm-up.",
        {
            {"--model", "-m", "MODEL", "GGUF model file or Hugging Face folder", &model_path},
            {"--synthetic", "", "SHAPE",
             "instead: a model of this shape with random weights made in memory (llama3-8b, llama3-1b, qwen3-8b, "
             "qwen3-0.6b, tiny); reports pp, batch-1 decode with its bandwidth, and batched decode",
             &synthetic},
            {"--dtype", "", "T", "--synthetic: the matrices' type (f32 f16 bf16 q8_0 q4_0 q4_k q5_k q6_k q1_0; q4_k)",
             &dtype},
            {"--batch", "", "B", "--synthetic: sequences decoding together in the batched test (default 64)", &batch, 0,
             4096},
            {"--n-prompt", "-p", "N", "prompt tokens of the pp test; 0 skips it (default 128)", &n_prompt, 0, limit},
            {"--n-gen", "-n", "N", "generated tokens of the tg test; 0 skips it (default 64)", &n_gen, 0, limit},
            {"--repetitions", "-r", "R", "measured runs of each test (default 5)", &repetitions, 1, 1000},
            {"--threads", "-t", "N", "compute threads; 0 = all cores (default)", &n_threads, 0, 1024},
            {"--device", "", "D", kDeviceHelp, &device},
            {"--concurrency", "-c", "N",
             "instead: N sessions generating -n tokens at once from different prompts of -p tokens (default 8); "
             "aggregate decode tokens/s and per-session latency",
             &concurrency, 1, 1024},
            {"--text", "", "TEXT",
             "--draft/--lookup: the prompt of the speculative decoding test (a repetitive one for --lookup)", &text},
            {"--json", "", "", "print one JSON object", &json},
        },
    };
    speculation.add_options(spec.options);
    const ParsedArgs parsed = parse_args(spec, args);
    if (parsed.help) return exit_ok;
    if (parsed.has("--synthetic") == parsed.has("--model")) throw UsageError("bench needs -m MODEL or --synthetic SHAPE");
    if (parsed.has("--synthetic")) {
        SyntheticBench b;
        b.shape = synthetic;
        b.dtype = dtype;
        b.device = device;
        b.n_prompt = parsed.has("--n-prompt") ? n_prompt : 2048;
        b.n_gen = n_gen;
        b.batch = batch;
        b.repetitions = parsed.has("--repetitions") ? repetitions : 3;
        b.n_threads = n_threads;
        b.json = json;
        return run_synthetic_bench(b);
    }
    if (speculation.enabled(parsed)) {
        if (parsed.has("--concurrency")) throw UsageError("--concurrency and speculative decoding are separate tests");
        SpeculativeBench b;
        b.model_path = model_path;
        b.speculation = speculation;
        b.text = text;
        b.n_gen = parsed.has("--n-gen") ? std::max<int32_t>(n_gen, 2) : 128;
        b.repetitions = repetitions;
        b.n_threads = n_threads;
        b.device = device;
        b.json = json;
        return run_speculative_bench(b, parsed);
    }
    if (parsed.has("--concurrency")) {
        ConcurrencyBench b;
        b.model_path = model_path;
        b.concurrency = concurrency;
        b.n_gen = std::max<int32_t>(n_gen, 1);
        b.n_prompt = parsed.has("--n-prompt") ? std::max<int32_t>(n_prompt, 1) : 8;
        b.repetitions = repetitions;
        b.n_threads = n_threads;
        b.device = device;
        b.json = json;
        return run_concurrency_bench(b);
    }

    // Room for the longer test plus a margin, and no more: the KV cache stays small.
    const int32_t context_length = std::max(n_prompt, n_gen + 1) + 16;
    LoadedModel loaded = load_model(model_path, n_threads, context_length, !json, device);
    Session session(loaded.model);
    const auto n_vocab = static_cast<int32_t>(session.n_vocab());
    const int32_t first_token = 100 % n_vocab;

    std::vector<double> pp_samples;
    std::vector<double> tg_samples;
    if (n_prompt > 0) {
        run_pp(session, n_prompt, n_vocab, 0);  // warm-up
        for (int32_t r = 0; r < repetitions; ++r) pp_samples.push_back(run_pp(session, n_prompt, n_vocab, r + 1));
    }
    if (n_gen > 0) {
        run_tg(session, first_token, n_gen);  // warm-up
        for (int32_t r = 0; r < repetitions; ++r) tg_samples.push_back(run_tg(session, first_token, n_gen));
    }
    const int threads = n_threads > 0 ? n_threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const int64_t rss = peak_rss_bytes();

    if (json) {
        const nlohmann::ordered_json out = {
            {"model", model_path},
            {"threads", threads},
            {"n_prompt", n_prompt},
            {"n_gen", n_gen},
            {"repetitions", repetitions},
            {"load_s", loaded.load_s},
            {"prefill_tokens_per_s", median(pp_samples)},
            {"decode_tokens_per_s", median(tg_samples)},
            {"peak_rss_bytes", rss},
            {"samples", {{"prefill_tokens_per_s", pp_samples}, {"decode_tokens_per_s", tg_samples}}},
        };
        write_stdout(out.dump() + "\n");
        return exit_ok;
    }
    const std::string name = std::filesystem::path(model_path).filename().string();
    std::string out = fmt::format("| {:<30} | {:>7} | {:>6} | {:>20} |\n", "model", "threads", "test", "t/s (median, ± sd)");
    out += fmt::format("| {:-<30} | {:->7} | {:->6} | {:->20} |\n", "", "", "", "");
    const auto row = [&](std::string_view test, const std::vector<double>& samples) {
        out += fmt::format("| {:<30} | {:>7} | {:>6} | {:>20} |\n", name, threads, test,
                           fmt::format("{:.2f} ± {:.2f}", median(samples), stddev(samples)));
    };
    if (n_prompt > 0) row(fmt::format("pp{}", n_prompt), pp_samples);
    if (n_gen > 0) row(fmt::format("tg{}", n_gen), tg_samples);
    out += fmt::format("\nload {:.3f} s, peak RSS {:.1f} MiB, {} repetitions after one warm-up\n", loaded.load_s,
                       static_cast<double>(rss) / (1024.0 * 1024.0), repetitions);
    write_stdout(out);
    return exit_ok;
}

}  // namespace inlay::cli
