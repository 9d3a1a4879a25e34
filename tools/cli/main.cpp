// inlay: the command-line tool. Dispatches to one command per file (cmd_*.cpp) and
// turns their errors into the stable exit codes: 1 for library errors (one line
// "inlay: error: <inlay_last_error()>"), 2 for command-line mistakes.
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "app.h"
#include "args.h"
#include "load.h"

namespace {

using inlay::cli::CommandFn;

struct CommandEntry {
    std::string_view name;
    std::string_view summary;
    CommandFn run;
};

constexpr std::array<CommandEntry, 7> commands{{
    {"generate", "generate text from a prompt (streamed to stdout)", inlay::cli::run_generate},
    {"chat", "chat through the model's chat template (stdin lines in, replies out)", inlay::cli::run_chat},
    {"logits", "teacher-forced top-k logits for every prompt position", inlay::cli::run_logits},
    {"tokenize", "show the token ids of a text", inlay::cli::run_tokenize},
    {"inspect", "show a GGUF file's metadata and tensors", inlay::cli::run_inspect},
    {"bench", "measure prompt and generation speed (like llama-bench)", inlay::cli::run_bench},
    {"convert", "convert a Hugging Face folder (safetensors) to GGUF", inlay::cli::run_convert},
}};

void print_main_usage(std::FILE* out) {
    fmt::print(out, "usage: inlay COMMAND [options]\n\ncommands:\n");
    for (const CommandEntry& c : commands) fmt::print(out, "  {:<10}{}\n", c.name, c.summary);
    fmt::print(out,
               "\n  help [COMMAND]  show this help or a command's options (also: inlay COMMAND --help)\n"
               "  --version       show the version\n\n"
               "environment: INLAY_LOG_LEVEL=debug|info|warn|error sets what the library logs to stderr\n"
               "(default warn; debug traces every speculative decoding step)\n\n"
               "exit codes: 0 success, 1 error reported by the library, 2 bad command line\n");
}

const CommandEntry* find_command(std::string_view name) {
    for (const CommandEntry& c : commands) {
        if (c.name == name) return &c;
    }
    return nullptr;
}

int run_command(const CommandEntry& command, std::span<const std::string_view> args) {
    try {
        return command.run(args);
    } catch (const inlay::cli::UsageError& e) {
        fmt::print(stderr, "inlay {}: {} (see 'inlay {} --help')\n", command.name, e.what(), command.name);
        return inlay::cli::exit_usage;
    } catch (const inlay::Error& e) {
        std::fflush(stdout);
        fmt::print(stderr, "inlay: error: {}\n", e.what());
        return inlay::cli::exit_error;
    } catch (const std::bad_alloc&) {
        fmt::print(stderr, "inlay: error: {}: out of memory\n", inlay_status_name(INLAY_ERR_OUT_OF_MEMORY));
        return inlay::cli::exit_error;
    } catch (const std::exception& e) {
        fmt::print(stderr, "inlay: error: {}: {}\n", inlay_status_name(INLAY_ERR_INTERNAL), e.what());
        return inlay::cli::exit_error;
    }
}

// INLAY_LOG_LEVEL: the library's log threshold for this run (the default sink, stderr).
void apply_log_level() {
    const char* env = std::getenv("INLAY_LOG_LEVEL");
    if (!env || !*env) return;
    const std::string_view v(env);
    constexpr std::array<std::pair<std::string_view, inlay_log_level>, 4> levels{
        {{"debug", INLAY_LOG_DEBUG}, {"info", INLAY_LOG_INFO}, {"warn", INLAY_LOG_WARN}, {"error", INLAY_LOG_ERROR}}};
    for (const auto& [name, level] : levels) {
        if (v == name) {
            inlay_set_log_sink(nullptr, level, nullptr);
            return;
        }
    }
    fmt::print(stderr, "inlay: ignoring INLAY_LOG_LEVEL={} (debug, info, warn or error)\n",
               inlay::cli::c_quoted(v.substr(0, std::min<size_t>(v.size(), 64))));
}

}  // namespace

int main(int argc, char** argv) {
    apply_log_level();
    const std::vector<std::string_view> args(argv + 1, argv + argc);
    if (args.empty()) {
        print_main_usage(stderr);
        return inlay::cli::exit_usage;
    }
    const std::string_view first = args[0];
    if (first == "--version" || first == "version") {
        fmt::print("inlay {} (ABI {})\n", inlay_version(), inlay_abi_version());
        return inlay::cli::exit_ok;
    }
    if (first == "help" || first == "--help" || first == "-h") {
        if (args.size() == 1) {
            print_main_usage(stdout);
            return inlay::cli::exit_ok;
        }
        const CommandEntry* c = find_command(args[1]);
        if (!c || args.size() > 2) {
            fmt::print(stderr, "inlay help: unknown command {} (see 'inlay help')\n",
                       inlay::cli::c_quoted(args[1].substr(0, std::min<size_t>(args[1].size(), 64))));
            return inlay::cli::exit_usage;
        }
        const std::string_view help_flag[] = {"--help"};
        return run_command(*c, help_flag);
    }
    const CommandEntry* c = find_command(first);
    if (!c) {
        fmt::print(stderr, "inlay: unknown command {} (see 'inlay help')\n",
                   inlay::cli::c_quoted(first.substr(0, std::min<size_t>(first.size(), 64))));
        return inlay::cli::exit_usage;
    }
    return run_command(*c, std::span(args).subspan(1));
}
