// `inlay bench -m MODEL`: the llama-bench test matrix (-p/-n/-d lists), the decode
// bytes and bandwidth of every tg test, --membw and --membw-gbps, on the default model of
// models/ (in the repository: nothing to skip).
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli/process.h"
#include "inlay/inlay.hpp"
#include "support/test_paths.h"

using inlay::test::inlay_tool;
using inlay::test::run_process;
using nlohmann::json;

namespace {

std::string default_model() { return (inlay::test::source_dir() / "models" / "default-q8_0.gguf").string(); }

json run_json(const std::vector<std::string>& args) {
    INFO("inlay " << Catch::Detail::stringify(args));
    const auto r = run_process(inlay_tool(), args);
    INFO("stderr: " << r.err);
    REQUIRE(r.exit_code == 0);
    REQUIRE(r.out.find('\n') == r.out.size() - 1);  // one line
    return json::parse(r.out);
}

double median_of(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// Weight bytes a decode token reads, from `inlay inspect`'s tensor table: all of them,
// the embedding table one row of it unless the output projection is tied to it.
double weight_bytes_per_token(const std::string& model) {
    const json t = run_json({"inspect", "-m", model, "--json"})["tensors"];
    bool tied = true;
    for (const json& x : t)
        if (x["name"] == "output.weight") tied = false;
    double bytes = 0;
    for (const json& x : t) {
        const auto b = x["bytes"].get<double>();
        bytes += x["name"] == "token_embd.weight" && !tied ? b / x["shape"][1].get<double>() : b;
    }
    return bytes;
}

}  // namespace

TEST_CASE("inlay bench: bad -p/-n/-d lists and --membw combinations are usage errors", "[cli]") {
    const std::string model = "/nonexistent/model.gguf";  // never opened: parsing fails first
    struct Case {
        std::vector<std::string> args;
        std::string mentions;
    };
    const std::vector<Case> cases = {
        {{"bench", "-m", model, "-p", "128,,512"}, "--n-prompt"},
        {{"bench", "-m", model, "-p", "128,"}, "--n-prompt"},
        {{"bench", "-m", model, "-n", "1,x"}, "--n-gen"},
        {{"bench", "-m", model, "-n", "2000000"}, "--n-gen"},
        {{"bench", "-m", model, "-d", "-1"}, "--n-depth"},
        {{"bench", "-m", model, "-d", ""}, "--n-depth"},
        {{"bench", "-m", model, "-d", "0 512"}, "--n-depth"},
        {{"bench", "-m", model, "-p", "0", "-n", "0"}, "no test"},
        {{"bench", "--membw", "--membw-gbps", "10"}, "--membw"},
        {{"bench", "-m", model, "--membw-gbps", "0"}, "--membw-gbps"},
        {{"bench", "-m", model, "--concurrency", "2", "-n", "4,8"}, "--n-gen"},
        {{"bench", "-m", model, "--concurrency", "2", "-d", "16"}, "--n-depth"},
        {{"bench", "--synthetic", "tiny", "-p", "16,32"}, "--n-prompt"},
        {{"bench", "--synthetic", "tiny", "--membw"}, "--membw"},
        {{"bench", "--membw", "--membw-mib", "1"}, "--membw-mib"},
    };
    for (const Case& c : cases) {
        INFO("inlay " << Catch::Detail::stringify(c.args));
        const auto r = run_process(inlay_tool(), c.args);
        INFO(r.err);
        CHECK(r.exit_code == 2);
        CHECK(r.out.empty());
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
        CHECK(r.err.find(c.mentions) != std::string::npos);
    }
}

TEST_CASE("inlay bench -d: a row per size and depth, the decode bytes at each depth", "[cli]") {
    const std::string model = default_model();
    const json out = run_json({"bench", "-m", model, "-p", "8,16", "-n", "4", "-d", "0,20", "-r", "3", "-t", "1",
                               "--membw-gbps", "10", "--json"});
    const json& tests = out["tests"];
    REQUIRE(tests.size() == 6);
    struct Want {
        const char* name;
        int n_prompt, n_gen, n_depth;
    };
    const Want want[] = {{"pp8", 8, 0, 0},   {"pp8 @ d20", 8, 0, 20}, {"pp16", 16, 0, 0},
                         {"pp16 @ d20", 16, 0, 20}, {"tg4", 0, 4, 0}, {"tg4 @ d20", 0, 4, 20}};
    for (size_t i = 0; i < tests.size(); ++i) {
        const json& t = tests[i];
        INFO(t.dump());
        CHECK(t["name"] == want[i].name);
        CHECK(t["n_prompt"] == want[i].n_prompt);
        CHECK(t["n_gen"] == want[i].n_gen);
        CHECK(t["n_depth"] == want[i].n_depth);
        CHECK(t["prompt_tokens_reused"] == 0);
        const auto samples = t["samples_ts"].get<std::vector<double>>();
        REQUIRE(samples.size() == 3);
        for (double s : samples) CHECK(s > 0);
        CHECK(t["median_ts"].get<double>() == median_of(samples));
        CHECK(t["avg_ts"].get<double>() == Approx((samples[0] + samples[1] + samples[2]) / 3));
        CHECK(t["stddev_ts"].get<double>() >= 0);
        const bool tg = want[i].n_gen > 0;
        CHECK(t.contains("bytes_per_token") == tg);
        CHECK(t.contains("bytes_per_s") == tg);
        CHECK(t.contains("roofline_share") == tg);
        if (tg) {
            const double rate = t["bytes_per_s"].get<double>();
            CHECK(rate == Approx(t["median_ts"].get<double>() * t["bytes_per_token"].get<double>()).epsilon(1e-12));
            CHECK(t["roofline_share"].get<double>() == Approx(rate / 10e9).epsilon(1e-6));
        }
    }
    // The first pp and tg tests keep the report's older keys.
    CHECK(out["n_prompt"] == 8);
    CHECK(out["n_gen"] == 4);
    CHECK(out["prefill_tokens_per_s"] == tests[0]["median_ts"]);
    CHECK(out["decode_tokens_per_s"] == tests[4]["median_ts"]);
    CHECK(out["samples"]["decode_tokens_per_s"] == tests[4]["samples_ts"]);
    CHECK(out["membw_bytes_per_s"].get<double>() == Approx(10e9).epsilon(1e-6));

    // Bytes per tg token: the weights (from the file's tensor table) plus f16 K and V of
    // every layer at the mean attended length, depth + (N + 1) / 2.
    const double weights = weight_bytes_per_token(model);
    CHECK(out["weight_bytes_per_token"].get<double>() == weights);
    const inlay::Model m = inlay::Model::load(model);
    const inlay_model_info info = m.info();
    const double kv = 2.0 * info.n_layers * info.n_kv_heads * info.head_dim * 2;
    CHECK(tests[4]["bytes_per_token"].get<double>() == Approx(weights + kv * 2.5).epsilon(1e-12));
    CHECK(tests[5]["bytes_per_token"].get<double>() == Approx(weights + kv * 22.5).epsilon(1e-12));

    // The table names the same rows.
    const auto table = run_process(inlay_tool(), {"bench", "-m", model, "-p", "8", "-n", "4", "-d", "0,20", "-r", "1",
                                                  "-t", "1"});
    CHECK(table.exit_code == 0);
    for (const char* row : {"pp8 ", "pp8 @ d20", "tg4 ", "tg4 @ d20", "GB/s", "peak RSS", "not measured"})
        CHECK(table.out.find(row) != std::string::npos);
}

TEST_CASE("inlay bench --membw: the read bandwidth, alone or as the tg tests' roofline", "[cli]") {
    // A small buffer keeps the test cheap (and the sanitizers' shadow memory small).
    const json alone = run_json({"bench", "--membw", "--membw-mib", "64", "-t", "1", "--json"});
    CHECK(alone["threads"] == 1);
    CHECK(alone["membw_bytes_per_s"].get<double>() > 0);
    CHECK(alone["membw_buffer_bytes"] == 64 << 20);

    const std::vector<std::string> tg = {"bench", "-m", default_model(), "-p", "0", "-n", "4", "-r", "1", "-t", "1", "--json"};
    std::vector<std::string> with_membw = tg;
    with_membw.insert(with_membw.end(), {"--membw", "--membw-mib", "192"});
    const json out = run_json(with_membw);
    const double bw = out["membw_bytes_per_s"].get<double>();
    CHECK(bw > 0);
    REQUIRE(out["tests"].size() == 1);
    const json& row = out["tests"][0];
    CHECK(row["roofline_share"].get<double>() == Approx(row["bytes_per_s"].get<double>() / bw).epsilon(1e-9));
    CHECK(out["prefill_tokens_per_s"] == 0);
    CHECK(out["samples"]["prefill_tokens_per_s"].empty());
    // The peak RSS is the model's, taken before the 192 MiB buffer of the bandwidth test:
    // about what the same run without --membw reports.
    const json plain = run_json(tg);
    CHECK(plain["membw_bytes_per_s"].is_null());
    CHECK_FALSE(plain["tests"][0].contains("roofline_share"));
    CHECK(out["peak_rss_bytes"].get<int64_t>() < plain["peak_rss_bytes"].get<int64_t>() + (int64_t{96} << 20));
}
