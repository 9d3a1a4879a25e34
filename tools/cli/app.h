// Plumbing shared by the `inlay` commands: exit codes, the command table, timing and
// small output helpers. It uses only the C header, so that `inspect` (which includes
// the library's internal headers) can use it too; model loading is in load.h.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "inlay/inlay.h"

namespace inlay::cli {

// Exit codes of the tool (stable).
inline constexpr int exit_ok = 0;
inline constexpr int exit_error = 1;  // the library reported an error
inline constexpr int exit_usage = 2;  // bad command line

// One command: parses `args` (the words after its name) and runs. Returns the exit
// code; throws UsageError or the wrapper's inlay::Error, which main() reports.
using CommandFn = int (*)(std::span<const std::string_view> args);

int run_generate(std::span<const std::string_view> args);
int run_chat(std::span<const std::string_view> args);
int run_logits(std::span<const std::string_view> args);
int run_tokenize(std::span<const std::string_view> args);
int run_inspect(std::span<const std::string_view> args);
int run_bench(std::span<const std::string_view> args);
int run_convert(std::span<const std::string_view> args);

// Seconds on a monotonic clock, for differences.
double now_seconds();

// `bytes` as a double-quoted string with C-style escapes for quotes, backslashes,
// control characters and bytes that are not valid UTF-8 (\xNN); valid UTF-8 stays.
std::string c_quoted(std::string_view bytes);

// Name of a stop reason for output ("eog", "max_tokens", ...).
std::string_view stop_reason_name(inlay_stop_reason reason);

// Writes `text` to stdout and flushes (used for streaming).
void write_stdout(std::string_view text);

}  // namespace inlay::cli
