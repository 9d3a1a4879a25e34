// inlay bench --draft MODEL | --lookup: the same greedy generation of N tokens after a text
// prompt by a plain session and by a speculating one, alternating which goes first, one
// warm-up round and then R measured rounds.
//   decode tokens/s = (generated - 1) / decode_s (the first token comes from the prompt
//       pass, which is the same in both);
//   speedup = median speculative rate / median plain rate;
//   acceptance = accepted / proposed tokens over the measured rounds.
// Greedy speculation must give the plain tokens: a difference is reported as an error.
#include "bench_speculative.h"

#include <filesystem>
#include <stdexcept>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app.h"
#include "bench_stats.h"

namespace inlay::cli {
namespace {

struct Run {
    double rate = 0.0;
    std::vector<int32_t> tokens;
    int64_t proposed = 0;
    int64_t accepted = 0;
};

Run run_once(Session& session, const std::string& text, int32_t n_gen) {
    session.reset();
    GenerateOptions options;
    options.params.max_tokens = n_gen;
    options.params.temperature = 0.0f;
    options.params.ignore_eos = true;
    const Result result = session.generate(text, options);
    const inlay_timings t = result.timings();
    Run run;
    run.rate = t.decode_tokens_per_s;
    const auto tokens = result.tokens();
    run.tokens.assign(tokens.begin(), tokens.end());
    run.proposed = t.draft_tokens_proposed;
    run.accepted = t.draft_tokens_accepted;
    return run;
}

}  // namespace

int run_speculative_bench(const SpeculativeBench& b, const ParsedArgs& parsed) {
    LoadedModel target = load_model(b.model_path, b.n_threads, 0, !b.json, b.device);
    std::optional<LoadedModel> draft;
    const SessionOptions spec_options = speculation_session(b.speculation, parsed, b.n_threads, 0, b.device, draft);
    Session plain(target.model);
    Session speculative(target.model, spec_options);

    std::vector<double> plain_rates, spec_rates;
    int64_t proposed = 0, accepted = 0;
    for (int32_t round = 0; round <= b.repetitions; ++round) {
        Run p, s;
        if (round % 2 == 0) {
            p = run_once(plain, b.text, b.n_gen);
            s = run_once(speculative, b.text, b.n_gen);
        } else {
            s = run_once(speculative, b.text, b.n_gen);
            p = run_once(plain, b.text, b.n_gen);
        }
        if (s.tokens != p.tokens)
            throw std::runtime_error("greedy speculative decoding gave other tokens than plain decoding");
        if (round == 0) continue;  // warm-up
        plain_rates.push_back(p.rate);
        spec_rates.push_back(s.rate);
        proposed += s.proposed;
        accepted += s.accepted;
    }
    const double plain_rate = median(plain_rates);
    const double spec_rate = median(spec_rates);
    const double speedup = plain_rate > 0 ? spec_rate / plain_rate : 0.0;
    const double acceptance = proposed > 0 ? static_cast<double>(accepted) / static_cast<double>(proposed) : 0.0;
    const int threads = b.n_threads > 0 ? b.n_threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const std::string drafter =
        b.speculation.lookup ? "prompt lookup" : std::filesystem::path(b.speculation.draft_path).filename().string();

    if (b.json) {
        const nlohmann::ordered_json out = {
            {"model", b.model_path},
            {"drafter", drafter},
            {"threads", threads},
            {"n_gen", b.n_gen},
            {"n_draft", b.speculation.n_draft},
            {"repetitions", b.repetitions},
            {"plain_decode_tokens_per_s", plain_rate},
            {"speculative_decode_tokens_per_s", spec_rate},
            {"speedup", speedup},
            {"draft_tokens_proposed", proposed},
            {"draft_tokens_accepted", accepted},
            {"acceptance_rate", acceptance},
            {"samples", {{"plain", plain_rates}, {"speculative", spec_rates}}},
        };
        write_stdout(out.dump() + "\n");
        return exit_ok;
    }
    const std::string name = std::filesystem::path(b.model_path).filename().string();
    std::string out = fmt::format("| {:<26} | {:<26} | {:>7} | {:>18} | {:>18} | {:>7} | {:>10} |\n", "model", "drafter",
                                  "threads", "plain t/s", "speculative t/s", "speedup", "acceptance");
    out += fmt::format("| {:-<26} | {:-<26} | {:->7} | {:->18} | {:->18} | {:->7} | {:->10} |\n", "", "", "", "", "", "",
                       "");
    out += fmt::format("| {:<26} | {:<26} | {:>7} | {:>18} | {:>18} | {:>6.2f}x | {:>10} |\n", name, drafter, threads,
                       fmt::format("{:.2f} ± {:.2f}", plain_rate, stddev(plain_rates)),
                       fmt::format("{:.2f} ± {:.2f}", spec_rate, stddev(spec_rates)), speedup,
                       proposed > 0 ? fmt::format("{:.1f}%", 100.0 * acceptance) : std::string("-"));
    out += fmt::format("\ntg{} after the prompt, greedy; {} of {} proposed tokens accepted{}; median of {} rounds after "
                       "a warm-up, plain and speculative alternating; outputs identical\n",
                       b.n_gen, accepted, proposed,
                       proposed > 0 ? "" : " (the engine found speculation would not pay on this machine)",
                       b.repetitions);
    write_stdout(out);
    return exit_ok;
}

}  // namespace inlay::cli
