// `inlay chat` driven through stdin (multi-turn, /reset, /exit, --system, --no-think,
// templates from a file, errors) and `inlay tokenize -m FOLDER` on the Hugging Face
// tokenizer folders of testdata, checked against llama.cpp's vectors.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/process.h"
#include "support/test_paths.h"

using inlay::test::inlay_tool;
using inlay::test::run_process;
using inlay::test::testdata;
using nlohmann::json;

namespace {

const char* const k_chatml =
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

std::filesystem::path write_file(const std::string& name, const std::string& text) {
    static const auto dir = inlay::test::scratch_dir("cli_chat");
    const auto path = dir / name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
}

struct TurnStats {
    long processed;
    long reused;
};

// The "[turn N: P prompt tokens processed, R reused | ...]" lines of stderr.
std::vector<TurnStats> turn_stats(const std::string& err) {
    std::vector<TurnStats> out;
    std::istringstream lines(err);
    for (std::string line; std::getline(lines, line);) {
        if (!line.starts_with("[turn ")) continue;
        const size_t colon = line.find(": ");
        const size_t comma = line.find(" prompt tokens processed, ");
        const size_t bar = line.find(" reused |");
        if (colon == std::string::npos || comma == std::string::npos || bar == std::string::npos) continue;
        const size_t r0 = comma + std::string(" prompt tokens processed, ").size();
        out.push_back({std::stol(line.substr(colon + 2, comma - colon - 2)), std::stol(line.substr(r0, bar - r0))});
    }
    return out;
}

std::vector<std::string> chat_args(const std::filesystem::path& model, const std::filesystem::path& tmpl) {
    return {"chat", "-m",           model.string(), "--template", tmpl.string(), "-n", "5", "--temp",
            "0",    "--ignore-eos", "-t",           "1"};
}

}  // namespace

TEST_CASE("inlay chat: piped turns keep the KV, /reset starts over, /exit ends", "[cli][chat]") {
    const auto model = testdata("llamacpp-refs/qwen3-r256-f32.gguf");
    INLAY_REQUIRE_FILE_OR_SKIP(model);
    const auto tmpl = write_file("chatml.jinja", k_chatml);
    auto args = chat_args(model, tmpl);
    args.insert(args.end(), {"--system", "Be brief.", "--show-prompt"});

    const auto one = run_process(inlay_tool(), args, write_file("one.txt", "Hello\n"));
    INFO("stderr: " << one.err);
    REQUIRE(one.exit_code == 0);
    const std::string reply = one.out;  // the reply and a newline
    REQUIRE(reply.size() > 1);
    CHECK(reply.back() == '\n');

    const auto r =
        run_process(inlay_tool(), args, write_file("many.txt", "Hello\nAnd then?\n\n/reset\nHello\n/exit\nnot read\n"));
    INFO("stderr: " << r.err);
    REQUIRE(r.exit_code == 0);
    // Turn 3 repeats turn 1 after /reset: greedy, so the same reply.
    CHECK(r.out.starts_with(reply));
    CHECK(r.out.ends_with(reply));
    CHECK(r.out.size() > 2 * reply.size());
    const auto stats = turn_stats(r.err);
    REQUIRE(stats.size() == 3);  // the empty line is skipped, "not read" is after /exit
    CHECK(stats[0].reused == 0);
    CHECK(stats[1].reused > stats[0].processed / 2);  // the first turn's tokens are kept
    CHECK(stats[1].processed < stats[1].reused);
    CHECK(stats[2].reused == 0);  // /reset emptied the session
    CHECK(stats[2].processed == stats[0].processed);
    CHECK(r.err.find("[conversation reset]") != std::string::npos);
    CHECK(r.err.find("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello<|im_end|>") !=
          std::string::npos);
    CHECK(r.err.find("And then?") != std::string::npos);
    CHECK(r.err.find("not read") == std::string::npos);
}

TEST_CASE("inlay chat: the Qwen3 template's thinking switch", "[cli][chat]") {
    const auto model = testdata("llamacpp-refs/qwen3-r256-f32.gguf");
    const auto config = testdata("tokenizers/qwen3/tokenizer_config.json");
    INLAY_REQUIRE_FILE_OR_SKIP(model);
    INLAY_REQUIRE_FILE_OR_SKIP(config);
    const auto tmpl = write_file("qwen3.jinja", json::parse(inlay::test::read_file(config))["chat_template"].get<std::string>());
    auto args = chat_args(model, tmpl);
    args.insert(args.end(), {"--show-prompt", "--no-think", "-q"});
    const auto off = run_process(inlay_tool(), args, write_file("think.txt", "Hi\n"));
    INFO("stderr: " << off.err);
    REQUIRE(off.exit_code == 0);
    CHECK(off.err.find("<|im_start|>assistant\n<think>\n\n</think>\n\n\n[/prompt]") != std::string::npos);
    CHECK(off.err.find("[turn") == std::string::npos);  // -q
    args[args.size() - 2] = "--think";
    const auto on = run_process(inlay_tool(), args, write_file("think.txt", "Hi\n"));
    REQUIRE(on.exit_code == 0);
    CHECK(on.err.find("<|im_start|>assistant\n\n[/prompt]") != std::string::npos);
}

