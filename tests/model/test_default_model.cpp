// The default model that ships in models/ (tools/train/README.md): its Hugging Face
// folder and the GGUF exports that `inlay convert` made from it, against
// (1) torch's own float32 logits (models/default/torch_logits.json, written by
//     tools/train/make_fixture.py from the same folder), and
// (2) llama.cpp's logits on the GGUF files (tools/llamacpp's llamacpp-logits).
//
// Errors are measured relative to the scale of the logits: for each prompt, the largest
// |logit| in torch's full row after the prompt ("scale"); every compared logit must be
// within tol * scale. Top-1 must agree wherever the reference's top-2 gap exceeds
// 2 * tol * scale. The measured worst cases are printed (WARN) so the bounds can be
// re-justified when the model is retrained.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/model.h"
#include "runtime/session.h"
#include "support/llamacpp.h"
#include "support/test_paths.h"

using namespace inlay;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

fs::path models_dir() { return test::source_dir() / "models"; }
fs::path fixture_path() { return models_dir() / "default" / "torch_logits.json"; }

struct TopEntry {
    int32_t id;
    double logit;
};

struct PromptCase {
    std::string text;
    std::vector<int32_t> prompt;
    std::vector<int32_t> greedy;
    std::vector<float> last_row;               // torch's full row after the prompt
    std::vector<std::vector<TopEntry>> top;    // per position of prompt + greedy[:-1]
    std::vector<double> gap;                   // top-1 minus top-2, per position
    double scale = 0;                          // max |last_row|
};

std::vector<PromptCase> load_fixture() {
    const json j = json::parse(inlay::test::read_file(fixture_path()));
    std::vector<PromptCase> cases;
    for (const json& c : j.at("prompts")) {
        PromptCase pc;
        pc.text = c.at("text").get<std::string>();
        pc.prompt = c.at("prompt_tokens").get<std::vector<int32_t>>();
        pc.greedy = c.at("greedy_tokens").get<std::vector<int32_t>>();
        pc.last_row = c.at("last_logits").get<std::vector<float>>();
        for (const json& pos : c.at("top")) {
            std::vector<TopEntry> row;
            for (const json& e : pos) row.push_back({e.at(0).get<int32_t>(), e.at(1).get<double>()});
            pc.top.push_back(std::move(row));
        }
        pc.gap = c.at("gap").get<std::vector<double>>();
        for (float v : pc.last_row) pc.scale = std::max(pc.scale, static_cast<double>(std::fabs(v)));
        cases.push_back(std::move(pc));
    }
    return cases;
}

// The tokens teacher-forced through the model: the prompt, then torch's greedy tokens
// (all but the last, whose successor the fixture does not hold).
std::vector<int32_t> forced_tokens(const PromptCase& c) {
    std::vector<int32_t> t = c.prompt;
    t.insert(t.end(), c.greedy.begin(), c.greedy.end() - 1);
    return t;
}

struct Worst {
    double rel_error = 0;  // max |ours - reference| / scale
    int top1_checked = 0;
    int positions = 0;
};

// Compares a [positions x n_vocab] logits block with torch's fixture.
void compare_with_torch(const PromptCase& c, const std::vector<float>& logits, size_t n_vocab, double tol,
                        Worst& worst) {
    const size_t n_pos = c.top.size();
    REQUIRE(logits.size() == n_pos * n_vocab);
    REQUIRE(c.last_row.size() == n_vocab);
    const float* last = logits.data() + (c.prompt.size() - 1) * n_vocab;
    for (size_t i = 0; i < n_vocab; ++i) {
        const double err = std::fabs(last[i] - c.last_row[i]) / c.scale;
        worst.rel_error = std::max(worst.rel_error, err);
        if (err > tol) {
            INFO("last prompt position, token " << i << ": ours " << last[i] << ", torch " << c.last_row[i]);
            CHECK(err <= tol);
        }
    }
    for (size_t p = 0; p < n_pos; ++p) {
        const float* row = logits.data() + p * n_vocab;
        for (const TopEntry& e : c.top[p]) {
            const double err = std::fabs(row[e.id] - e.logit) / c.scale;
            worst.rel_error = std::max(worst.rel_error, err);
            if (err > tol) {
                INFO("position " << p << " token " << e.id << ": ours " << row[e.id] << ", torch " << e.logit);
                CHECK(err <= tol);
            }
        }
        if (c.gap[p] > 2 * tol * c.scale) {
            const auto ours = static_cast<int32_t>(std::max_element(row, row + n_vocab) - row);
            INFO("position " << p << ", torch's top-2 gap " << c.gap[p]);
            CHECK(ours == c.top[p][0].id);
            ++worst.top1_checked;
        }
        ++worst.positions;
    }
}

