#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "sampling/stop_matcher.h"

using namespace inlay;

namespace {

// Independent UTF-8 check (RFC 3629 table 3-7 ranges).
bool valid_utf8(const std::string& s) {
    size_t i = 0;
    auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    auto in = [&](size_t k, unsigned lo, unsigned hi) { return k < s.size() && byte(k) >= lo && byte(k) <= hi; };
    while (i < s.size()) {
        const unsigned c = byte(i);
        if (c <= 0x7F) i += 1;
        else if (c >= 0xC2 && c <= 0xDF && in(i + 1, 0x80, 0xBF)) i += 2;
        else if (c == 0xE0 && in(i + 1, 0xA0, 0xBF) && in(i + 2, 0x80, 0xBF)) i += 3;
        else if (((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) && in(i + 1, 0x80, 0xBF) && in(i + 2, 0x80, 0xBF)) i += 3;
        else if (c == 0xED && in(i + 1, 0x80, 0x9F) && in(i + 2, 0x80, 0xBF)) i += 3;
        else if (c == 0xF0 && in(i + 1, 0x90, 0xBF) && in(i + 2, 0x80, 0xBF) && in(i + 3, 0x80, 0xBF)) i += 4;
        else if (c >= 0xF1 && c <= 0xF3 && in(i + 1, 0x80, 0xBF) && in(i + 2, 0x80, 0xBF) && in(i + 3, 0x80, 0xBF)) i += 4;
        else if (c == 0xF4 && in(i + 1, 0x80, 0x8F) && in(i + 2, 0x80, 0xBF) && in(i + 3, 0x80, 0xBF)) i += 4;
        else return false;
    }
    return true;
}

struct Run {
    std::vector<std::string> outputs;
    std::string text;  // all outputs, then flush()
    bool stopped = false;
};

Run run(std::vector<std::string> stops, const std::vector<std::string>& pieces) {
    StopMatcher m(std::move(stops));
    Run r;
    for (const std::string& piece : pieces) {
        r.outputs.push_back(m.feed(piece));
        r.text += r.outputs.back();
    }
    r.stopped = m.stopped();
    r.text += m.flush();
    return r;
}

}  // namespace

TEST_CASE("stop: a stop string spanning several pieces", "[stop]") {
    const Run r = run({"###"}, {"Hello #", "#", "# world"});
    REQUIRE(r.outputs == std::vector<std::string>{"Hello ", "", ""});
    REQUIRE(r.stopped);
    REQUIRE(r.text == "Hello ");
}

TEST_CASE("stop: a partial match that fails is released", "[stop]") {
    const Run r = run({"</s>"}, {"a<", "/x", " done"});
    REQUIRE(r.outputs == std::vector<std::string>{"a", "</x", " done"});
    REQUIRE_FALSE(r.stopped);
    REQUIRE(r.text == "a</x done");
}

TEST_CASE("stop: flush returns what is held back", "[stop]") {
    StopMatcher m({"###"});
    REQUIRE(m.feed("ab##") == "ab");
    REQUIRE(m.flush() == "##");
    REQUIRE_FALSE(m.stopped());
}

TEST_CASE("stop: overlapping prefixes", "[stop]") {
    // "aab" after "aa" needs the held "a" to slide: the first "a" is released.
    REQUIRE(run({"aab"}, {"a", "a", "a", "b"}).outputs == std::vector<std::string>{"", "", "a", ""});
    REQUIRE(run({"aab"}, {"a", "a", "a", "b"}).text == "a");
    // With both, the earliest-starting stop string wins.
    const Run both = run({"ab", "aab"}, {"a", "a", "b"});
    REQUIRE(both.stopped);
    REQUIRE(both.text.empty());
    const Run only_ab = run({"ab"}, {"a", "a", "b"});
    REQUIRE(only_ab.stopped);
    REQUIRE(only_ab.text == "a");
    REQUIRE(run({"abab"}, {"xab", "abab"}).text == "x");
}

TEST_CASE("stop: several stop strings, the earliest one cuts", "[stop]") {
    REQUIRE(run({"STOP", "END"}, {"xxENDyySTOP"}).text == "xx");
    REQUIRE(run({"STOP", "END"}, {"aST", "OPbEND"}).text == "a");
    REQUIRE(run({"STOP", "END"}, {"aEN", "xSTO", "P"}).text == "aENx");
}

TEST_CASE("stop: nothing is returned after the stop", "[stop]") {
    StopMatcher m({"\n\n"});
    REQUIRE(m.feed("line\n") == "line");
    REQUIRE(m.feed("\nmore") == "");
    REQUIRE(m.stopped());
    REQUIRE(m.feed("even more").empty());
    REQUIRE(m.flush().empty());
}

TEST_CASE("stop: multi-byte characters are never split", "[stop]") {
    // "é!" shares its first character with the text: held whole, then cut before it.
    REQUIRE(run({"é!"}, {"caf", "é", "!"}).text == "caf");
    REQUIRE(run({"é!"}, {"café", " ok"}).text == "café ok");
    // U+00E8 and U+00E9 share the lead byte 0xC3: no false match, no split.
    const Run r = run({"é"}, {"è", "è"});
    REQUIRE(r.outputs == std::vector<std::string>{"è", "è"});
    // A 4-byte stop string after 4-byte text.
    REQUIRE(run({"🙂"}, {"a🙃b🙂c"}).text == "a🙃b");
    // Pieces cut inside a character (not expected from the detokenizer, but kept whole).
    StopMatcher m({});
    REQUIRE(m.feed("\xC3").empty());
    REQUIRE(m.feed("\xA8x") == "è" "x");
    REQUIRE(m.feed("\xF0\x9F").empty());
    REQUIRE(m.feed("\x99\x82") == "🙂");
}

TEST_CASE("stop: random byte splits agree with a whole-text search", "[stop]") {
    const std::vector<std::string> stops{"</s>", "ユーザー:", "ab", "🙂🙂", "\n\n"};
    const std::vector<std::string> atoms{"a", "b", "<", "/", "s", ">", "ユ", "ー", "ザ", ":", "🙂", "\n", "é", " "};
    std::mt19937 gen(99);
    for (int round = 0; round < 3000; ++round) {
        std::string text;
        const size_t n_atoms = gen() % 30;
        for (size_t i = 0; i < n_atoms; ++i) text += atoms[gen() % atoms.size()];
        size_t first = std::string::npos;
        for (const std::string& s : stops) first = std::min(first, text.find(s));
        const std::string expected = text.substr(0, first);

        StopMatcher m(stops);
        std::string got;
        size_t pos = 0;
        while (pos < text.size()) {
            const size_t len = 1 + gen() % 6;  // arbitrary byte splits
            const std::string out = m.feed(std::string_view(text).substr(pos, len));
            INFO("text '" << text << "' output '" << out << "'");
            REQUIRE(valid_utf8(out));
            got += out;
            pos += len;
        }
        REQUIRE(m.stopped() == (first != std::string::npos));
        got += m.flush();
        REQUIRE(got == expected);
    }
}

TEST_CASE("stop: invalid stop strings are rejected", "[stop]") {
    try {
        StopMatcher m({"ok", ""});
        FAIL("accepted");
    } catch (const Error& e) {
        REQUIRE(e.status() == INLAY_ERR_INVALID_ARGUMENT);
    }
    try {
        StopMatcher m({"\xC3"});
        FAIL("accepted");
    } catch (const Error& e) {
        REQUIRE(e.status() == INLAY_ERR_INVALID_UTF8);
    }
    REQUIRE_THROWS_AS(StopMatcher({"\xED\xA0\x80"}), Error);  // surrogate
    REQUIRE_THROWS_AS(StopMatcher({"\xC0\xAF"}), Error);      // overlong
}

TEST_CASE("stop: no stop strings passes text through", "[stop]") {
    const Run r = run({}, {"abc", "", "déf"});
    REQUIRE(r.outputs == std::vector<std::string>{"abc", "", "déf"});
    REQUIRE(r.text == "abcdéf");
}
