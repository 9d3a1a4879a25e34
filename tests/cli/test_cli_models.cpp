// The `inlay` commands on real models, checked against independent references:
// llama2.c's greedy sample of stories260K, llama.cpp's logits (llamacpp-refs) and
// tokenizer vectors (vocab/*.inp/.out), and the file facts in shared/testdata/README.md.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli/process.h"
#include "support/test_paths.h"

using inlay::test::inlay_tool;
using inlay::test::run_process;
using inlay::test::testdata;
using nlohmann::json;

namespace {

// Runs inlay with `args`, requires exit code 0 and parses stdout as one JSON value.
json run_json(const std::vector<std::string>& args) {
    INFO("inlay " << Catch::Detail::stringify(args));
    const auto r = run_process(inlay_tool(), args);
    INFO("stderr: " << r.err);
    REQUIRE(r.exit_code == 0);
    REQUIRE(!r.out.empty());
    REQUIRE(r.out.back() == '\n');
    REQUIRE(r.out.find('\n') == r.out.size() - 1);  // one line
    return json::parse(r.out);
}

std::string join_ids(const std::vector<int32_t>& ids) {
    std::string out;
    for (size_t i = 0; i < ids.size(); ++i) out += (i ? "," : "") + std::to_string(ids[i]);
    return out;
}

}  // namespace

TEST_CASE("inlay generate: greedy stories260K from BOS is llama2.c's sample", "[cli]") {
    const auto model = testdata("models/stories260K.gguf");
    INLAY_REQUIRE_FILE_OR_SKIP(model);
    const std::string expected = inlay::test::read_file(testdata("models/stories260K.greedy.txt"));
    REQUIRE(expected.ends_with('\n'));  // the file adds one final newline

    const json out = run_json({"generate", "-m", model.string(), "-p", "", "--temp", "0", "-n", "256", "-t", "1", "--json"});
    CHECK(out["prompt_tokens"] == json::array({1}));
    CHECK(out["tokens"].size() == 256);
    CHECK(out["stop_reason"] == "max_tokens");
    CHECK(out["text"].get<std::string>() + "\n" == expected);
    const json& t = out["timings"];
    for (const char* key : {"load_s", "prefill_tokens_per_s", "decode_tokens_per_s"}) {
        INFO(key);
        REQUIRE(t.contains(key));
        CHECK(t[key].is_number());
        CHECK(t[key].get<double>() >= 0.0);
    }
    CHECK(t["decode_tokens_per_s"].get<double>() > 0.0);

    // Streaming prints the same text, then the newline the tool adds at the end.
    const auto streamed =
        run_process(inlay_tool(), {"generate", "-m", model.string(), "-p", "", "--temp", "0", "-n", "256", "-t", "1"});
    CHECK(streamed.exit_code == 0);
    CHECK(streamed.out == expected);
    CHECK(streamed.err.find("loading [") == std::string::npos);  // stderr is not a terminal: no bar
}

TEST_CASE("inlay generate: prompt, stop strings, seeds, --no-bos", "[cli]") {
    const auto model = testdata("models/stories260K.gguf");
    INLAY_REQUIRE_FILE_OR_SKIP(model);
    const std::string greedy = inlay::test::read_file(testdata("models/stories260K.greedy.txt"));
    const std::string m = model.string();

    // The greedy story starts "Once upon a time"; continuing that prompt gives the rest.
    const json cont = run_json({"generate", "-m", m, "-p", "Once upon a time", "--temp", "0", "-n", "40", "-t", "1", "--json"});
    CHECK(cont["prompt_tokens"] == json::array({1, 403, 407, 261, 378}));
    CHECK(greedy.starts_with("Once upon a time" + cont["text"].get<std::string>()));

    // A stop string ends generation before it; it is not part of the text.
    const json stopped = run_json(
        {"generate", "-m", m, "-p", "", "--temp", "0", "-n", "256", "--stop", "Lily", "--stop", "zebra", "-t", "1", "--json"});
    CHECK(stopped["stop_reason"] == "stop_string");
    CHECK(stopped["text"] == greedy.substr(0, greedy.find("Lily")));

    // Sampling with a seed is reproducible; different seeds differ.
    const std::vector<std::string> sampled = {"generate", "-m", m, "-p", "Once", "--temp", "1", "-n", "48", "--ignore-eos",
                                              "-t", "1", "--json", "--seed"};
    auto with_seed = [&](const char* seed) {
        auto args = sampled;
        args.emplace_back(seed);
        return run_json(args);
    };
    const json a = with_seed("11");
    const json b = with_seed("11");
    const json c = with_seed("12");
    CHECK(a["tokens"] == b["tokens"]);
    CHECK(a["tokens"] != c["tokens"]);
    CHECK(a["tokens"].size() == 48);

    // --no-bos: the prompt tokens are the text's alone.
    const json nobos = run_json({"generate", "-m", m, "-p", "Once upon a time", "--no-bos", "-n", "0", "--json"});
    CHECK(nobos["prompt_tokens"] == json::array({403, 407, 261, 378}));
    CHECK(nobos["tokens"].empty());
    CHECK(nobos["stop_reason"] == "none");

    // -c limits the context: a 300-token request in 64 tokens of context ends early.
    const json full = run_json({"generate", "-m", m, "-p", "", "--temp", "0", "-n", "300", "-c", "64", "-t", "1", "--json"});
    CHECK(full["stop_reason"] == "context_full");
    CHECK(full["prompt_tokens"].size() + full["tokens"].size() <= 64);

    // Token ids the library rejects come back as exit code 1 with the status name.
    const auto bad = run_process(inlay_tool(), {"generate", "-m", m, "-p", "\xff", "--json"});
    CHECK(bad.exit_code == 1);
    CHECK(bad.err.starts_with("inlay: error: INLAY_ERR_INVALID_UTF8"));
}

