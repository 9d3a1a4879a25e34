// UTF-8 helpers against the definition: a reference decoder written from RFC 3629's
// bit patterns (shortest form, no surrogates, at most U+10FFFF), exhaustively for all
// strings of up to three bytes, and Unicode's own example of U+FFFD substitution.
#include <catch2/catch.hpp>
#include <random>

#include "core/error.h"
#include "core/utf8.h"

using namespace inlay;

namespace {

// True if `s` is exactly one well-formed character, by decoding the bit patterns and
// re-encoding (shortest form) independently of tokenizer/utf8.cpp.
bool one_valid_char(std::string_view s) {
    if (s.empty()) return false;
    const auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(s[i])); };
    size_t n;
    uint32_t cp;
    if (b(0) < 0x80)
        n = 1, cp = b(0);
    else if ((b(0) & 0xE0) == 0xC0)
        n = 2, cp = b(0) & 0x1F;
    else if ((b(0) & 0xF0) == 0xE0)
        n = 3, cp = b(0) & 0x0F;
    else if ((b(0) & 0xF8) == 0xF0)
        n = 4, cp = b(0) & 0x07;
    else
        return false;
    if (s.size() != n) return false;
    for (size_t i = 1; i < n; ++i) {
        if ((b(i) & 0xC0) != 0x80) return false;
        cp = (cp << 6) | (b(i) & 0x3F);
    }
    const size_t shortest = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    return shortest == n && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
}

// Valid iff the string splits into valid characters (greedy is exact: lead bytes fix
// lengths).
bool reference_valid(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
        bool ok = false;
        for (size_t n = 1; n <= 4 && i + n <= s.size(); ++n) {
            if (one_valid_char(s.substr(i, n))) {
                i += n;
                ok = true;
                break;
            }
        }
        if (!ok) return false;
    }
    return true;
}

}  // namespace

TEST_CASE("find_invalid agrees with the definition on all strings of 1-3 bytes", "[tokenizer][utf8]") {
    size_t mismatches = 0;
    std::string s;
    for (uint32_t len = 1; len <= 3; ++len) {
        const uint32_t total = 1u << (8 * len);
        s.resize(len);
        for (uint32_t v = 0; v < total; ++v) {
            for (uint32_t k = 0; k < len; ++k) s[k] = static_cast<char>((v >> (8 * k)) & 0xFF);
            const bool ours = utf8::find_invalid(s) == std::string_view::npos;
            if (ours != reference_valid(s)) ++mismatches;
        }
    }
    CHECK(mismatches == 0);
}

TEST_CASE("find_invalid agrees with the definition on 4-byte strings", "[tokenizer][utf8]") {
    size_t mismatches = 0, valid = 0;
    std::string s(4, '\0');
    // Every lead byte F0..F7 with every second byte and the remaining bytes from a
    // set that covers the class boundaries.
    const uint8_t edge[] = {0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xFF};
    for (uint32_t lead = 0xF0; lead <= 0xF7; ++lead)
        for (uint32_t b1 = 0; b1 < 256; ++b1)
            for (const uint8_t b2 : edge)
                for (const uint8_t b3 : edge) {
                    s[0] = static_cast<char>(lead), s[1] = static_cast<char>(b1), s[2] = static_cast<char>(b2),
                    s[3] = static_cast<char>(b3);
                    const bool ref = reference_valid(s);
                    valid += ref;
                    if ((utf8::find_invalid(s) == std::string_view::npos) != ref) ++mismatches;
                }
    std::mt19937 rng(7);
    for (int i = 0; i < 2000000; ++i) {
        const uint32_t v = rng();
        for (int k = 0; k < 4; ++k) s[static_cast<size_t>(k)] = static_cast<char>((v >> (8 * k)) & 0xFF);
        if ((utf8::find_invalid(s) == std::string_view::npos) != reference_valid(s)) ++mismatches;
    }
    CHECK(valid > 0);
    CHECK(mismatches == 0);
}

TEST_CASE("append_codepoint encodes every scalar value validly", "[tokenizer][utf8]") {
    size_t bad = 0;
    for (uint32_t cp = 0; cp <= 0x10FFFF; ++cp) {
        if (cp >= 0xD800 && cp <= 0xDFFF) continue;
        std::string s;
        utf8::append_codepoint(s, cp);
        size_t pos = 0;
        if (!one_valid_char(s) || utf8::decode_valid(s, pos) != cp || pos != s.size()) ++bad;
    }
    CHECK(bad == 0);
}

