// inlay logits: teacher-forced scoring. For every prompt position prints the top-K raw
// logits predicting the next token, in the format of llama.cpp's logits_dump cases
// (shared/testdata/llamacpp-refs/*.ref.json), so the two can be compared directly.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "app.h"
#include "args.h"
#include "load.h"

namespace inlay::cli {
namespace {

struct TopEntry {
    int32_t id;
    float logit;
};

// The k largest logits: higher logit first, ties by lower id. NaN sorts last so that
// the order stays a strict weak ordering.
std::vector<TopEntry> top_k(std::span<const float> logits, size_t k) {
    std::vector<TopEntry> all(logits.size());
    for (size_t i = 0; i < logits.size(); ++i) all[i] = {static_cast<int32_t>(i), logits[i]};
    const auto key = [](float v) { return std::isnan(v) ? -std::numeric_limits<float>::infinity() : v; };
    const auto before = [&](const TopEntry& a, const TopEntry& b) {
        const float ka = key(a.logit);
        const float kb = key(b.logit);
        if (ka != kb) return ka > kb;
        const bool a_nan = std::isnan(a.logit);
        if (a_nan != std::isnan(b.logit)) return !a_nan;
        return a.id < b.id;
    };
    k = std::min(k, all.size());
    std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(k), all.end(), before);
    all.resize(k);
    return all;
}

// %.9g round-trips a float; JSON has no NaN or infinity, so those become null.
std::string format_logit(float v) {
    if (!std::isfinite(v)) return "null";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
    return buf;
}

}  // namespace

int run_logits(std::span<const std::string_view> args) {
    std::string model_path;
    std::optional<std::string> prompt;
    std::optional<std::string> token_list;
    int32_t top = 8;
    int32_t n_threads = 0;
    std::string device = "auto";
    int32_t context_length = 0;
    bool no_bos = false;
    bool json = false;
    constexpr double int_max = std::numeric_limits<int32_t>::max();

    const CommandSpec spec{
        "logits",
        "-m MODEL (-p PROMPT | --tokens IDS) [options] --json",
        "Teacher-forced top-K logits for every prompt position (the format of llamacpp-refs/*.ref.json).",
        {
            {"--model", "-m", "MODEL", "GGUF model file", &model_path, 0, 0, true},
            {"--prompt", "-p", "PROMPT", "text, tokenized with BOS and special tokens (as llama.cpp)", &prompt},
            {"--tokens", "", "IDS", "comma-separated token ids, used exactly (no BOS added)", &token_list},
            {"--top", "", "K", "logits per position (default 8)", &top, 1, int_max},
            {"--no-bos", "", "", "with -p: do not prepend BOS", &no_bos},
            {"--threads", "-t", "N", "compute threads; 0 = all cores (default)", &n_threads, 0, 1024},
            {"--device", "", "D", kDeviceHelp, &device},
            {"--ctx-size", "-c", "N", "context length in tokens; 0 = the model's (default)", &context_length, 0,
             int_max},
            {"--json", "", "", "print JSON (otherwise a readable table)", &json},
        },
    };
    if (parse_args(spec, args).help) return exit_ok;
    if (prompt.has_value() == token_list.has_value()) throw UsageError("give exactly one of -p and --tokens");
    if (token_list && no_bos) throw UsageError("--no-bos applies to -p only (--tokens adds nothing)");
    std::vector<int32_t> tokens;
    if (token_list) tokens = parse_id_list(*token_list, "--tokens");

    LoadedModel loaded = load_model(model_path, n_threads, context_length, !json, device);
    if (prompt) {
        uint32_t flags = INLAY_TOKENIZE_PARSE_SPECIAL;
        if (!no_bos) flags |= INLAY_TOKENIZE_ADD_BOS;
        tokens = loaded.model.tokenize(*prompt, flags);
    }
    Session session(loaded.model);
    const size_t n_vocab = session.n_vocab();

    // Evaluate in chunks so that the logits buffer stays under 64 MiB for long prompts.
    const size_t chunk = std::max<size_t>(1, (size_t{1} << 24) / std::max<size_t>(1, n_vocab));
    std::vector<std::vector<TopEntry>> tops;
    tops.reserve(tokens.size());
    for (size_t start = 0; start < tokens.size(); start += chunk) {
        const size_t n = std::min(chunk, tokens.size() - start);
        const std::vector<float> logits = session.eval_logits(std::span(tokens).subspan(start, n));
        for (size_t i = 0; i < n; ++i) {
            tops.push_back(top_k(std::span(logits).subspan(i * n_vocab, n_vocab), static_cast<size_t>(top)));
        }
    }

    std::string out;
    if (json) {
        out = "{\"prompt_tokens\":[";
        for (size_t i = 0; i < tokens.size(); ++i) out += fmt::format("{}{}", i ? "," : "", tokens[i]);
        out += "],\"prompt_top\":[";
        for (size_t pos = 0; pos < tops.size(); ++pos) {
            out += pos ? ",[" : "[";
            for (size_t j = 0; j < tops[pos].size(); ++j) {
                out += fmt::format("{}{{\"id\":{},\"logit\":{}}}", j ? "," : "", tops[pos][j].id,
                                   format_logit(tops[pos][j].logit));
            }
            out += "]";
        }
        out += "]}\n";
    } else {
        for (size_t pos = 0; pos < tops.size(); ++pos) {
            const std::string piece = loaded.model.detokenize(std::span(tokens).subspan(pos, 1), true);
            out += fmt::format("{:5} {:7} {:<16}", pos, tokens[pos], c_quoted(piece));
            for (const TopEntry& e : tops[pos]) out += fmt::format("  {}:{}", e.id, format_logit(e.logit));
            out += "\n";
        }
    }
    write_stdout(out);
    return exit_ok;
}

}  // namespace inlay::cli