TEST_CASE("inlay logits: matches llama.cpp's logits_dump references", "[cli]") {
    // f32 models: the weights are exact on both sides, but llama.cpp keeps its KV cache
    // in f16 (logits_dump uses the default cache type), which moves its logits by up to
    // ~3e-3 here; f16/q8_0 weights add their own rounding on top.
    const std::vector<std::pair<std::string, double>> models = {
        {"llama-r256-f32", 5e-3}, {"qwen3-r256-f32", 5e-3}, {"llama-r256-q8_0", 3e-2}, {"qwen3-r256-f16", 3e-2}};
    for (const auto& [name, tolerance] : models) {
        const auto gguf = testdata("llamacpp-refs/" + name + ".gguf");
        INLAY_REQUIRE_FILE_OR_SKIP(gguf);
        const json ref = json::parse(inlay::test::read_file(testdata("llamacpp-refs/" + name + ".ref.json")));
        for (const json& c : ref["cases"]) {
            const auto tokens = c["prompt_tokens"].get<std::vector<int32_t>>();
            INFO(name << " tokens " << join_ids(tokens));
            const json out =
                run_json({"logits", "-m", gguf.string(), "--tokens", join_ids(tokens), "-t", "1", "--json"});
            CHECK(out["prompt_tokens"] == c["prompt_tokens"]);
            const json& ours = out["prompt_top"];
            const json& theirs = c["prompt_top"];
            REQUIRE(ours.size() == theirs.size());
            for (size_t pos = 0; pos < ours.size(); ++pos) {
                INFO("position " << pos);
                REQUIRE(ours[pos].size() == 8);
                std::map<int, double> mine;
                for (const json& e : ours[pos]) mine[e["id"].get<int>()] = e["logit"].get<double>();
                // Sorted: higher logit first, ties by lower id.
                for (size_t j = 1; j < ours[pos].size(); ++j) {
                    const double prev = ours[pos][j - 1]["logit"].get<double>();
                    const double cur = ours[pos][j]["logit"].get<double>();
                    CHECK((prev > cur || (prev == cur && ours[pos][j - 1]["id"] < ours[pos][j]["id"])));
                }
                // Every reference entry clearly inside the top 8 is ours too, with a close logit.
                const double eighth = theirs[pos][7]["logit"].get<double>();
                for (const json& e : theirs[pos]) {
                    const double logit = e["logit"].get<double>();
                    const auto it = mine.find(e["id"].get<int>());
                    if (it == mine.end()) {
                        CHECK(logit - eighth <= 2 * tolerance);  // a near-tie at the boundary
                        continue;
                    }
                    CHECK(std::abs(it->second - logit) <= tolerance * std::max(1.0, std::abs(logit)));
                }
                const double gap = theirs[pos][0]["logit"].get<double>() - theirs[pos][1]["logit"].get<double>();
                if (gap > 2 * tolerance) CHECK(ours[pos][0]["id"] == theirs[pos][0]["id"]);
            }
        }
        // -p tokenizes like llama.cpp (BOS where the model asks for it, special tokens parsed).
        const json by_prompt = run_json({"logits", "-m", gguf.string(), "-p", "Once upon a time", "--top", "3", "-t", "1", "--json"});
        CHECK(by_prompt["prompt_tokens"] == ref["cases"][0]["prompt_tokens"]);
        REQUIRE(by_prompt["prompt_top"].size() == by_prompt["prompt_tokens"].size());
        CHECK(by_prompt["prompt_top"][0].size() == 3);
    }

    // Output format: compact, one line, logits with at most 9 significant digits (%.9g).
    const auto gguf = testdata("llamacpp-refs/llama-r256-f32.gguf");
    INLAY_REQUIRE_FILE_OR_SKIP(gguf);
    const auto raw = run_process(inlay_tool(), {"logits", "-m", gguf.string(), "--tokens", "1,259", "--top", "2", "--json"});
    REQUIRE(raw.exit_code == 0);
    CHECK(raw.out.starts_with("{\"prompt_tokens\":[1,259],\"prompt_top\":[[{\"id\":"));
    CHECK(raw.out.find(' ') == std::string::npos);
    const auto bad = run_process(inlay_tool(), {"logits", "-m", gguf.string(), "--tokens", "1,512", "--json"});
    CHECK(bad.exit_code == 1);
    CHECK(bad.err.starts_with("inlay: error: INLAY_ERR_INVALID_TOKEN"));
}