TEST_CASE("sanitize substitutes maximal subparts (Unicode Table 3-8)", "[tokenizer][utf8]") {
    // The Unicode Standard, section 3.9, Table 3-8: 61 F1 80 80 E1 80 C2 62 80 63 80 BF 64
    // -> a FFFD FFFD FFFD b FFFD c FFFD FFFD d.
    const std::string in = "\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64";
    const std::string r(utf8::replacement_character);
    CHECK(utf8::sanitize(in) == "a" + r + r + r + "b" + r + "c" + r + r + "d");
    // Overlong, surrogate and out-of-range forms: each lead byte is its own subpart
    // (their second bytes are out of range), each continuation byte too.
    CHECK(utf8::sanitize("\xC0\xAF") == r + r);
    CHECK(utf8::sanitize("\xED\xA0\x80") == r + r + r);
    CHECK(utf8::sanitize("\xF4\x90\x80\x80") == r + r + r + r);
    CHECK(utf8::sanitize("\xE2\x82") == r);  // a truncated character is one subpart
    CHECK(utf8::sanitize("ok \xE2\x82\xAC") == "ok \xE2\x82\xAC");
}

TEST_CASE("quoted escapes what a message must not carry raw and keeps valid UTF-8", "[utf8]") {
    using inlay::utf8::quoted;
    REQUIRE(quoted("") == "\"\"");
    REQUIRE(quoted("caf\xC3\xA9 \xE2\x82\xAC") == "\"caf\xC3\xA9 \xE2\x82\xAC\"");
    REQUIRE(quoted("a\"b\\c\nd\re\tf") == "\"a\\\"b\\\\c\\nd\\re\\tf\"");
    REQUIRE(quoted(std::string_view("\x01\x7f\0", 3)) == "\"\\x01\\x7f\\x00\"");
    // Ill-formed: a lone continuation byte, an overlong form, a surrogate, a cut-off tail.
    REQUIRE(quoted("\x80x") == "\"\\x80x\"");
    REQUIRE(quoted("\xC0\xAF") == "\"\\xc0\\xaf\"");
    REQUIRE(quoted("\xED\xA0\x80") == "\"\\xed\\xa0\\x80\"");
    REQUIRE(quoted("ok\xE2\x82") == "\"ok\\xe2\\x82\"");
    // Whatever goes in, what comes out is valid UTF-8.
    std::mt19937 rng(5);
    for (int i = 0; i < 2000; ++i) {
        std::string s(static_cast<size_t>(rng() % 12), '\0');
        for (char& c : s) c = static_cast<char>(rng() & 0xff);
        REQUIRE(inlay::utf8::find_invalid(quoted(s)) == std::string_view::npos);
    }
}

TEST_CASE("escape_invalid writes ill-formed bytes as \\xNN and leaves everything else", "[utf8]") {
    using inlay::utf8::escape_invalid;
    CHECK(escape_invalid("") == "");
    CHECK(escape_invalid("caf\xC3\xA9 \"q\"\n\\") == "caf\xC3\xA9 \"q\"\n\\");  // valid: unchanged, even quotes
    CHECK(escape_invalid("a\xC3(b") == "a\\xc3(b");
    CHECK(escape_invalid("\xED\xA0\x80") == "\\xed\\xa0\\x80");   // a surrogate: one maximal subpart per byte
    CHECK(escape_invalid("end\xE2\x82") == "end\\xe2\\x82");      // a truncated tail
    // Whatever the input, the result is valid UTF-8 (random bytes, fixed seed).
    std::mt19937 rng(7);
    for (int i = 0; i < 2000; ++i) {
        std::string s(static_cast<size_t>(rng() % 12), '\0');
        for (char& c : s) c = static_cast<char>(rng() & 0xff);
        CHECK(utf8::find_invalid(escape_invalid(s)) == std::string_view::npos);
    }
}

TEST_CASE("an inlay::Error never carries ill-formed UTF-8 in its message", "[utf8]") {
    const Error e(INLAY_ERR_BAD_FORMAT, "token \"\xFF\xFE\" is bad");
    CHECK(std::string(e.what()) == "token \"\\xff\\xfe\" is bad");
    CHECK(e.status() == INLAY_ERR_BAD_FORMAT);
}

TEST_CASE("quoted with single quotes escapes those and leaves double quotes", "[utf8]") {
    using inlay::utf8::quoted;
    REQUIRE(quoted("general.name", '\'') == "'general.name'");
    REQUIRE(quoted("it's \"x\"", '\'') == "'it\\'s \"x\"'");
    REQUIRE(quoted("bad\xFF", '\'') == "'bad\\xff'");
}
