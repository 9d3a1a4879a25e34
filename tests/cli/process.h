// Runs a built program (the `inlay` tool, an example) for the CLI tests and captures
// its exit code, stdout and stderr.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace inlay::test {

struct ProcessResult {
    int exit_code = -1;  // -1 if it did not exit normally (signal)
    std::string out;
    std::string err;
};

// Runs `program` with `args` (no shell), stdin from `stdin_path` (default /dev/null), and
// waits for it. The environment is this process's plus INLAY_N_THREADS=1 (for the
// examples). Output goes through files in the test scratch area, so large outputs cannot
// block the child.
ProcessResult run_process(const std::filesystem::path& program, const std::vector<std::string>& args,
                          const std::filesystem::path& stdin_path = "/dev/null");

// The built `inlay` tool; fails the current test with a message when it is absent.
std::filesystem::path inlay_tool();

}  // namespace inlay::test