TEST_CASE("inlay tokenize: llama.cpp's SentencePiece test vectors through the CLI", "[cli]") {
    // llama-2-tiny-random.gguf carries the Llama 2 vocabulary, identical to
    // vocab/ggml-vocab-llama-spm.gguf (README); the .out ids are without BOS and
    // without special-token parsing.
    const auto model = testdata("models/llama-2-tiny-random.gguf");
    const auto inp_path = testdata("vocab/ggml-vocab-llama-spm.gguf.inp");
    INLAY_REQUIRE_FILE_OR_SKIP(model);
    INLAY_REQUIRE_FILE_OR_SKIP(inp_path);
    const std::string inp = inlay::test::read_file(inp_path);
    const std::string out = inlay::test::read_file(testdata("vocab/ggml-vocab-llama-spm.gguf.out"));
    const std::string separator = "\n__ggml_vocab_test__\n";
    std::vector<std::string> texts;
    for (size_t start = 0;;) {
        const size_t end = inp.find(separator, start);
        if (end == std::string::npos) break;
        texts.push_back(inp.substr(start, end - start));
        start = end + separator.size();
    }
    std::vector<std::vector<int32_t>> expected;
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) {
        std::istringstream ids(line);
        std::vector<int32_t> v;
        for (int32_t id = 0; ids >> id;) v.push_back(id);
        expected.push_back(std::move(v));
    }
    REQUIRE(texts.size() == 46);
    REQUIRE(expected.size() == texts.size());
    for (size_t i = 0; i < texts.size(); ++i) {
        INFO("case " << i << ": " << texts[i]);
        const json got = run_json({"tokenize", "-m", model.string(), "-p", texts[i], "--no-bos", "--no-special", "--json"});
        CHECK(got["tokens"].get<std::vector<int32_t>>() == expected[i]);
    }
}

// Tokenizing reads the vocabulary alone: llama.cpp's vocabulary-only files (no tensors)
// work as llama-tokenize reads them, and a folder holding both tokenizer.model and
// tokenizer.json uses tokenizer.model, as loading the folder as a model does.
TEST_CASE("inlay tokenize: vocabulary-only GGUF files and a folder with both tokenizer files", "[cli]") {
    const auto spm = testdata("vocab/ggml-vocab-llama-spm.gguf");
    const auto gpt2 = testdata("vocab/ggml-vocab-gpt-2.gguf");
    const auto sp_model = testdata("tokenizers/llama2-tokenizer.model");
    const auto qwen_json = testdata("tokenizers/qwen3/tokenizer.json");
    for (const auto& p : {spm, gpt2, sp_model, qwen_json}) INLAY_REQUIRE_FILE_OR_SKIP(p);
    // First lines of the .out files (llama.cpp's ids for "ied 4 \u00bd months", no BOS).
    CHECK(run_json({"tokenize", "-m", spm.string(), "-p", "ied 4 \xC2\xBD months", "--no-bos", "--no-special",
                    "--json"})["tokens"] == json::array({474, 287, 29871, 29946, 29871, 30226, 7378}));
    CHECK(run_json({"tokenize", "-m", gpt2.string(), "-p", "Hello world", "--no-bos", "--json"})["tokens"] ==
          json::array({15496, 995}));
    const auto both = inlay::test::scratch_dir("cli_tokenize_both_files");
    std::filesystem::copy_file(sp_model, both / "tokenizer.model");
    std::filesystem::copy_file(qwen_json, both / "tokenizer.json");
    const json from_folder = run_json({"tokenize", "-m", both.string(), "-p", "Hello world", "--json"});
    const json from_spm = run_json({"tokenize", "-m", spm.string(), "-p", "Hello world", "--json"});
    CHECK(from_folder["tokens"] == json::array({1, 15043, 3186}));
    CHECK(from_folder == from_spm);
}

