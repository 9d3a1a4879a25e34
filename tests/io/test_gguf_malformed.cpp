// The malformed corpus through GgufFile (bytes and files), and bulk robustness: every
// truncation and thousands of header corruptions of a valid model either load or throw
// inlay::Error, never crash (run under ASan/UBSan too).
#include <catch2/catch.hpp>

#include <fstream>
#include <random>
#include <set>
#include <string>
#include <string_view>

#include "core/error.h"
#include "io/gguf_reader.h"
#include "support/gguf_fixtures.h"
#include "support/gguf_malformed.h"
#include "support/test_paths.h"

using namespace inlay;
using namespace inlay::test;

namespace {

struct Outcome {
    bool threw = false;
    inlay_status status = INLAY_OK;
    std::string message;
};

template <class Fn>
Outcome outcome_of(Fn&& fn) {
    Outcome o;
    try {
        fn();
    } catch (const Error& e) {
        o.threw = true;
        o.status = e.status();
        o.message = e.what();
    }
    return o;
}

void write_bytes(const std::filesystem::path& path, const std::vector<std::byte>& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    REQUIRE(out.good());
}

}  // namespace

TEST_CASE("malformed corpus: names are unique and coverage is broad", "[gguf][malformed]") {
    const auto corpus = malformed_gguf_corpus();
    std::set<std::string> names;
    std::set<inlay_status> file_statuses;
    int file_level = 0;
    int model_level = 0;
    for (const auto& c : corpus) {
        CHECK(names.insert(c.name).second);
        CHECK_FALSE(c.message_contains.empty());
        if (c.model_level) {
            ++model_level;
        } else {
            ++file_level;
            file_statuses.insert(c.expected);
        }
    }
    CHECK(file_level >= 30);
    CHECK(model_level >= 10);
    CHECK(file_statuses == std::set<inlay_status>{INLAY_ERR_BAD_FORMAT, INLAY_ERR_TRUNCATED, INLAY_ERR_UNSUPPORTED});
}

TEST_CASE("malformed corpus: GgufFile rejects each file-level case with its status and message", "[gguf][malformed]") {
    const auto dir = scratch_dir("gguf_malformed");
    for (const auto& c : malformed_gguf_corpus()) {
        INFO("case " << c.name);
        const std::string origin = "corpus:" + c.name;
        const Outcome mem = outcome_of([&] { (void)GgufFile::from_bytes(c.bytes, origin); });
        if (c.model_level) {
            CHECK_FALSE(mem.threw);
            INFO(mem.message);
            continue;
        }
        REQUIRE(mem.threw);
        INFO("message: " << mem.message);
        CHECK(status_name(mem.status) == std::string(status_name(c.expected)));
        CHECK(mem.message.find(c.message_contains) != std::string::npos);
        CHECK(mem.message.find(origin) != std::string::npos);

        const auto path = dir / (c.name + ".gguf");
        write_bytes(path, c.bytes);
        const Outcome file = outcome_of([&] { (void)GgufFile::open(path.string()); });
        REQUIRE(file.threw);
        INFO("file message: " << file.message);
        CHECK(file.status == c.expected);
        CHECK(file.message.find(c.message_contains) != std::string::npos);
        CHECK(file.message.find(path.string()) != std::string::npos);
    }
}

TEST_CASE("a missing or unreadable file is INLAY_ERR_IO", "[gguf][malformed]") {
    const auto dir = scratch_dir("gguf_io");
    const Outcome missing = outcome_of([&] { (void)GgufFile::open((dir / "nope.gguf").string()); });
    CHECK(missing.status == INLAY_ERR_IO);
    const Outcome directory = outcome_of([&] { (void)GgufFile::open(dir.string()); });
    CHECK(directory.status == INLAY_ERR_IO);
}

namespace {

// Parses `bytes`; returns false on inlay::Error. Anything else escapes and fails the test.
// A file that loads must give tensor views inside its own bytes, after the header (the
// reader's promise to every consumer); each view's first and last byte are read so that
// ASan also sees any pointer that escapes the buffer.
bool parses(std::vector<std::byte> bytes) {
    try {
        auto f = GgufFile::from_bytes(std::move(bytes), "bulk");
        const std::byte* begin = f->bytes().data() + f->data_offset();
        const std::byte* end = f->bytes().data() + f->bytes().size();
        for (const auto& t : f->tensors()) {
            INFO("tensor " << t.name << ": " << t.nbytes << " bytes at data offset " << (t.data - begin));
            REQUIRE(t.data >= begin);
            REQUIRE(t.nbytes <= static_cast<size_t>(end - t.data));
            if (t.nbytes) REQUIRE(static_cast<int>(t.data[0]) + static_cast<int>(t.data[t.nbytes - 1]) >= 0);
        }
        return true;
    } catch (const Error&) {
        return false;
    }
}

// Offset of the first occurrence of `text` in `bytes` (the test's own fixtures).
size_t find_text(const std::vector<std::byte>& bytes, std::string_view text) {
    const auto* data = reinterpret_cast<const char*>(bytes.data());
    const size_t at = std::string_view(data, bytes.size()).find(text);
    REQUIRE(at != std::string_view::npos);
    return at;
}

}  // namespace

