// Encode speed on about 100 KB of mixed text (llama.cpp's vocabulary test strings,
// repeated): prints tokens/s for each vocabulary. A measurement, not a pass/fail
// criterion, apart from sanity (the text round-trips).
#include <catch2/catch.hpp>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "support/test_paths.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_test_util.h"

using namespace inlay;
using inlay::test::testdata;

namespace {

std::string hundred_kb_text() {
    const std::string inp = test::read_file(testdata("vocab/ggml-vocab-gpt-2.gguf.inp"));
    std::string text;
    while (text.size() < 100 * 1000) text += inp;
    return text;
}

void measure(const char* name, const Tokenizer& tok, const std::string& text) {
    std::vector<int32_t> ids;
    double best = 1e30;
    for (int rep = 0; rep < 3; ++rep) {
        const auto t0 = std::chrono::steady_clock::now();
        ids = tok.encode(text, false);
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::printf("encode %-22s %7zu bytes -> %6zu tokens in %7.2f ms: %9.0f tokens/s, %6.2f MB/s\n", name, text.size(),
                ids.size(), best * 1e3, static_cast<double>(ids.size()) / best,
                static_cast<double>(text.size()) / best / 1e6);
    CHECK(tok.decode(ids, false, true) == text);
}

}  // namespace

TEST_CASE("encode speed on 100 KB", "[tokenizer][speed]") {
    const auto inp = testdata("vocab/ggml-vocab-gpt-2.gguf.inp");
    INLAY_REQUIRE_FILE_OR_SKIP(inp);
    const std::string text = hundred_kb_text();
    for (const auto& [name, rel] :
         std::vector<std::pair<const char*, const char*>>{{"gpt-2 (GGUF)", "vocab/ggml-vocab-gpt-2.gguf"},
                                                          {"llama-spm (GGUF)", "vocab/ggml-vocab-llama-spm.gguf"}}) {
        const auto path = testdata(rel);
        if (std::filesystem::exists(path)) measure(name, *tokenizer_from_gguf(test::gguf_metadata(path)), text);
    }
    if (const auto model = testdata("tokenizers/llama2-tokenizer.model"); std::filesystem::exists(model)) {
        measure("llama2 (sentencepiece)", *tokenizer_from_sentencepiece(model.string()), text);
    }
    if (const auto json = testdata("tokenizers/qwen3/tokenizer.json"); std::filesystem::exists(json)) {
        const Metadata md = test::metadata_from_hf_tokenizer_json(json, "qwen2");
        const auto t0 = std::chrono::steady_clock::now();
        const auto tok = tokenizer_from_gguf(md);
        std::printf("construct qwen3 tokenizer (151669 tokens, 151387 merges) from metadata: %.1f ms\n",
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * 1e3);
        measure("qwen3 (tokenizer.json)", *tok, text);
    }
    if (const auto json = testdata("tokenizers/llama3/tokenizer.json"); std::filesystem::exists(json)) {
        measure("llama3 (tokenizer.json)",
                *tokenizer_from_gguf(test::metadata_from_hf_tokenizer_json(json, "llama-bpe")), text);
    }
}

namespace {

// CPU time of this thread (not wall time: it stands still while the thread is not
// running, so a loaded machine does not change it).
double thread_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// The least CPU time of three runs of f.
template <class F>
double least_cpu_seconds(F&& f) {
    double best = 1e30;
    for (int rep = 0; rep < 3; ++rep) {
        const double t0 = thread_cpu_seconds();
        f();
        best = std::min(best, thread_cpu_seconds() - t0);
    }
    return best;
}

}  // namespace

TEST_CASE("long runs of one character class stay linear and round-trip", "[tokenizer][long]") {
    const auto spm = tokenizer_from_gguf(test::tiny_spm_metadata({"\xE2\x96\x81", "a", "aa", "1"}));
    std::vector<std::unique_ptr<Tokenizer>> bpes;
    for (const char* pre : {"gpt-2", "llama-bpe", "qwen2", "default"})
        bpes.push_back(tokenizer_from_gguf(test::tiny_bpe_metadata({"a a", "\xC4\xA0 \xC4\xA0"}, pre)));
    // Encodes and decodes with every tokenizer; whether all round-trip (checked outside
    // the timed region: Catch2 may stringify what it compares).
    const auto encode_all = [&](const std::string& text) {
        bool ok = spm->decode(spm->encode(text, false), false, true) == text;
        for (const auto& bpe : bpes) ok = bpe->decode(bpe->encode(text, true), false, true) == text && ok;
        return ok;
    };
    for (const std::string unit : {" ", "\n", "a", "1", "!", " \n", "\xE3\x80\x80", "a1 "}) {
        std::string small, large;
        while (small.size() < 30000) small += unit;
        while (large.size() < 10 * small.size()) large += small;
        // Ten times the text must cost about ten times the work: the ratio of CPU times
        // of the two sizes (both on this thread, so the machine's load cancels out). Linear
        // or n log n work gives 10 to 13; quadratic work (a pattern or merge loop that
        // rescans the run) gives 100. Measured: 9 to 23 (long words with merges, loaded machine); allowed: 50.
        bool small_ok = false, large_ok = false;
        const double t_small = least_cpu_seconds([&] { small_ok = encode_all(small); });
        const double t_large = least_cpu_seconds([&] { large_ok = encode_all(large); });
        INFO("unit \"" << unit << "\": " << small.size() << " bytes " << t_small * 1e3 << " ms CPU, "
                        << large.size() << " bytes " << t_large * 1e3 << " ms CPU");
        CHECK(small_ok);
        CHECK(large_ok);
        CHECK(t_large <= 50 * std::max(t_small, 1e-4));
    }
}