TEST_CASE("inlay tokenize: flags and the text listing", "[cli]") {
    const auto model = testdata("models/stories260K.gguf");
    INLAY_REQUIRE_FILE_OR_SKIP(model);
    const std::string m = model.string();
    CHECK(run_json({"tokenize", "-m", m, "-p", "Once upon a time", "--json"})["tokens"] ==
          json::array({1, 403, 407, 261, 378}));
    CHECK(run_json({"tokenize", "-m", m, "-p", "Once upon a time", "--no-bos", "--json"})["tokens"] ==
          json::array({403, 407, 261, 378}));
    CHECK(run_json({"tokenize", "-m", m, "-p", "<s>", "--no-bos", "--json"})["tokens"] == json::array({1}));
    CHECK(run_json({"tokenize", "-m", m, "-p", "<s>", "--no-bos", "--no-special", "--json"})["tokens"] !=
          json::array({1}));
    CHECK(run_json({"tokenize", "-m", m, "-p", "", "--no-bos", "--json"})["tokens"] == json::array());

    const auto listing = run_process(inlay_tool(), {"tokenize", "-m", m, "-p", "Once upon a time"});
    CHECK(listing.exit_code == 0);
    CHECK(listing.out == "      1 \"<s>\"\n    403 \" Once\"\n    407 \" upon\"\n    261 \" a\"\n    378 \" time\"\n");
}

TEST_CASE("inlay inspect: header, metadata and tensors of stories260K", "[cli]") {
    const auto model = testdata("models/stories260K.gguf");
    INLAY_REQUIRE_FILE_OR_SKIP(model);
    // Facts from shared/testdata/README.md.
    const json out = run_json({"inspect", "-m", model.string(), "--json"});
    CHECK(out["version"] == 3);
    CHECK(out["alignment"] == 32);
    CHECK(out["data_offset"] == 14176);
    CHECK(out["file_bytes"] == 1185376);
    REQUIRE(out["metadata"].size() == 19);
    REQUIRE(out["tensors"].size() == 48);
    std::map<std::string, json> meta;
    for (const json& e : out["metadata"]) meta[e["key"].get<std::string>()] = e;
    CHECK(meta["general.architecture"]["value"] == "llama");
    CHECK(meta["llama.embedding_length"]["value"] == 64);
    CHECK(meta["llama.block_count"]["type"] == "u32");
    CHECK(std::abs(meta["llama.attention.layer_norm_rms_epsilon"]["value"].get<double>() - 1e-5) < 1e-10);
    CHECK(meta["tokenizer.ggml.tokens"]["elem_type"] == "string");
    CHECK(meta["tokenizer.ggml.tokens"]["length"] == 512);
    CHECK(meta["tokenizer.ggml.tokens"]["truncated"] == true);
    CHECK(meta["tokenizer.ggml.tokens"]["value"][1] == "<s>");
    CHECK(meta["tokenizer.ggml.tokens"]["value"].size() < 512);

    const json& first = out["tensors"][0];
    CHECK(first["name"] == "token_embd.weight");
    CHECK(first["type"] == "f32");
    CHECK(first["shape"] == json::array({64, 512}));
    CHECK(first["bytes"] == 64 * 512 * 4);
    int64_t bytes = 0;
    int64_t elements = 0;
    for (const json& t : out["tensors"]) {
        CHECK(t["type"] == "f32");
        bytes += t["bytes"].get<int64_t>();
        elements += t["elements"].get<int64_t>();
        CHECK(t["bytes"].get<int64_t>() == 4 * t["elements"].get<int64_t>());
    }
    CHECK(out["totals"]["bytes"] == bytes);
    CHECK(out["totals"]["elements"] == elements);
    CHECK(out["totals"]["tensors"] == 48);
    CHECK(elements == 2 * 64 * 512 + 64 + 5 * (2 * 64 * 64 + 2 * 64 * 32 + 2 * 64 + 3 * 64 * 172));
    CHECK(1185376 - 14176 >= bytes);

    const auto text = run_process(inlay_tool(), {"inspect", "-m", model.string()});
    CHECK(text.exit_code == 0);
    CHECK(text.out.find("token_embd.weight") != std::string::npos);
    CHECK(text.out.find("[64, 512]") != std::string::npos);
    CHECK(text.out.find("general.architecture") != std::string::npos);
}

