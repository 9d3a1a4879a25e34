// inlay generate: streams generated text to stdout, or prints one JSON object at the end.
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app.h"
#include "args.h"
#include "load.h"
#include "speculation_option.h"

namespace inlay::cli {

int run_generate(std::span<const std::string_view> args) {
    GenerateOptions gen;  // inlay_generate_params_init's defaults
    std::string model_path;
    std::string prompt;
    int32_t n_threads = 0;
    std::string device = "auto";
    int32_t context_length = 0;
    bool no_bos = false;
    bool json = false;
    constexpr double int_max = std::numeric_limits<int32_t>::max();
    inlay_generate_params& p = gen.params;
    SpeculationArgs speculation;

    CommandSpec spec{
        "generate",
        "-m MODEL -p PROMPT [options]",
        "Generates text after PROMPT and streams it to stdout (-p \"\" starts from BOS alone).",
        {
            {"--model", "-m", "MODEL", "GGUF model file", &model_path, 0, 0, true},
            {"--prompt", "-p", "PROMPT", "prompt text (UTF-8; special tokens such as <s> are parsed)", &prompt, 0, 0,
             true},
            {"--n-predict", "-n", "N", "tokens to generate (default 256)", &p.max_tokens, 0, int_max},
            {"--temp", "", "T", "temperature; 0 = greedy (default 0.8)", &p.temperature, 0, 1e6},
            {"--top-k", "", "K", "keep the K most likely tokens; 0 = off (default 40)", &p.top_k, 0, int_max},
            {"--top-p", "", "P", "nucleus sampling in (0, 1]; 1 = off (default 0.95)", &p.top_p, 0, 1},
            {"--min-p", "", "P", "drop tokens below P times the top probability; 0 = off (default 0.05)", &p.min_p, 0,
             1},
            {"--repeat-penalty", "", "F", "penalty for recently seen tokens; 1 = off (default 1)", &p.repeat_penalty,
             0, 1e6},
            {"--seed", "", "S", "random seed; -1 = random (default)", &p.seed},
            {"--stop", "", "STR", "stop when STR appears (repeatable; STR is not printed)", &gen.stop},
            {"--ignore-eos", "", "", "keep generating after end-of-generation tokens", &p.ignore_eos},
            {"--no-bos", "", "", "do not prepend BOS", &no_bos},
            {"--threads", "-t", "N", "compute threads; 0 = all cores (default)", &n_threads, 0, 1024},
            {"--device", "", "D", kDeviceHelp, &device},
            {"--ctx-size", "-c", "N", "context length in tokens; 0 = the model's (default)", &context_length, 0,
             int_max},
            {"--json", "", "", "print one JSON object at the end instead of streaming", &json},
        },
    };
    speculation.add_options(spec.options);
    const ParsedArgs parsed = parse_args(spec, args);
    if (parsed.help) return exit_ok;
    if (p.top_p <= 0.0f) throw UsageError("--top-p must be in (0, 1]");
    if (p.repeat_penalty <= 0.0f) throw UsageError("--repeat-penalty must be greater than 0");
    for (const std::string& s : gen.stop) {
        if (s.empty()) throw UsageError("--stop needs a non-empty string");
    }
    p.add_bos = !no_bos;

    LoadedModel loaded = load_model(model_path, n_threads, context_length, !json, device);
    std::optional<LoadedModel> draft;
    Session session(loaded.model,
                    speculation_session(speculation, parsed, n_threads, context_length, device, draft));
    Result result = json ? session.generate(prompt, gen)
                         : session.generate(prompt, gen, [](int32_t, std::string_view piece) {
                               write_stdout(piece);
                               return true;
                           });
    const inlay_timings t = result.timings();

    if (json) {
        const auto prompt_tokens = result.prompt_tokens();
        const auto tokens = result.tokens();
        const nlohmann::ordered_json out = {
            {"prompt_tokens", std::vector<int32_t>(prompt_tokens.begin(), prompt_tokens.end())},
            {"tokens", std::vector<int32_t>(tokens.begin(), tokens.end())},
            {"text", std::string(result.text())},
            {"stop_reason", stop_reason_name(result.stop_reason())},
            {"timings",
             {{"load_s", loaded.load_s},
              {"prompt_tokens", t.prompt_tokens},
              {"generated_tokens", t.generated_tokens},
              {"prefill_s", t.prefill_s},
              {"decode_s", t.decode_s},
              {"prefill_tokens_per_s", t.prefill_tokens_per_s},
              {"decode_tokens_per_s", t.decode_tokens_per_s},
              {"draft_tokens_proposed", t.draft_tokens_proposed},
              {"draft_tokens_accepted", t.draft_tokens_accepted}}},
        };
        // The library's text is valid UTF-8; `replace` only guards the output's parseability.
        write_stdout(out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
    } else {
        if (!result.text().empty() && !result.text().ends_with('\n')) write_stdout("\n");
        fmt::print(stderr, "inlay: load {:.3f} s | prompt {} tokens, {:.1f} t/s | generated {} tokens, {:.1f} t/s | {}\n",
                   loaded.load_s, t.prompt_tokens, t.prefill_tokens_per_s, t.generated_tokens, t.decode_tokens_per_s,
                   stop_reason_name(result.stop_reason()));
        if (t.draft_tokens_proposed > 0)
            fmt::print(stderr, "inlay: speculation: {} of {} proposed tokens accepted ({:.0f}%)\n",
                       t.draft_tokens_accepted, t.draft_tokens_proposed,
                       100.0 * static_cast<double>(t.draft_tokens_accepted) / static_cast<double>(t.draft_tokens_proposed));
    }
    return exit_ok;
}

}  // namespace inlay::cli
