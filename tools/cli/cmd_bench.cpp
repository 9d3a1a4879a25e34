// inlay bench: prompt-processing (pp) and generation (tg) speed, measured like
// llama-bench so the numbers compare: lists of sizes and depths (-p 128,512 -n 64
// -d 0,512), the decode bandwidth against the machine's read bandwidth (--membw), peak
// resident memory. The tests themselves are in bench_model.cpp; this file reads the
// command line and picks the mode:
//   --synthetic SHAPE   random weights of a named shape (bench_synthetic.cpp)
//   --concurrency N     N sessions generating at once (bench_concurrency.cpp)
//   --draft / --lookup  speculative decoding against plain (bench_speculative.cpp)
//   --membw alone       the read bandwidth only
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "app.h"
#include "args.h"
#include "bench_concurrency.h"
#include "bench_model.h"
#include "bench_plan.h"
#include "bench_speculative.h"
#include "bench_synthetic.h"
#include "load.h"

namespace inlay::cli {
namespace {

constexpr int32_t kSizeLimit = 1 << 20;

// The one value of -p or -n that the modes other than the test matrix take.
int32_t single_size(const std::string& text, std::string_view option, std::string_view mode) {
    const std::vector<int32_t> sizes = parse_size_list(text, option, kSizeLimit);
    if (sizes.size() != 1) throw UsageError(fmt::format("{} takes one {} value, not a list", mode, option));
    return sizes[0];
}

}  // namespace

int run_bench(std::span<const std::string_view> args) {
    std::string model_path;
    std::string n_prompt_list = "128";
    std::string n_gen_list = "64";
    std::string n_depth_list = "0";
    bool membw = false;
    float membw_gbps = 0.0f;
    int32_t membw_mib = 1024;
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

    CommandSpec spec{
        "bench",
        "(-m MODEL | --synthetic SHAPE [--dtype T] [--batch B]) [-p 128,...] [-n 64,...] [-d 0,...] [-r 5] "
        "[-t THREADS] [--device D] [--membw [--membw-mib M] | --membw-gbps X] "
        "[--concurrency N | --draft MODEL | --lookup [--n-draft K] [--text TEXT]] [--json]  |  --membw [-t THREADS]",
        "Measures prompt processing (pp) and generation (tg) speed, every size at every depth; median of R runs "
        "after a warm-up.",
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
            {"--n-prompt", "-p", "N,...", "prompt tokens of the pp tests, a comma-separated list; 0 skips (default 128)",
             &n_prompt_list},
            {"--n-gen", "-n", "N,...", "generated tokens of the tg tests, a comma-separated list; 0 skips (default 64)",
             &n_gen_list},
            {"--n-depth", "-d", "D,...",
             "context tokens the session holds before each test, untimed; a comma-separated list (default 0)",
             &n_depth_list},
            {"--membw", "", "",
             "also measure the machine's read bandwidth with the -t threads (a buffer streamed, best of 5): the roofline "
             "of the tg tests; alone, without -m, only that",
             &membw},
            {"--membw-gbps", "", "X", "the read bandwidth in GB/s measured earlier, instead of --membw", &membw_gbps,
             0.001, 1e6},
            {"--membw-mib", "", "M", "--membw: the buffer streamed, in MiB; far above the last-level cache (default 1024)",
             &membw_mib, 16, 1 << 20},
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
    if (membw && parsed.has("--membw-gbps")) throw UsageError("--membw measures what --membw-gbps gives: pass one");
    const size_t membw_bytes = static_cast<size_t>(membw_mib) << 20;
    if (membw && !parsed.has("--model") && !parsed.has("--synthetic")) return run_membw_bench(n_threads, membw_bytes, json);
    if (parsed.has("--synthetic") == parsed.has("--model")) throw UsageError("bench needs -m MODEL or --synthetic SHAPE");
    const bool matrix = !parsed.has("--synthetic") && !speculation.enabled(parsed) && !parsed.has("--concurrency");
    if (!matrix) {
        for (const char* option : {"--n-depth", "--membw", "--membw-gbps", "--membw-mib"})
            if (parsed.has(option))
                throw UsageError(fmt::format("{} belongs to the pp/tg tests, not to --synthetic, --concurrency, "
                                             "--draft or --lookup", option));
    }
    const std::string_view mode = parsed.has("--synthetic")     ? "--synthetic"
                                  : parsed.has("--concurrency") ? "--concurrency"
                                                                : "speculative decoding";
    if (parsed.has("--synthetic")) {
        SyntheticBench b;
        b.shape = synthetic;
        b.dtype = dtype;
        b.device = device;
        b.n_prompt = parsed.has("--n-prompt") ? single_size(n_prompt_list, "--n-prompt", mode) : 2048;
        b.n_gen = single_size(n_gen_list, "--n-gen", mode);
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
        b.n_gen = parsed.has("--n-gen") ? std::max<int32_t>(single_size(n_gen_list, "--n-gen", mode), 2) : 128;
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
        b.n_gen = std::max<int32_t>(single_size(n_gen_list, "--n-gen", mode), 1);
        b.n_prompt =
            parsed.has("--n-prompt") ? std::max<int32_t>(single_size(n_prompt_list, "--n-prompt", mode), 1) : 8;
        b.repetitions = repetitions;
        b.n_threads = n_threads;
        b.device = device;
        b.json = json;
        return run_concurrency_bench(b);
    }

    ModelBench b;
    b.model_path = model_path;
    b.tests = plan_bench(parse_size_list(n_prompt_list, "--n-prompt", kSizeLimit),
                         parse_size_list(n_gen_list, "--n-gen", kSizeLimit),
                         parse_size_list(n_depth_list, "--n-depth", kSizeLimit));
    if (b.tests.empty()) throw UsageError("-p and -n are both 0: no test to run");
    b.repetitions = repetitions;
    b.n_threads = n_threads;
    b.device = device;
    b.json = json;
    b.measure_membw = membw;
    b.membw_buffer_bytes = membw_bytes;
    if (parsed.has("--membw-gbps")) b.membw_bytes_per_s = static_cast<double>(membw_gbps) * 1e9;
    return run_model_bench(b);
}

}  // namespace inlay::cli