TEST_CASE("inlay inspect: vocabulary-only and damaged files", "[cli]") {
    const auto vocab = testdata("vocab/ggml-vocab-gpt-2.gguf");
    INLAY_REQUIRE_FILE_OR_SKIP(vocab);
    const json out = run_json({"inspect", "-m", vocab.string(), "--json"});
    CHECK(out["tensors"].empty());
    CHECK(out["totals"]["bytes"] == 0);

    // A stories260K cut inside its tensor data.
    const auto model = testdata("models/stories260K.gguf");
    INLAY_REQUIRE_FILE_OR_SKIP(model);
    const std::string bytes = inlay::test::read_file(model);
    const auto cut = inlay::test::scratch_dir("cli_inspect") / "cut.gguf";
    std::ofstream(cut, std::ios::binary).write(bytes.data(), 20000);
    const auto r = run_process(inlay_tool(), {"inspect", "-m", cut.string(), "--json"});
    CHECK(r.exit_code == 1);
    CHECK(r.err.starts_with("inlay: error: INLAY_ERR_TRUNCATED"));
    CHECK(r.out.empty());
}

TEST_CASE("inlay bench: JSON report", "[cli]") {
    const auto model = testdata("models/stories260K.gguf");
    INLAY_REQUIRE_FILE_OR_SKIP(model);
    const json out = run_json({"bench", "-m", model.string(), "-p", "16", "-n", "8", "-r", "3", "-t", "1", "--json"});
    CHECK(out["n_prompt"] == 16);
    CHECK(out["n_gen"] == 8);
    CHECK(out["threads"] == 1);
    CHECK(out["model"] == model.string());
    CHECK(out["prefill_tokens_per_s"].get<double>() > 0);
    CHECK(out["decode_tokens_per_s"].get<double>() > 0);
    CHECK(out["peak_rss_bytes"].get<int64_t>() > 1 << 20);
    CHECK(out["load_s"].get<double>() >= 0);
    REQUIRE(out["samples"]["prefill_tokens_per_s"].size() == 3);
    REQUIRE(out["samples"]["decode_tokens_per_s"].size() == 3);
    // the reported value is the median of the samples
    auto pp = out["samples"]["prefill_tokens_per_s"].get<std::vector<double>>();
    std::sort(pp.begin(), pp.end());
    CHECK(out["prefill_tokens_per_s"].get<double>() == pp[1]);

    const auto table = run_process(inlay_tool(), {"bench", "-m", model.string(), "-p", "8", "-n", "4", "-r", "1", "-t", "1"});
    CHECK(table.exit_code == 0);
    CHECK(table.out.find("pp8") != std::string::npos);
    CHECK(table.out.find("tg4") != std::string::npos);
}

