// Session save/restore: a restored session continues exactly as the original; every
// truncated, altered, foreign or mismatched file is refused with the documented status
// (never a crash) and leaves the session's conversation unchanged.
#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <set>

#include "core/error.h"
#include "runtime/session_file.h"
#include "runtime_test_util.h"

using namespace inlay;
using namespace inlay::test;

namespace {

std::vector<char> read_all(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_all(const std::filesystem::path& p, const std::vector<char>& bytes) {
    std::ofstream(p, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The status restoring `path` into `s` gives (INLAY_OK if it succeeds).
inlay_status restore_status(Session& s, const std::filesystem::path& path, std::string* message = nullptr) {
    try {
        s.restore(path.string());
        return INLAY_OK;
    } catch (const Error& e) {
        if (message) *message = e.what();
        return e.status();
    }
}

}  // namespace

TEST_CASE("a restored session continues exactly as the original", "[session_file]") {
    TinyLlamaOptions o;
    const auto model = tiny_model(o, "save");
    const auto dir = scratch_dir("session-file-continue");
    auto engine = small_engine(model, 128, 512, 16);
    const auto n_vocab = static_cast<int32_t>(o.n_vocab);
    Session original(engine, 0);
    const auto prompt = prompt_of(3, 23, n_vocab);
    (void)original.generate(prompt, greedy(9));  // 31 cached + 1 sampled, last block partial
    const auto saved_history = original.history();
    original.save((dir / "a.session").string());

    const std::vector<int32_t> turn{70, 71, 72};
    const auto want = original.generate(turn, greedy(12)).tokens;
    REQUIRE(want == [&] {
        auto h = saved_history;
        h.insert(h.end(), turn.begin(), turn.end());
        return reference_greedy(*model, h, 12);
    }());

    SECTION("into a session of the same engine") {
        Session copy(engine, 0);
        copy.restore((dir / "a.session").string());
        REQUIRE(copy.history() == saved_history);
        REQUIRE(copy.n_cached() == static_cast<int64_t>(saved_history.size()) - 1);
        const auto r = copy.generate(turn, greedy(12));
        REQUIRE(r.tokens == want);
        REQUIRE(r.prefill_tokens == 4);  // only the new tokens and the carried one
    }
    SECTION("saving the restored session gives the same bytes") {
        Session copy(engine, 0);
        copy.restore((dir / "a.session").string());
        copy.save((dir / "b.session").string());
        REQUIRE(read_all(dir / "a.session") == read_all(dir / "b.session"));
    }
    SECTION("an empty conversation round-trips") {
        Session empty(engine, 0);
        empty.save((dir / "empty.session").string());
        Session other(engine, 0);
        (void)other.generate(prompt, greedy(2));
        other.restore((dir / "empty.session").string());
        REQUIRE(other.history().empty());
        REQUIRE(other.n_cached() == 0);
    }
}

TEST_CASE("another model instance with the same file accepts the session", "[session_file]") {
    TinyLlamaOptions o;
    const auto a = tiny_model(o, "same-a");
    const auto b = tiny_model(o, "same-b");  // identical bytes, separately loaded
    const auto dir = scratch_dir("session-file-same");
    Session sa(small_engine(a, 64), 0);
    const auto prompt = prompt_of(8, 17, static_cast<int32_t>(o.n_vocab));
    (void)sa.generate(prompt, greedy(4));
    sa.save((dir / "s.session").string());
    const auto want = sa.generate({}, greedy(6)).tokens;
    Session sb(small_engine(b, 32), 0);
    sb.restore((dir / "s.session").string());
    REQUIRE(sb.generate({}, greedy(6)).tokens == want);
}

TEST_CASE("truncated, altered and foreign session files are refused", "[session_file]") {
    TinyLlamaOptions o;
    const auto model = tiny_model(o, "corrupt");
    const auto dir = scratch_dir("session-file-corrupt");
    auto engine = small_engine(model, 64, 512, 16);
    Session s(engine, 0);
    const auto prompt = prompt_of(4, 20, static_cast<int32_t>(o.n_vocab));
    (void)s.generate(prompt, greedy(3));
    const auto good = dir / "good.session";
    s.save(good.string());
    const auto bytes = read_all(good);
    // header 128 + 23 tokens * 4 + 2 blocks * (2 layers * 2 * 2 heads * 16 slots * 16 dims * 2 bytes)
    REQUIRE(bytes.size() == 128 + 23 * 4 + 2 * 4096);

    Session target(engine, 0);
    (void)target.generate(prompt_of(5, 9, static_cast<int32_t>(o.n_vocab)), greedy(2));
    const auto target_history = target.history();
    const auto bad = dir / "bad.session";

    SECTION("every truncation") {
        for (size_t n = 0; n < bytes.size(); n += (n < 300 ? 1 : 61)) {
            write_all(bad, std::vector<char>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n)));
            const inlay_status st = restore_status(target, bad);
            INFO("truncated to " << n << " bytes");
            REQUIRE((st == INLAY_ERR_TRUNCATED || st == INLAY_ERR_BAD_FORMAT));
            if (n >= 128) REQUIRE(st == INLAY_ERR_TRUNCATED);
        }
        REQUIRE(target.history() == target_history);
    }
    SECTION("every altered byte") {
        std::set<inlay_status> seen;
        for (size_t i = 0; i < bytes.size(); i += (i < 300 ? 1 : 29)) {
            auto altered = bytes;
            altered[i] = static_cast<char>(altered[i] ^ 0x10);
            write_all(bad, altered);
            const inlay_status st = restore_status(target, bad);
            INFO("byte " << i << " altered");
            REQUIRE(st != INLAY_OK);
            seen.insert(st);
        }
        REQUIRE(seen.count(INLAY_ERR_BAD_FORMAT) == 1);
        REQUIRE(target.history() == target_history);
    }
    SECTION("trailing bytes") {
        auto longer = bytes;
        longer.push_back('x');
        write_all(bad, longer);
        REQUIRE(restore_status(target, bad) == INLAY_ERR_BAD_FORMAT);
    }
    SECTION("another format version (with a valid header checksum)") {
        auto v2 = bytes;
        v2[8] = 2;
        const uint64_t sum = checksum64(std::as_bytes(std::span<const char>(v2.data(), 120)), 0);
        std::memcpy(v2.data() + 120, &sum, 8);
        write_all(bad, v2);
        REQUIRE(restore_status(target, bad) == INLAY_ERR_UNSUPPORTED);
    }
    SECTION("not a session file, missing file, directory") {
        write_all(bad, std::vector<char>(500, 'G'));
        REQUIRE(restore_status(target, bad) == INLAY_ERR_BAD_FORMAT);
        REQUIRE(restore_status(target, dir / "absent.session") == INLAY_ERR_IO);
        REQUIRE(restore_status(target, dir) == INLAY_ERR_IO);
        // A GGUF model is not a session either.
        REQUIRE(restore_status(target, scratch_root() / "runtime-models-corrupt" / "corrupt.gguf") ==
                INLAY_ERR_BAD_FORMAT);
    }
    SECTION("a session of another model or KV geometry") {
        auto check_foreign = [&](const TinyLlamaOptions& other, const std::string& name, const std::string& what,
                                 int64_t block_size = 16) {
            const auto m = tiny_model(other, name);
            Session foreign(small_engine(m, 64, 512, block_size), 0);
            (void)foreign.generate(prompt_of(1, 5, static_cast<int32_t>(other.n_vocab)), greedy(2));
            foreign.save((dir / (name + ".session")).string());
            std::string message;
            REQUIRE(restore_status(target, dir / (name + ".session"), &message) == INLAY_ERR_SHAPE_MISMATCH);
            REQUIRE_THAT(message, Catch::Contains(what));
        };
        TinyLlamaOptions seed = o;
        seed.seed = 99;  // same shapes, other weights
        check_foreign(seed, "other-weights", "weights hash");
        TinyLlamaOptions layers = o;
        layers.n_layers = 3;
        check_foreign(layers, "other-layers", "n_layers");
        TinyLlamaOptions vocab = o;
        vocab.n_vocab = 320;
        check_foreign(vocab, "other-vocab", "n_vocab");
        TinyLlamaOptions rope = o;
        rope.rope_freq_base = 500000.0f;
        check_foreign(rope, "other-rope", "model hash");
        check_foreign(o, "other-block-size", "block size", 8);
        REQUIRE(target.history() == target_history);
    }
    SECTION("a conversation longer than the session's context") {
        auto small = std::make_unique<Session>(engine, 16);
        REQUIRE(restore_status(*small, good) == INLAY_ERR_CONTEXT_FULL);
    }
}
