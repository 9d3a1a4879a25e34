#include "process.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <fstream>
#include <sstream>

#include "support/test_paths.h"

extern char** environ;

namespace inlay::test {

ProcessResult run_process(const std::filesystem::path& program, const std::vector<std::string>& args,
                          const std::filesystem::path& stdin_path) {
    static std::atomic<int> counter{0};
    static const std::filesystem::path dir = scratch_dir("cli_process");
    const int id = counter++;
    const std::string out_path = (dir / ("out" + std::to_string(id))).string();
    const std::string err_path = (dir / ("err" + std::to_string(id))).string();

    std::vector<std::string> words{program.string()};
    words.insert(words.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);

    std::vector<std::string> env_words{"INLAY_N_THREADS=1"};
    for (char** e = environ; *e; ++e) {
        if (std::string_view(*e).starts_with("INLAY_N_THREADS=")) continue;
        env_words.emplace_back(*e);
    }
    std::vector<char*> envp;
    for (std::string& w : env_words) envp.push_back(w.data());
    envp.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string in_path = stdin_path.string();
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, in_path.c_str(), O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, words[0].c_str(), &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    ProcessResult result;
    if (rc != 0) {
        result.err = "posix_spawn failed: " + std::to_string(rc);
        return result;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) break;
    }
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    result.out = inlay::test::read_file(out_path);
    result.err = inlay::test::read_file(err_path);
    std::filesystem::remove(out_path);
    std::filesystem::remove(err_path);
    return result;
}

std::filesystem::path inlay_tool() {
    const auto path = binary_dir() / "tools" / "inlay";
    if (!std::filesystem::exists(path)) FAIL("the inlay tool is not built: " << path << " (build target inlay_cli)");
    return path;
}

}  // namespace inlay::test