TEST_CASE("inlay bench --concurrency: JSON report of batched sessions", "[cli]") {
    const auto model = testdata("models/stories260K.gguf");
    INLAY_REQUIRE_FILE_OR_SKIP(model);
    const json out =
        run_json({"bench", "-m", model.string(), "--concurrency", "4", "-n", "12", "-r", "3", "-t", "2", "--json"});
    CHECK(out["concurrency"] == 4);
    CHECK(out["n_gen"] == 12);
    CHECK(out["aggregate_decode_tokens_per_s"].get<double>() > 0);
    REQUIRE(out["samples"]["aggregate_decode_tokens_per_s"].size() == 3);
    auto samples = out["samples"]["aggregate_decode_tokens_per_s"].get<std::vector<double>>();
    std::sort(samples.begin(), samples.end());
    CHECK(out["aggregate_decode_tokens_per_s"].get<double>() == samples[1]);  // the median
    CHECK(out["time_to_first_token_s"]["max"].get<double>() >= out["time_to_first_token_s"]["mean"].get<double>());
    CHECK(out["per_token_latency_s"]["mean"].get<double>() > 0);
    // Forward passes: at least one per token of a session (its tokens come one step after
    // another), at most one per generated token. How far below that batching brings them
    // depends on how the four short runs' thread starts overlap (under load they may not),
    // so it is asserted on the engine with 32 sessions (tests/runtime, test_engine).
    const auto passes = out["forward_passes"].get<int64_t>();
    CHECK(passes >= 8 + 3 * 12);
    CHECK(passes <= out["metrics"]["tokens_generated"].get<int64_t>());
    // Every block is back in the pool, and the tokens are all accounted for.
    const auto& m = out["metrics"];
    CHECK(m["blocks_free"] == m["blocks_total"]);
    CHECK(m["sequences_running"] == 0);
    CHECK(m["sequences_waiting"] == 0);
    CHECK(m["tokens_generated"].get<int64_t>() == 4 * (8 + 3 * 12));

    const auto bad = run_process(inlay_tool(), {"bench", "-m", model.string(), "--concurrency", "0"});
    CHECK(bad.exit_code != 0);
    CHECK(bad.err.find("concurrency") != std::string::npos);
}

TEST_CASE("inlay generate/bench --draft and --lookup: the plain greedy tokens, proposals counted", "[cli][speculative]") {
    const auto target = testdata("models/stories15M-q8_0.gguf");
    const auto draft = testdata("models/stories15M-q4_0.gguf");
    INLAY_REQUIRE_FILE_OR_SKIP(target);
    INLAY_REQUIRE_FILE_OR_SKIP(draft);
    const std::vector<std::string> base = {"generate", "-m", target.string(), "-p", "Once upon a time, there was a",
                                           "--temp", "0", "-n", "40", "--ignore-eos", "-t", "2", "--json"};
    const json plain = run_json(base);
    auto with = [&](std::vector<std::string> extra) {
        std::vector<std::string> args = base;
        args.insert(args.end(), extra.begin(), extra.end());
        return run_json(args);
    };
    const json drafted = with({"--draft", draft.string(), "--n-draft", "4", "--n-draft-min", "4", "--p-min", "0"});
    CHECK(drafted["tokens"] == plain["tokens"]);
    CHECK(drafted["text"] == plain["text"]);
    CHECK(drafted["timings"]["draft_tokens_proposed"].get<int64_t>() > 0);
    CHECK(drafted["timings"]["draft_tokens_accepted"].get<int64_t>() > 0);
    CHECK(plain["timings"]["draft_tokens_proposed"].get<int64_t>() == 0);
    const json looked_up = with({"--lookup", "--n-draft", "3", "--n-draft-min", "3"});
    CHECK(looked_up["tokens"] == plain["tokens"]);

    // Usage mistakes.
    for (const std::vector<std::string>& bad :
         {std::vector<std::string>{"--draft", draft.string(), "--lookup"}, {"--n-draft", "4"},
          {"--lookup", "--n-draft", "2", "--n-draft-min", "3"}, {"--lookup", "--n-draft", "65"}}) {
        std::vector<std::string> args = base;
        args.insert(args.end(), bad.begin(), bad.end());
        INFO(Catch::Detail::stringify(bad));
        CHECK(run_process(inlay_tool(), args).exit_code == 2);
    }
    // A draft of another vocabulary: a clear error, not a crash.
    const auto other = testdata("models/stories260K.gguf");
    std::vector<std::string> args = base;
    args.insert(args.end(), {"--draft", other.string()});
    const auto r = run_process(inlay_tool(), args);
    CHECK(r.exit_code != 0);
    CHECK(r.err.find("INLAY_ERR_INVALID_ARGUMENT") != std::string::npos);

    // The benchmark compares both in one sitting and checks that the tokens agree.
    const json bench = run_json({"bench", "-m", target.string(), "--draft", draft.string(), "-n", "24", "-r", "1",
                                 "-t", "2", "--n-draft-min", "2", "--json"});
    CHECK(bench["plain_decode_tokens_per_s"].get<double>() > 0);
    CHECK(bench["speculative_decode_tokens_per_s"].get<double>() > 0);
    CHECK(bench["draft_tokens_proposed"].get<int64_t>() > 0);
    CHECK(bench["acceptance_rate"].get<double>() > 0);
}