// kv_type: the KV cache's element type; F32 for the float32 files, so that the comparison
// with torch (which keeps K and V in float32) measures the forward pass, not f16 storage.
void check_against_torch(const fs::path& path, double tol, DType kv_type) {
    INFO("model " << path.string());
    REQUIRE(fs::exists(path));
    const auto cases = load_fixture();
    REQUIRE(cases.size() >= 3);
    ModelOptions options;
    options.n_threads = 2;
    std::shared_ptr<const Model> model = Model::load(path.string(), options);
    const auto n_vocab = static_cast<size_t>(model->spec().n_vocab);
    Worst worst;
    for (const PromptCase& c : cases) {
        INFO("prompt \"" << c.text << "\"");
        KvPoolOptions pool_options = default_kv_pool_options(*model);
        pool_options.dtype = kv_type;
        Session session(std::make_shared<Engine>(model, make_kv_pool(model->executor(), pool_options), EngineOptions{}),
                        0);
        // Both tokenizer paths (tokenizer.model in the folder, the GGUF's vocabulary)
        // must reproduce SentencePiece's ids, BOS included, for text with tabs and newlines.
        CHECK(session.tokenize_input(c.text, /*add_bos=*/true, /*parse_special=*/false) == c.prompt);
        const auto tokens = forced_tokens(c);
        compare_with_torch(c, session.eval_logits(tokens), n_vocab, tol, worst);
    }
    WARN(path.filename().string() << ": max |inlay - torch| / scale = " << worst.rel_error << " over "
                                  << worst.positions << " positions; top-1 checked at " << worst.top1_checked);
}

// --- llama.cpp -------------------------------------------------------------------------

fs::path logits_dump_tool() { return test::llamacpp_tool("logits"); }

std::string join_ids(const std::vector<int32_t>& ids) {
    std::string s;
    for (size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
    return s;
}

json run_logits_dump(const fs::path& gguf, const std::string& args, const fs::path& dir) {
    const fs::path out = dir / "stdout.json";
    const std::string cmd = "'" + logits_dump_tool().string() + "' '" + gguf.string() + "' " + args + " --threads 1 > '" +
                            out.string() + "' 2> '" + (dir / "stderr.txt").string() + "'";
    const int rc = std::system(cmd.c_str());
    INFO(cmd << "\n" << inlay::test::read_file(dir / "stderr.txt"));
    REQUIRE(rc == 0);
    return json::parse(inlay::test::read_file(out));
}

// inlay and llama.cpp on the same GGUF: the same weights on both sides, so differences come
// from llama.cpp's f16 KV cache, activation quantization and summation order.
void check_against_llamacpp(const fs::path& gguf, double tol) {
    INFO("model " << gguf.string());
    REQUIRE(fs::exists(gguf));
    const auto cases = load_fixture();
    ModelOptions options;
    options.n_threads = 2;
    std::shared_ptr<const Model> model = Model::load(gguf.string(), options);
    const auto n_vocab = static_cast<size_t>(model->spec().n_vocab);
    const fs::path dir = test::scratch_dir("default_model_llamacpp");
    double worst = 0;
    int top1_checked = 0;
    for (const PromptCase& c : cases) {
        INFO("prompt \"" << c.text << "\"");
        // llama.cpp's own tokenizer on the GGUF's vocabulary agrees with SentencePiece.
        const json by_text = run_logits_dump(gguf, "--prompt '" + c.text + "' --n 1 --k 1", dir);
        CHECK(by_text.at("prompt_tokens").get<std::vector<int32_t>>() == c.prompt);

        const auto tokens = forced_tokens(c);
        const json ref = run_logits_dump(gguf, "--tokens " + join_ids(tokens) + " --n 1 --k 8", dir);
        const json& top = ref.at("prompt_top");
        REQUIRE(top.size() == tokens.size());
        Session session(model, 0);
        const auto logits = session.eval_logits(tokens);
        for (size_t p = 0; p < tokens.size(); ++p) {
            const float* row = logits.data() + p * n_vocab;
            for (const json& e : top[p]) {
                const double err = std::fabs(row[e.at("id").get<int32_t>()] - e.at("logit").get<double>()) / c.scale;
                worst = std::max(worst, err);
                if (err > tol) {
                    INFO("position " << p << " token " << e.at("id") << ": ours " << row[e.at("id").get<int32_t>()]
                                     << ", llama.cpp " << e.at("logit"));
                    CHECK(err <= tol);
                }
            }
            const double gap = top[p][0].at("logit").get<double>() - top[p][1].at("logit").get<double>();
            if (gap > 2 * tol * c.scale) {
                const auto ours = static_cast<int32_t>(std::max_element(row, row + n_vocab) - row);
                INFO("position " << p << ", llama.cpp's top-2 gap " << gap);
                CHECK(ours == top[p][0].at("id").get<int32_t>());
                ++top1_checked;
            }
        }
    }
    WARN(gguf.filename().string() << ": max |inlay - llama.cpp| / scale = " << worst << "; top-1 checked at "
                                  << top1_checked);
}

}  // namespace