TEST_CASE("inlay chat: errors", "[cli][chat]") {
    const auto model = testdata("llamacpp-refs/qwen3-r256-f32.gguf");
    INLAY_REQUIRE_FILE_OR_SKIP(model);
    const auto input = write_file("hi.txt", "Hi\n");
    // The GGUF has no tokenizer.chat_template.
    auto r = run_process(inlay_tool(), {"chat", "-m", model.string(), "-t", "1"}, input);
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("INLAY_ERR_MISSING") != std::string::npos);
    CHECK(r.err.find("no chat template") != std::string::npos);
    const auto broken = write_file("broken.jinja", "line one\n{% for m in messages %}{{ m.content }");
    r = run_process(inlay_tool(), chat_args(model, broken), input);
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("chat template:2:") != std::string::npos);
    r = run_process(inlay_tool(), chat_args(model, write_file("missing-dir/none.jinja", "")), input);
    CHECK(r.exit_code == 2);
    auto both = chat_args(model, write_file("ok.jinja", k_chatml));
    both.insert(both.end(), {"--think", "--no-think"});
    CHECK(run_process(inlay_tool(), both, input).exit_code == 2);
    CHECK(run_process(inlay_tool(), {"chat"}, input).exit_code == 2);
    // A conversation that outgrows the context: reported, and the chat goes on.
    auto small = chat_args(model, write_file("ok.jinja", k_chatml));
    small.insert(small.end(), {"-c", "24"});
    r = run_process(inlay_tool(), small, write_file("long.txt", "Hello there\nAnd a much longer second message now\n"));
    INFO("stderr: " << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.err.find("INLAY_ERR_CONTEXT_FULL") != std::string::npos);
}

TEST_CASE("inlay tokenize -m FOLDER: Hugging Face tokenizer folders without weights", "[cli][chat]") {
    const auto qwen = testdata("tokenizers/qwen3");
    const auto llama = testdata("tokenizers/llama3");
    INLAY_REQUIRE_FILE_OR_SKIP(qwen / "tokenizer.json");
    INLAY_REQUIRE_FILE_OR_SKIP(llama / "tokenizer.json");
    // Reference ids: llama.cpp's vectors (Hugging Face's output), by test string.
    auto vectors = [](const std::string& name) {
        const std::string inp = inlay::test::read_file(testdata("vocab/ggml-vocab-" + name + ".gguf.inp"));
        std::istringstream out(inlay::test::read_file(testdata("vocab/ggml-vocab-" + name + ".gguf.out")));
        std::vector<std::pair<std::string, std::vector<int32_t>>> cases;
        const std::string separator = "\n__ggml_vocab_test__\n";
        size_t start = 0;
        for (std::string line; std::getline(out, line);) {
            const size_t end = inp.find(separator, start);
            std::istringstream ids(line);
            std::vector<int32_t> v;
            for (int32_t id = 0; ids >> id;) v.push_back(id);
            cases.emplace_back(inp.substr(start, end - start), std::move(v));
            start = end + separator.size();
        }
        return cases;
    };
    for (const auto& [folder, name] :
         {std::pair{qwen, std::string("qwen2")}, std::pair{llama, std::string("llama-bpe")}}) {
        const auto cases = vectors(name);
        REQUIRE(cases.size() == 46);
        for (const size_t i : {size_t{11}, size_t{20}, size_t{36}, size_t{45}}) {
            INFO(name << " case " << i << ": " << cases[i].first);
            const auto r = run_process(
                inlay_tool(), {"tokenize", "-m", folder.string(), "-p", cases[i].first, "--no-special", "--json"});
            INFO("stderr: " << r.err);
            REQUIRE(r.exit_code == 0);
            CHECK(json::parse(r.out)["tokens"].get<std::vector<int32_t>>() == cases[i].second);
        }
    }
    // The listing: Llama 3's tokenizer.json adds no BOS; special tokens are parsed.
    const auto listing = run_process(inlay_tool(), {"tokenize", "-m", llama.string(), "-p", "<|eot_id|>Hello world"});
    INFO("stderr: " << listing.err);
    REQUIRE(listing.exit_code == 0);
    CHECK(listing.out == " 128009 \"<|eot_id|>\"\n   9906 \"Hello\"\n   1917 \" world\"\n");
    // A folder with neither tokenizer file is no tokenizer folder: it goes to the model loader.
    const auto empty = inlay::test::scratch_dir("cli_chat_empty_folder");
    CHECK(run_process(inlay_tool(), {"tokenize", "-m", empty.string(), "-p", "x"}).exit_code == 1);
    const auto bad = inlay::test::scratch_dir("cli_chat_bad_folder");
    std::ofstream(bad / "tokenizer.json") << "{\"model\": {\"type\": \"WordPiece\"}}";
    const auto r = run_process(inlay_tool(), {"tokenize", "-m", bad.string(), "-p", "x"});
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("INLAY_ERR_UNSUPPORTED") != std::string::npos);
    CHECK(r.err.find("/model/type: model type \"WordPiece\"") != std::string::npos);
}
