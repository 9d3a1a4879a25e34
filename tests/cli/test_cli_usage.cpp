// The `inlay` tool's stable interface: --version, help, and the exit codes and one-line
// messages for command-line mistakes (2) and library errors (1).
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli/process.h"
#include "support/test_paths.h"

using inlay::test::inlay_tool;
using inlay::test::run_process;

namespace {

size_t line_count(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

}  // namespace

TEST_CASE("inlay --version and help", "[cli]") {
    const auto version = run_process(inlay_tool(), {"--version"});
    CHECK(version.exit_code == 0);
    CHECK(version.out.starts_with("inlay 0.1.0"));

    const auto help = run_process(inlay_tool(), {"help"});
    CHECK(help.exit_code == 0);
    for (const char* command : {"generate", "logits", "tokenize", "inspect", "bench"}) {
        CHECK(help.out.find(command) != std::string::npos);
        const auto own = run_process(inlay_tool(), {command, "--help"});
        CHECK(own.exit_code == 0);
        CHECK(own.out.starts_with(std::string("usage: inlay ") + command));
        CHECK(own.out.find("--model") != std::string::npos);
        const auto via_help = run_process(inlay_tool(), {"help", command});
        CHECK(via_help.exit_code == 0);
        CHECK(via_help.out == own.out);
    }
}

TEST_CASE("inlay: command-line mistakes exit with 2 and one line on stderr", "[cli]") {
    const std::string model = "/nonexistent/model.gguf";  // never opened: parsing fails first
    struct Case {
        std::vector<std::string> args;
        std::string mentions;  // a word the message must contain
    };
    const std::vector<Case> cases = {
        {{}, "usage"},
        {{"frobnicate"}, "frobnicate"},
        {{"help", "frobnicate"}, "frobnicate"},
        {{"generate", "-m", model, "-p", "x", "--bogus"}, "--bogus"},
        {{"generate", "-m", model, "-p", "x", "-n", "abc"}, "--n-predict"},
        {{"generate", "-m", model, "-p", "x", "-n", "-5"}, "--n-predict"},
        {{"generate", "-m", model, "-p", "x", "-n", "12x"}, "--n-predict"},
        {{"generate", "-m", model, "-p", "x", "--temp", "nan"}, "--temp"},
        {{"generate", "-m", model, "-p", "x", "--temp", "-1"}, "--temp"},
        {{"generate", "-m", model, "-p", "x", "--top-p", "0"}, "--top-p"},
        {{"generate", "-m", model, "-p", "x", "--top-p", "1.5"}, "--top-p"},
        {{"generate", "-m", model, "-p", "x", "--seed", "x1"}, "--seed"},
        {{"generate", "-m", model, "-p", "x", "--stop", ""}, "--stop"},
        {{"generate", "-m", model, "-p", "x", "-t", "100000"}, "--threads"},
        {{"generate", "-m", model, "-p", "x", "--json=yes"}, "--json"},
        {{"generate", "-m", model, "-p", "x", "-n"}, "--n-predict"},
        {{"generate", "-m", model}, "-p"},
        {{"generate", "-p", "x"}, "-m"},
        {{"generate", "-m", model, "-p", "x", "stray"}, "stray"},
        {{"logits", "-m", model, "--json"}, "--tokens"},
        {{"logits", "-m", model, "-p", "x", "--tokens", "1,2", "--json"}, "--tokens"},
        {{"logits", "-m", model, "--tokens", "1,,2", "--json"}, "--tokens"},
        {{"logits", "-m", model, "--tokens", "1,-2", "--json"}, "--tokens"},
        {{"logits", "-m", model, "--tokens", "", "--json"}, "--tokens"},
        {{"logits", "-m", model, "--tokens", "1", "--top", "0", "--json"}, "--top"},
        {{"tokenize", "-m", model}, "-p"},
        {{"inspect"}, "-m"},
        {{"bench", "-m", model, "-r", "0"}, "--repetitions"},
        {{"bench", "-m", model, "-p", "many"}, "--n-prompt"},
        {{"generate", "-m", model, "-p", "x", "--device", "gpu"}, "--device"},
        {{"generate", "-m", model, "-p", "x", "--device", "cuda:x"}, "--device"},
        {{"bench", "-m", model, "--device", "cuda:"}, "--device"},
        {{"chat", "-m", model, "--device", "CPU"}, "--device"},
        {{"bench", "-m", model, "--concurrency", "2", "--device", "tpu"}, "--device"},
        {{"bench"}, "--synthetic"},
        {{"bench", "-m", model, "--synthetic", "tiny"}, "--synthetic"},
        {{"bench", "--synthetic", "gpt-17"}, "llama3-8b"},
        {{"bench", "--synthetic", "tiny", "--dtype", "q3_k"}, "--dtype"},
    };
    for (const Case& c : cases) {
        INFO("inlay " << Catch::Detail::stringify(c.args));
        const auto r = run_process(inlay_tool(), c.args);
        CHECK(r.exit_code == 2);
        CHECK(r.out.empty());
        if (!c.args.empty()) CHECK(line_count(r.err) == 1);
        CHECK(r.err.find(c.mentions) != std::string::npos);
    }
}

TEST_CASE("inlay: a missing model file exits with 1 and INLAY_ERR_IO", "[cli]") {
    const std::string model = "/nonexistent/model.gguf";
    const std::vector<std::vector<std::string>> commands = {
        {"generate", "-m", model, "-p", "x"},
        {"generate", "-m", model, "-p", "x", "--json"},
        {"logits", "-m", model, "--tokens", "1", "--json"},
        {"tokenize", "-m", model, "-p", "x"},
        {"inspect", "-m", model},
        {"bench", "-m", model, "--json"},
    };
    for (const auto& args : commands) {
        INFO("inlay " << Catch::Detail::stringify(args));
        const auto r = run_process(inlay_tool(), args);
        CHECK(r.exit_code == 1);
        CHECK(r.out.empty());
        CHECK(r.err.starts_with("inlay: error: INLAY_ERR_IO"));
        CHECK(r.err.find("model.gguf") != std::string::npos);
        CHECK(line_count(r.err) == 1);
    }
}

TEST_CASE("inlay --device: the CPU on request, CUDA refused where no CUDA device serves", "[cli]") {
    const std::string model = (inlay::test::source_dir() / "models" / "default-q8_0.gguf").string();
    const auto cpu = run_process(inlay_tool(), {"generate", "-m", model, "-p", "You", "-n", "3", "--device", "cpu", "--json"});
    CHECK(cpu.exit_code == 0);
    CHECK(cpu.out.find("\"tokens\"") != std::string::npos);
    const char* expect_gpu = std::getenv("INLAY_TEST_EXPECT_GPU");
    if (expect_gpu && std::string(expect_gpu) == "1") return;  // the GPU run checks CUDA itself
    const auto cuda = run_process(inlay_tool(), {"generate", "-m", model, "-p", "You", "-n", "3", "--device", "cuda"});
    CHECK(cuda.exit_code == 1);
    CHECK(cuda.err.starts_with("inlay: error: INLAY_ERR_UNSUPPORTED"));
    CHECK(cuda.err.find("cuda") != std::string::npos);
}

TEST_CASE("inlay bench --synthetic: a named shape with random weights, no model file", "[cli]") {
    const auto r = run_process(inlay_tool(), {"bench", "--synthetic", "tiny", "--dtype", "q8_0", "-p", "40", "-n", "6",
                                              "--batch", "3", "-r", "2", "--device", "cpu", "-t", "1", "--json"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["shape"] == "tiny");
    CHECK(j["device"] == "cpu");
    CHECK(j["samples"]["prefill_tokens_per_s"].size() == 2);
    CHECK(j["samples"]["decode_tokens_per_s"].size() == 2);
    CHECK(j["samples"]["batch_decode_tokens_per_s"].size() == 2);
    CHECK(j["prefill_tokens_per_s"].get<double>() > 0);
    CHECK(j["decode_tokens_per_s"].get<double>() > 0);
    CHECK(j["batch_decode_tokens_per_s"].get<double>() > 0);
    // tiny: vocab 1024, embd 256, 2 layers, q 256, kv 64, ff 512; q8_0 rows of n take
    // n / 32 * 34 bytes, f32 norms 4 per element.
    const auto q8 = [](int64_t n) { return n / 32 * 34; };
    const int64_t layer = q8(256) * (256 + 64 + 64) + q8(256) * 256 + q8(256) * 512 * 2 + q8(512) * 256 + 2 * 256 * 4;
    const int64_t total = 2 * q8(256) * 1024 + 256 * 4 + 2 * layer;
    CHECK(j["weights_bytes"].get<int64_t>() == total);
    // A decode token reads every weight but the embedding table (one row of it) and some KV.
    const double per_token = j["decode_bytes_per_token"].get<double>();
    CHECK(per_token > static_cast<double>(total - q8(256) * 1024));
    CHECK(per_token < static_cast<double>(total));
}
