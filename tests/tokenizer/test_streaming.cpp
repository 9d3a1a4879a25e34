// StreamingDetokenizer: output is valid UTF-8 after every token, a character split over
// byte tokens appears exactly at the token that completes it, and the concatenated
// stream equals the whole-sequence decode with ill-formed bytes replaced.
#include <catch2/catch.hpp>
#include <random>

#include "support/test_paths.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_test_util.h"
#include "core/utf8.h"

using namespace inlay;

namespace {

constexpr int32_t byte_token(uint8_t b) {
    return 3 + b;
}  // tiny SPM vocabulary layout
const std::string k_fffd(utf8::replacement_character);

}  // namespace

TEST_CASE("a 4-byte emoji over byte tokens comes out whole at the last token", "[tokenizer][streaming]") {
    const auto tok = tokenizer_from_gguf(test::tiny_spm_metadata({"\xE2\x96\x81", "a"}));
    // U+1F999 (llama) = F0 9F A6 99; the tiny vocabulary has no piece for it.
    const std::vector<int32_t> ids = tok->encode("\xF0\x9F\xA6\x99", false);
    REQUIRE(ids == std::vector<int32_t>{tok->find_token("\xE2\x96\x81"), byte_token(0xF0), byte_token(0x9F),
                                        byte_token(0xA6), byte_token(0x99)});
    StreamingDetokenizer detok(*tok, /*at_start=*/true);
    CHECK(detok.push(ids[0]).empty());  // the dummy-prefix space is dropped at the start
    CHECK(detok.push(ids[1]).empty());
    CHECK(detok.pending_bytes() == 1);
    CHECK(detok.push(ids[2]).empty());
    CHECK(detok.push(ids[3]).empty());
    CHECK(detok.pending_bytes() == 3);
    CHECK(detok.push(ids[4]) == "\xF0\x9F\xA6\x99");
    CHECK(detok.pending_bytes() == 0);
    CHECK(detok.flush().empty());
}

TEST_CASE("invalid bytes become U+FFFD as soon as they are known to be invalid", "[tokenizer][streaming]") {
    const auto tok = tokenizer_from_gguf(test::tiny_spm_metadata({"\xE2\x96\x81", "a",
                                                                  "\xE2\x96\x81"
                                                                  "a"}));
    const int32_t a = tok->find_token("a");
    const int32_t space_a = tok->find_token(
        "\xE2\x96\x81"
        "a");
    StreamingDetokenizer detok(*tok, /*at_start=*/false);
    CHECK(detok.push(byte_token(0xFF)) == k_fffd);  // never valid
    CHECK(detok.push(byte_token(0xF0)).empty());    // may start a character
    CHECK(detok.push(a) == k_fffd + "a");           // ...but "a" cannot continue it
    CHECK(detok.push(byte_token(0xE2)).empty());
    CHECK(detok.push(byte_token(0x82)).empty());
    CHECK(detok.flush() == k_fffd);                 // one truncated character
    CHECK(detok.push(space_a) == " a");             // not at start: the space stays
    CHECK(detok.push(byte_token(0xC0)) == k_fffd);  // overlong lead
    CHECK(detok.push(1).empty());                   // <s> renders as nothing
    StreamingDetokenizer special(*tok, false, /*render_special=*/true);
    CHECK(special.push(1) == "<s>");
}

TEST_CASE("at_start drops the dummy space only from the first text", "[tokenizer][streaming]") {
    const auto tok =
        tokenizer_from_gguf(test::tiny_spm_metadata({"\xE2\x96\x81"
                                                     "a",
                                                     "a"}));
    const int32_t space_a = tok->find_token(
        "\xE2\x96\x81"
        "a");
    StreamingDetokenizer detok(*tok, /*at_start=*/true);
    CHECK(detok.push(1).empty());  // BOS contributes no text and keeps the rule pending
    CHECK(detok.push(space_a) == "a");
    CHECK(detok.push(space_a) == " a");
    // A byte-level BPE vocabulary has no dummy prefix: nothing is dropped.
    const auto bpe = tokenizer_from_gguf(test::tiny_bpe_metadata({}));
    StreamingDetokenizer b(*bpe, /*at_start=*/true);
    CHECK(b.push(' ') == " ");
}

TEST_CASE("random token streams: valid output equal to the sanitized decode", "[tokenizer][streaming]") {
    const auto tok = tokenizer_from_gguf(test::tiny_spm_metadata({"\xE2\x96\x81", "a", "\xC3\xA9", "\xE2\x96\x81x"}));
    std::mt19937 rng(42);
    size_t bad = 0;
    for (int trial = 0; trial < 3000; ++trial) {
        std::vector<int32_t> ids(rng() % 12);
        for (auto& id : ids) {
            // Mostly continuation and lead bytes, some pieces and control tokens.
            const uint32_t r = rng() % 10;
            if (r < 4)
                id = byte_token(static_cast<uint8_t>(0x80 + rng() % 64));
            else if (r < 7)
                id = byte_token(static_cast<uint8_t>(0xC0 + rng() % 64));
            else if (r < 8)
                id = byte_token(static_cast<uint8_t>(rng() % 128));
            else
                id = static_cast<int32_t>(1 + rng() % static_cast<uint32_t>(tok->n_vocab() - 1));
        }
        const bool at_start = rng() % 2;
        StreamingDetokenizer detok(*tok, at_start);
        std::string streamed;
        for (const int32_t id : ids) {
            const std::string out = detok.push(id);
            if (utf8::find_invalid(out) != std::string_view::npos) ++bad;
            if (detok.pending_bytes() > 3) ++bad;
            streamed += out;
        }
        streamed += detok.flush();
        if (streamed != utf8::sanitize(tok->decode(ids, false, at_start))) ++bad;
    }
    CHECK(bad == 0);
}

TEST_CASE("streaming the llama-spm vectors reproduces their text", "[tokenizer][streaming]") {
    const auto path = test::testdata("vocab/ggml-vocab-llama-spm.gguf");
    INLAY_REQUIRE_FILE_OR_SKIP(path);
    const auto tok = tokenizer_from_gguf(test::gguf_metadata(path));
    const auto inputs = test::read_vocab_inputs(test::testdata("vocab/ggml-vocab-llama-spm.gguf.inp"));
    for (const auto& text : inputs) {
        StreamingDetokenizer detok(*tok, true);
        std::string out;
        for (const int32_t id : tok->encode(text, false)) out += detok.push(id);
        out += detok.flush();
        CHECK(out == text);
    }
}