// Tolerances (relative to each prompt's logit scale, see the top of the file).
//  - folder and f32 GGUF: 1e-4, the bound, with an f32 KV cache (torch keeps K
//    and V in float32; with inlay's default f16 cache the error is ~2.5e-4).
//  - q8_0 and q4_k: the weights' own rounding dominates (relative RMS per weight about
//    1/254 for Q8_0, 1/15 for Q4_K and 1/64 for the Q6_K embedding/output; see
//    test_hf_convert.cpp), plus the kernels' Q8 rounding of activations. Measured over the
//    4 prompts x 146 teacher-forced positions (WARN lines): folder and f32 5.5e-7, q8_0
//    0.0133, q4_k 0.0572; the bounds are 1.5x and 1.4x those. Retraining the model
//    changes these figures: re-measure and restate them here and in tools/train/README.md.
constexpr double kTolF32 = 1e-4;
constexpr double kTolQ8_0 = 2e-2;
constexpr double kTolQ4_K = 8e-2;

TEST_CASE("default model: the Hugging Face folder matches torch", "[default_model]") {
    INLAY_REQUIRE_FILE_OR_SKIP(fixture_path());
    check_against_torch(models_dir() / "default", kTolF32, DType::F32);
}

TEST_CASE("default model: GGUF exports match torch", "[default_model]") {
    INLAY_REQUIRE_FILE_OR_SKIP(fixture_path());
    check_against_torch(models_dir() / "default-f32.gguf", kTolF32, DType::F32);
    check_against_torch(models_dir() / "default-q8_0.gguf", kTolQ8_0, DType::F16);
    check_against_torch(models_dir() / "default-q4_k.gguf", kTolQ4_K, DType::F16);
}

TEST_CASE("default model: llama.cpp agrees with inlay on the GGUF exports", "[default_model][peer]") {
    INLAY_REQUIRE_FILE_OR_SKIP(fixture_path());
    INLAY_REQUIRE_LLAMACPP_OR_SKIP();
    // Same weights on both sides; llama.cpp keeps an f16 KV cache (inlay's sessions too)
    // and sums in its own order. Measured with a -march=native llama.cpp build: f32
    // 2.9e-5, q8_0 1.6e-3, q4_k 7.0e-3 (one flipped Q8_K activation rounding moves a few
    // logits); with tools/llamacpp on the prebuilt libraries (zen4 variant): f32 2.9e-5,
    // q8_0 3.8e-3, q4_k 7.0e-3. Bounds: 2e-3 for f32 (the
    // foundation issue's 1e-3 doubled for the f16 cache), 1e-2 (1.4x the worst measured)
    // for the quantized files.
    check_against_llamacpp(models_dir() / "default-f32.gguf", 2e-3);
    check_against_llamacpp(models_dir() / "default-q8_0.gguf", 1e-2);
    check_against_llamacpp(models_dir() / "default-q4_k.gguf", 1e-2);
}

TEST_CASE("default model: the fixture is torch's, not a copy of inlay's output", "[default_model]") {
    INLAY_REQUIRE_FILE_OR_SKIP(fixture_path());
    // Sanity of the reference itself: the greedy tokens follow the fixture's own top-1,
    // the top lists are sorted, and the last prompt row's maximum is that position's top-1.
    for (const PromptCase& c : load_fixture()) {
        INFO("prompt \"" << c.text << "\"");
        REQUIRE(c.top.size() == c.prompt.size() + c.greedy.size() - 1);
        for (size_t g = 0; g < c.greedy.size(); ++g) CHECK(c.top[c.prompt.size() - 1 + g][0].id == c.greedy[g]);
        for (const auto& row : c.top) {
            for (size_t k = 1; k < row.size(); ++k) CHECK(row[k - 1].logit >= row[k].logit);
        }
        const auto it = std::max_element(c.last_row.begin(), c.last_row.end());
        CHECK(it - c.last_row.begin() == c.top[c.prompt.size() - 1][0].id);
        CHECK(c.scale > 1.0);
    }
}
