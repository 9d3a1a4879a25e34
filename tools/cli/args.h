// A small table-driven command-line parser for the `inlay` tool.
//
// Each command describes its options in a CommandSpec; parse_args() walks argv once and
// writes each value into the variable its Option points to. The accepted syntax is
// deliberately plain and stable: `--name VALUE`, `--name=VALUE`, `-x VALUE` (no bundling
// of short options, no abbreviations, no positional arguments). A value is always the
// next argument, even if it starts with '-' (so `--seed -1` and `-p "-x"` work).
#pragma once

#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace inlay::cli {

// A mistake on the command line: the tool prints one line and exits with code 2.
class UsageError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Where an option's value goes. bool* marks a flag (no value; sets true). A
// std::vector<std::string>* collects every occurrence; other kinds keep the last one.
// uint64_t* also accepts -1, meaning UINT64_MAX (the C ABI's "random seed").
using OptionTarget = std::variant<bool*, std::string*, std::optional<std::string>*, int32_t*, float*, uint64_t*,
                                  std::vector<std::string>*>;

struct Option {
    std::string_view long_name;   // "--temp"
    std::string_view short_name;  // "-t", or empty
    std::string_view value_name;  // "T" in the usage text; ignored for flags
    std::string_view help;        // one line
    OptionTarget target;
    double min = -std::numeric_limits<double>::infinity();  // accepted range of numbers
    double max = std::numeric_limits<double>::infinity();
    bool required = false;
};

struct CommandSpec {
    std::string_view name;      // "generate"
    std::string_view synopsis;  // "-m MODEL -p PROMPT [options]"
    std::string_view summary;   // one line
    std::vector<Option> options;
};

struct ParsedArgs {
    bool help = false;                  // -h/--help was given: usage went to stdout
    std::set<std::string_view> seen;    // long names of the options that appeared

    [[nodiscard]] bool has(std::string_view long_name) const { return seen.contains(long_name); }
};

// Parses `args` (the words after the command name) against `spec`. Prints the usage to
// stdout and returns help = true on -h/--help. Throws UsageError on an unknown option, a
// missing or malformed value, a number outside [min, max] or a missing required option.
ParsedArgs parse_args(const CommandSpec& spec, std::span<const std::string_view> args);

// The usage text of one command, generated from its table.
void print_usage(const CommandSpec& spec, std::FILE* out);

// Parses a comma-separated list of non-negative int32 ids ("1,2,3"); throws UsageError
// naming `option` when the list is empty or an entry is not such a number.
std::vector<int32_t> parse_id_list(std::string_view text, std::string_view option);

}  // namespace inlay::cli
