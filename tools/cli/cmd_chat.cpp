// inlay chat: an interactive multi-turn conversation through the model's chat template.
// Each line read from stdin is a user message; the reply streams to stdout. /reset
// starts over (keeping --system), /exit (or end of input) quits. The session keeps its
// KV cache, so each turn only processes what is new.
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "app.h"
#include "args.h"
#include "load.h"
#include "speculation_option.h"

namespace inlay::cli {
namespace {

std::string read_template_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw UsageError(fmt::format("cannot read the template file {}", c_quoted(path)));
    std::ostringstream s;
    s << in.rdbuf();
    if (s.str().empty()) throw UsageError(fmt::format("the template file {} is empty", c_quoted(path)));
    return s.str();
}

void print_help() {
    fmt::print(stderr, "commands: /reset (start over), /exit (quit), /help; any other line is your message\n");
}

}  // namespace

int run_chat(std::span<const std::string_view> args) {
    GenerateOptions gen;
    std::string model_path;
    std::optional<std::string> system;
    std::optional<std::string> template_path;
    bool no_think = false;
    bool think = false;
    bool show_prompt = false;
    bool quiet = false;
    int32_t n_threads = 0;
    std::string device = "auto";
    int32_t context_length = 0;
    constexpr double int_max = std::numeric_limits<int32_t>::max();
    inlay_generate_params& p = gen.params;
    p.max_tokens = 1024;
    SpeculationArgs speculation;

    CommandSpec spec{
        "chat",
        "-m MODEL [options] < messages",
        "Chats with MODEL through its chat template: each stdin line is a user message; replies stream to stdout.\n"
        "Commands: /reset starts over, /exit quits.",
        {
            {"--model", "-m", "MODEL", "GGUF model file", &model_path, 0, 0, true},
            {"--system", "-s", "TEXT", "system prompt", &system},
            {"--no-think", "", "", "ask the template for no reasoning (enable_thinking=false, Qwen3)", &no_think},
            {"--think", "", "", "ask the template for reasoning (enable_thinking=true)", &think},
            {"--template", "", "FILE", "Jinja chat template to use instead of the model's", &template_path},
            {"--n-predict", "-n", "N", "tokens per reply at most (default 1024)", &p.max_tokens, 1, int_max},
            {"--temp", "", "T", "temperature; 0 = greedy (default 0.8)", &p.temperature, 0, 1e6},
            {"--top-k", "", "K", "keep the K most likely tokens; 0 = off (default 40)", &p.top_k, 0, int_max},
            {"--top-p", "", "P", "nucleus sampling in (0, 1]; 1 = off (default 0.95)", &p.top_p, 0, 1},
            {"--min-p", "", "P", "drop tokens below P times the top probability (default 0.05)", &p.min_p, 0, 1},
            {"--repeat-penalty", "", "F", "penalty for recently seen tokens; 1 = off (default 1)", &p.repeat_penalty, 0,
             1e6},
            {"--seed", "", "S", "random seed; -1 = random (default)", &p.seed},
            {"--ignore-eos", "", "", "do not stop at end-of-turn tokens (for tests)", &p.ignore_eos},
            {"--threads", "-t", "N", "compute threads; 0 = all cores (default)", &n_threads, 0, 1024},
            {"--device", "", "D", kDeviceHelp, &device},
            {"--ctx-size", "-c", "N", "context length in tokens; 0 = the model's (default)", &context_length, 0,
             int_max},
            {"--show-prompt", "", "", "print each rendered conversation to stderr", &show_prompt},
            {"--quiet", "-q", "", "no prompts, banners or per-turn statistics on stderr", &quiet},
        },
    };
    speculation.add_options(spec.options);
    const ParsedArgs parsed = parse_args(spec, args);
    if (parsed.help) return exit_ok;
    if (no_think && think) throw UsageError("--think and --no-think exclude each other");
    if (p.top_p <= 0.0f) throw UsageError("--top-p must be in (0, 1]");
    if (p.repeat_penalty <= 0.0f) throw UsageError("--repeat-penalty must be greater than 0");

    ChatOptions chat;
    chat.thinking = no_think ? INLAY_THINKING_OFF : think ? INLAY_THINKING_ON : INLAY_THINKING_DEFAULT;
    if (template_path) chat.chat_template = read_template_file(*template_path);

    const bool interactive = isatty(STDIN_FILENO) != 0;
    LoadedModel loaded = load_model(model_path, n_threads, context_length, !quiet, device);
    std::optional<LoadedModel> draft;
    Session session(loaded.model,
                    speculation_session(speculation, parsed, n_threads, context_length, device, draft));

    std::vector<ChatMessage> base;
    if (system) base.push_back({"system", *system});
    std::vector<ChatMessage> messages = base;
    // Fail early (before the first message) on a missing or broken template.
    (void)loaded.model.apply_chat_template(base.empty() ? std::vector<ChatMessage>{{"user", "x"}} : base, chat);
    if (interactive && !quiet) print_help();

    std::string line;
    int turn = 0;
    while (true) {
        if (interactive) write_stdout("> ");
        if (!std::getline(std::cin, line)) break;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty()) continue;
        if (line == "/exit" || line == "/quit") break;
        if (line == "/help") {
            print_help();
            continue;
        }
        if (line == "/reset") {
            messages = base;
            session.reset();
            if (!quiet) fmt::print(stderr, "[conversation reset]\n");
            continue;
        }
        messages.push_back({"user", line});
        if (show_prompt)
            fmt::print(stderr, "[prompt]\n{}\n[/prompt]\n", loaded.model.apply_chat_template(messages, chat));
        ++turn;
        try {
            const Result reply = session.chat(messages, chat, gen, [](int32_t, std::string_view piece) {
                write_stdout(piece);
                return true;
            });
            const std::string text(reply.text());
            if (text.empty() || text.back() != '\n') write_stdout("\n");
            messages.push_back({"assistant", text});
            if (!quiet) {
                const inlay_timings t = reply.timings();
                const size_t processed = reply.prompt_tokens().size();
                const size_t total = session.n_tokens() - reply.tokens().size();
                const std::string drafts =
                    t.draft_tokens_proposed > 0
                        ? fmt::format(" | {} of {} proposals accepted", t.draft_tokens_accepted, t.draft_tokens_proposed)
                        : "";
                fmt::print(stderr, "[turn {}: {} prompt tokens processed, {} reused | {} generated, {:.1f} t/s{} | {}]\n",
                           turn, processed, total - processed, t.generated_tokens, t.decode_tokens_per_s, drafts,
                           stop_reason_name(reply.stop_reason()));
            }
        } catch (const Error& e) {
            if (e.status() != INLAY_ERR_CONTEXT_FULL) throw;
            messages.pop_back();
            fmt::print(stderr, "inlay: {}\n[the conversation no longer fits: /reset to start over]\n", e.what());
        }
    }
    if (interactive) write_stdout("\n");
    return exit_ok;
}

}  // namespace inlay::cli
