// The examples (built with INLAY_EXAMPLES=ON): simple.c streams the same greedy text
// as `inlay generate`; chat.cpp's second turn only processes its new tokens; demo.c
// goes through every step of its tour (errors, progress, streaming, a cancel from
// another thread, a chat through the default model's own template, device fallback).
#include <filesystem>
#include <array>
#include <cstdio>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli/process.h"
#include "support/test_paths.h"

using inlay::test::binary_dir;
using inlay::test::run_process;
using inlay::test::testdata;

namespace {

// Skips the rest of the test when the examples were not built.
#define REQUIRE_EXAMPLE_OR_SKIP(path)                                                      \
    do {                                                                                   \
        if (!std::filesystem::exists(path)) {                                              \
            INLAY_SKIP((path).string() + " is not built (INLAY_EXAMPLES=OFF?)");           \
        }                                                                                  \
    } while (0)

void check_demo(const std::filesystem::path& demo) {
    const auto model = inlay::test::source_dir() / "models" / "default-q8_0.gguf";
    const auto r = run_process(demo, {model.string(), "cpu"});
    INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("INLAY_ERR_IO: cannot open 'no/such/model.gguf'") != std::string::npos);
    CHECK(r.err.find("] 100%") != std::string::npos);  // the progress bar's last state
    CHECK(r.out.find("on cpu") != std::string::npos);
    // The streamed greedy text is `inlay generate`'s on the same device (the demo was
    // asked for the CPU; the tool's default, auto, would take a GPU where there is one).
    const auto cli = run_process(inlay::test::inlay_tool(), {"generate", "-m", model.string(), "-p", "You will", "--temp",
                                                             "0", "-n", "48", "--device", "cpu", "--json"});
    REQUIRE(cli.exit_code == 0);
    const std::string text = nlohmann::json::parse(cli.out)["text"];
    CHECK(r.out.find("== streaming (greedy)\n" + text + "\n  [stop: ") != std::string::npos);
    CHECK(r.out.find("[stop: cancelled after 5 of at most 200 tokens]") != std::string::npos);
    // Two chat turns; the second processes only what the session lacked.
    CHECK(r.out.find("  user: And what about money?") != std::string::npos);
    CHECK(r.out.find("this turn processed") != std::string::npos);

    // A device that cannot serve here is reported, then the CPU is used.
    const auto cuda = run_process(demo, {model.string(), "cuda"});
    CHECK(cuda.exit_code == 0);
    if (cuda.out.find("on cuda") == std::string::npos) {
        CHECK(cuda.err.find("INLAY_ERR_UNSUPPORTED") != std::string::npos);
        CHECK(cuda.out.find("on cpu") != std::string::npos);
    }
    CHECK(run_process(demo, {model.string(), "gpu"}).exit_code == 2);
    CHECK(run_process(demo, {}).exit_code == 2);
}

}  // namespace

TEST_CASE("examples/simple streams greedy text", "[cli][examples]") {
    const auto simple = binary_dir() / "examples" / "simple";
    REQUIRE_EXAMPLE_OR_SKIP(simple);
    const auto model = testdata("models/stories260K.gguf");
    INLAY_REQUIRE_FILE_OR_SKIP(model);

    const auto r = run_process(simple, {model.string(), ""});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto cli = run_process(inlay::test::inlay_tool(),
                                 {"generate", "-m", model.string(), "-p", "", "--temp", "0", "-n", "64", "-t", "1", "--json"});
    REQUIRE(cli.exit_code == 0);
    const std::string text = nlohmann::json::parse(cli.out)["text"];
    CHECK(r.out == text + "\n");
    CHECK(r.err.find("generated: 64 tokens") != std::string::npos);

    const auto usage = run_process(simple, {});
    CHECK(usage.exit_code == 2);
    const auto missing = run_process(simple, {"/nonexistent/model.gguf"});
    CHECK(missing.exit_code == 1);
    CHECK(missing.err.find("INLAY_ERR_IO") != std::string::npos);
}

TEST_CASE("examples/chat: the second turn only processes the new tokens", "[cli][examples]") {
    const auto chat = binary_dir() / "examples" / "chat";
    REQUIRE_EXAMPLE_OR_SKIP(chat);
    const auto model = testdata("models/stories260K.gguf");
    INLAY_REQUIRE_FILE_OR_SKIP(model);

    const auto r = run_process(chat, {model.string()});
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    // "[turn N] history before: H tokens; new prompt tokens: X; prompt tokens processed: P;
    //  generated: G; history after: A tokens"
    std::vector<std::array<long, 6>> turns;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
        std::array<long, 6> v{};
        if (std::sscanf(line.c_str(),
                        "[turn %ld] history before: %ld tokens; new prompt tokens: %ld; prompt tokens processed: %ld; "
                        "generated: %ld; history after: %ld tokens",
                        &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) == 6) {
            turns.push_back(v);
        }
    }
    REQUIRE(turns.size() == 2);
    const auto& first = turns[0];
    const auto& second = turns[1];
    CHECK(first[1] == 0);
    CHECK(first[3] == first[2]);                        // a fresh session processes its whole prompt
    CHECK(first[5] == first[2] + first[4]);             // history = prompt + generated
    CHECK(second[1] == first[5]);                       // the conversation continues
    CHECK(second[3] <= second[2] + 1);                  // new tokens (+ the last sampled one)
    CHECK(second[3] < second[1]);                       // not the history again
    CHECK(second[5] == second[1] + second[2] + second[4]);

    const auto missing = run_process(chat, {"/nonexistent/model.gguf"});
    CHECK(missing.exit_code == 1);
    CHECK(missing.err.find("INLAY_ERR_IO") != std::string::npos);
}

// demo (C) and demo_cpp (C++, inlay.hpp) take the same tour and print the same report.
TEST_CASE("examples/demo and demo_cpp: errors, progress, streaming, cancel, chat and the device", "[cli][examples]") {
    for (const char* name : {"demo", "demo_cpp"}) {
        INFO(name);
        const auto demo = binary_dir() / "examples" / name;
        REQUIRE_EXAMPLE_OR_SKIP(demo);
        check_demo(demo);
    }
}