TEST_CASE("every truncation of a valid tiny llama fails cleanly", "[gguf][malformed][bulk]") {
    TinyLlamaOptions o;
    o.n_vocab = 260;
    o.n_embd = 32;
    o.n_ff = 32;
    o.n_layers = 1;
    o.weight_type = DType::F16;
    o.tied_output = true;
    const std::vector<std::byte> full = make_tiny_llama_gguf(o);
    REQUIRE(parses(full));
    size_t accepted = 0;
    std::vector<std::byte> prefix;
    prefix.reserve(full.size());
    for (size_t n = 0; n < full.size(); ++n) {
        prefix.assign(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
        if (parses(prefix)) ++accepted;
    }
    // Every tensor has data, so no strict prefix may load.
    CHECK(accepted == 0);
    INFO("file bytes: " << full.size());
}

TEST_CASE("random header corruptions of a valid tiny llama fail cleanly or load", "[gguf][malformed][bulk]") {
    TinyLlamaOptions o;
    o.n_vocab = 260;
    o.n_embd = 32;
    o.n_ff = 32;
    o.n_layers = 1;
    o.weight_type = DType::Q8_0;
    const std::vector<std::byte> full = make_tiny_llama_gguf(o);
    const auto header_size = static_cast<size_t>(GgufFile::from_bytes(full, "ok")->data_offset());
    std::mt19937_64 rng(20240601);
    std::uniform_int_distribution<size_t> pos(0, header_size - 1);
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_int_distribution<int> flips(1, 4);
    int ok = 0;
    int rejected = 0;
    for (int variant = 0; variant < 4000; ++variant) {
        std::vector<std::byte> bytes = full;
        const int n = flips(rng);
        for (int k = 0; k < n; ++k) {
            // Bias half of the flips toward the counts, lengths and tensor infos, where
            // corruption matters most (the first 24 bytes and the last third of the header).
            size_t p = pos(rng);
            if (variant % 2 == 0) p = (k % 2 == 0) ? p % 24 : header_size - 1 - p % (header_size / 3);
            bytes[p] = static_cast<std::byte>(byte(rng));
        }
        if (parses(std::move(bytes))) ++ok;
        else ++rejected;
    }
    INFO("loaded " << ok << ", rejected " << rejected);
    // Both outcomes occur (fixed seed, so these counts are the same on every run): most
    // corruptions of counts, lengths and types are caught, and some (inside string
    // contents, alignment padding) leave a valid file. A reader that rejected everything,
    // or accepted everything, fails here.
    CHECK(rejected > 1000);
    CHECK(ok > 0);

    // Corruptions whose outcome is known: any letters in place of the architecture's
    // value still load and read back; any other byte in the magic is BAD_FORMAT; a
    // tensor count that the header cannot hold is rejected.
    // The key, its value type (u32) and the string's length (u64), then its 5 characters.
    const size_t arch = find_text(full, "general.architecture") + 20 + 4 + 8;
    REQUIRE(std::string_view(reinterpret_cast<const char*>(full.data()) + arch, 5) == "llama");
    for (char c = 'a'; c <= 'z'; ++c) {
        std::vector<std::byte> bytes = full;
        for (size_t i = 0; i < 5; ++i) bytes[arch + i] = static_cast<std::byte>(c);
        const auto f = GgufFile::from_bytes(bytes, "letters");
        CHECK(f->metadata().get_string("general.architecture") == std::string(5, c));
        CHECK(parses(bytes));
    }
    for (size_t i = 0; i < 4; ++i) {
        for (int v = 0; v < 256; v += 17) {
            std::vector<std::byte> bytes = full;
            if (bytes[i] == static_cast<std::byte>(v)) continue;
            bytes[i] = static_cast<std::byte>(v);
            const Outcome bad = outcome_of([&] { (void)GgufFile::from_bytes(bytes, "magic"); });
            CHECK(bad.status == INLAY_ERR_BAD_FORMAT);
        }
    }
    std::vector<std::byte> huge = full;
    huge[8 + 7] = std::byte{0x40};  // tensor count (u64 after magic and version) >= 2^62
    CHECK_FALSE(parses(huge));
}
