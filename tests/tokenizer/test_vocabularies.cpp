// Hand-made vocabularies: merge order worked out by hand from the algorithms'
// definitions (SentencePiece: highest-scoring pair first; BPE: lowest rank first; ties:
// leftmost), byte fallback, special tokens, validation errors and thread safety.
#include <catch2/catch.hpp>
#include <thread>

#include "core/error.h"
#include "io/metadata.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_test_util.h"

using namespace inlay;
using test::tiny_bpe_metadata;
using test::tiny_spm_metadata;

namespace {

constexpr int32_t k_spm_first_piece = 3 + 256;  // after <unk>, <s>, </s> and the byte tokens
constexpr int32_t k_bpe_first_merge = 256;

// Status and message of the inlay::Error that `f` throws (INLAY_OK if none).
template <class F>
std::pair<inlay_status, std::string> error_of(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return {e.status(), e.what()};
    }
    return {INLAY_OK, ""};
}

std::vector<int32_t> spm_ids(const Tokenizer& tok, std::initializer_list<std::string_view> texts) {
    std::vector<int32_t> ids;
    for (const auto t : texts) ids.push_back(tok.find_token(t));
    return ids;
}

}  // namespace

TEST_CASE("SPM merges the highest-scoring pair first", "[tokenizer][spm]") {
    // Scores fall in list order. "▁hello": ll (best) first, then ▁h, then ▁h+e = ▁he,
    // then ▁he+ll = ▁hell; ▁hello is no token, so ▁hell + o remain.
    const std::vector<std::string> pieces = {
        "ll", "\xE2\x96\x81h", "el", "lo", "he", "\xE2\x96\x81he", "\xE2\x96\x81hell", "o", "h", "e",
        "l",  "\xE2\x96\x81"};
    const auto tok = tokenizer_from_gguf(tiny_spm_metadata(pieces));
    CHECK(tok->encode("hello", false) == spm_ids(*tok, {"\xE2\x96\x81hell", "o"}));
    // "▁hel": pairs ▁h (score -2), he (-5), el (-3): ▁h merges first; then el (-3)
    // beats the new pair ▁he (-6), and ▁hel is no token: ▁h + el (a greedy longest
    // match would give ▁he + l).
    CHECK(tok->encode("hel", false) == spm_ids(*tok, {"\xE2\x96\x81h", "el"}));
    // Equal scores cannot occur here; equal texts merge leftmost first: "lll" -> ll + l.
    CHECK(tok->encode("lll", false) == spm_ids(*tok, {"\xE2\x96\x81", "ll", "l"}));
    // Unknown characters fall back to their UTF-8 bytes: é = C3 A9.
    CHECK(tok->encode("\xC3\xA9", false) == std::vector<int32_t>{tok->find_token("\xE2\x96\x81"), 3 + 0xC3, 3 + 0xA9});
    CHECK(tok->encode("", false).empty());
    // Spaces are escaped to U+2581; every text fragment after a special token gets the
    // dummy prefix again.
    CHECK(tok->encode(" h", false) == spm_ids(*tok, {"\xE2\x96\x81", "\xE2\x96\x81h"}));
    CHECK(tok->encode("h<s>h", true) ==
          std::vector<int32_t>{tok->find_token("\xE2\x96\x81h"), 1, tok->find_token("\xE2\x96\x81h")});
    CHECK(tok->decode(tok->encode("hello e", false), false, true) == "hello e");
    CHECK(tok->decode(tok->encode("hello e", false), false, false) == " hello e");
    CHECK(k_spm_first_piece == tok->find_token("ll"));
}

TEST_CASE("SPM without byte tokens falls back to the unknown token", "[tokenizer][spm]") {
    Metadata md;
    md.add("tokenizer.ggml.model", MetadataValue::from_string("llama"));
    md.add("tokenizer.ggml.tokens", test::string_array({"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a"}));
    md.add("tokenizer.ggml.token_type", test::int_array(ValueType::I32, {2, 3, 3, 1, 1}));
    const auto tok = tokenizer_from_gguf(md);
    CHECK(tok->encode("ab", false) == std::vector<int32_t>{3, 4, 0});
    CHECK(tok->token_to_piece(0, false).empty());
    CHECK(tok->token_to_piece(0, true) == "<unk>");
}

TEST_CASE("BPE merges the lowest rank first, leftmost on ties", "[tokenizer][bpe]") {
    const std::vector<std::string> merges = {"h e", "l l", "he ll", "hell o", "\xC4\xA0 w", "a a"};
    const auto tok = tokenizer_from_gguf(tiny_bpe_metadata(merges));
    const int32_t hello = k_bpe_first_merge + 3;
    CHECK(tok->find_token("hello") == hello);
    CHECK(tok->encode("hello", false) == std::vector<int32_t>{hello});
    // " world" is one word (qwen2 pre-tokenizer): Ġw then the single letters.
    CHECK(tok->encode("hello world", false) == std::vector<int32_t>{hello, k_bpe_first_merge + 4, 'o', 'r', 'l', 'd'});
    CHECK(tok->encode("aaa", false) == std::vector<int32_t>{k_bpe_first_merge + 5, 'a'});
    // Token b is byte b's byte-level character, so "é" (C3 A9) gives its two bytes.
    CHECK(tok->encode("\xC3\xA9", false) == std::vector<int32_t>{0xC3, 0xA9});
    CHECK(tok->decode(tok->encode("hello world \xC3\xA9!", false), false, true) == "hello world \xC3\xA9!");
}

TEST_CASE("BPE ignore_merges (llama-bpe) emits whole-word tokens", "[tokenizer][bpe]") {
    const std::vector<std::string> merges = {"x y"};
    const auto llama3 = tokenizer_from_gguf(tiny_bpe_metadata(merges, "llama-bpe", {"xyz"}));
    const auto qwen2 = tokenizer_from_gguf(tiny_bpe_metadata(merges, "qwen2", {"xyz"}));
    const int32_t xy = k_bpe_first_merge, xyz = k_bpe_first_merge + 1;
    CHECK(llama3->encode("xyz", false) == std::vector<int32_t>{xyz});
    CHECK(qwen2->encode("xyz", false) == std::vector<int32_t>{xy, 'z'});
    CHECK(llama3->add_bos() == false);  // no BOS id in this vocabulary
}

namespace {

std::vector<std::string> pieces_of(PretokenizerKind kind, std::string_view text) {
    const RegexPretokenizer pre(kind);
    std::vector<std::pair<size_t, size_t>> ranges;
    pre.split(text, ranges);
    std::vector<std::string> out;
    for (const auto& [b, e] : ranges) out.emplace_back(text.substr(b, e - b));
    return out;
}

using Pieces = std::vector<std::string>;

}  // namespace

TEST_CASE("pre-tokenizers split as their regexes say", "[tokenizer][bpe]") {
    // The expected pieces are worked out by hand from each pattern (the leftmost
    // alternative that matches wins; text between matches is a piece of its own):
    //   gpt-2:  's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
    //   qwen2:  (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*
    //           |\s*[\r\n]+|\s+(?!\S)|\s+          (llama3: \p{N}{1,3} for \p{N})
    // with \s the Unicode White_Space set (U+2028 included). "  Hello": \s+(?!\S) takes
    // the first space only, so that the second joins the word; a tab joins the next word
    // in qwen2/llama3 ([^\r\n\p{L}\p{N}]?) but not in gpt-2 (" ?" is a space only).
    const std::string text = "It's 2024!  Hello\n\n world\t\xC3\xA9t\xC3\xA9 \xE2\x80\xA8x";
    CHECK(pieces_of(PretokenizerKind::gpt2, text) ==
          Pieces{"It", "'s", " 2024", "!", " ", " Hello", "\n\n", " world", "\t", "\xC3\xA9t\xC3\xA9", " ", "\xE2\x80\xA8", "x"});
    CHECK(pieces_of(PretokenizerKind::qwen2, text) ==
          Pieces{"It", "'s", " ", "2", "0", "2", "4", "!", " ", " Hello", "\n\n", " world", "\t\xC3\xA9t\xC3\xA9", " ",
                 "\xE2\x80\xA8x"});
    CHECK(pieces_of(PretokenizerKind::llama3, text) ==
          Pieces{"It", "'s", " ", "202", "4", "!", " ", " Hello", "\n\n", " world", "\t\xC3\xA9t\xC3\xA9", " ",
                 "\xE2\x80\xA8x"});
    // Contractions: gpt-2's are lower case only; llama3's and qwen2's any case. Digits:
    // gpt-2 keeps a run, llama3 groups by three from the left, qwen2 splits each.
    CHECK(pieces_of(PretokenizerKind::gpt2, "IT'S we'll 1234567") ==
          Pieces{"IT", "'", "S", " we", "'ll", " 1234567"});
    CHECK(pieces_of(PretokenizerKind::llama3, "IT'S we'll 1234567") ==
          Pieces{"IT", "'S", " we", "'ll", " ", "123", "456", "7"});
    CHECK(pieces_of(PretokenizerKind::qwen2, "IT'S 12") == Pieces{"IT", "'S", " ", "1", "2"});
    // Punctuation takes a leading space and (llama3/qwen2) the newlines after it. In
    // gpt-2, \s+(?!\S) gives back the last newline before "b", which is then a piece alone.
    CHECK(pieces_of(PretokenizerKind::gpt2, "a ...\n\nb") == Pieces{"a", " ...", "\n", "\n", "b"});
    CHECK(pieces_of(PretokenizerKind::qwen2, "a ...\n\nb") == Pieces{"a", " ...\n\n", "b"});
    // llama.cpp's "default": punctuation runs, then gpt-2's pattern inside each piece,
    // then digit runs, then groups of three digits (the rest of a run stays whole).
    CHECK(pieces_of(PretokenizerKind::fallback, "a+b=12345!") == Pieces{"a", "+", "b", "=", "123", "45", "!"});
    CHECK(pieces_of(PretokenizerKind::fallback, "").empty());

    // Through the tokenizer: a merge across a piece boundary is never applied, one inside
    // a piece is. "t '" ranks first, but "It's" splits as It|'s.
    const auto qwen2 = tokenizer_from_gguf(tiny_bpe_metadata({"t '", "' s"}, "qwen2"));
    const auto gpt2 = tokenizer_from_gguf(tiny_bpe_metadata({"t '", "' s"}, "gpt-2"));
    const auto nothing = tokenizer_from_gguf(tiny_bpe_metadata({"t '", "' s"}, "default"));
    const int32_t t_quote = k_bpe_first_merge, quote_s = k_bpe_first_merge + 1;
    CHECK(qwen2->encode("It's", false) == std::vector<int32_t>{'I', 't', quote_s});
    CHECK(gpt2->encode("It's", false) == std::vector<int32_t>{'I', 't', quote_s});
    // The default pattern cuts punctuation off on its own: ' is a piece, no merge applies.
    CHECK(nothing->encode("It's", false) == std::vector<int32_t>{'I', 't', '\'', 's'});
    CHECK(qwen2->token_to_piece(t_quote, false) == "t'");
    for (const auto* tok : {qwen2.get(), gpt2.get()}) CHECK(tok->decode(tok->encode(text, false), false, true) == text);
}

TEST_CASE("special tokens: control only with parse_special, user-defined always", "[tokenizer][special]") {
    Metadata md = tiny_bpe_metadata({"h i"}, "qwen2");
    // Make <|im_start|> user-defined to see the difference.
    auto tokens = md.get_string_array("tokenizer.ggml.tokens");
    std::vector<int64_t> types = md.get_array("tokenizer.ggml.token_type").ints;
    const auto n = static_cast<int64_t>(tokens.size());
    tokens.push_back("<think>");
    types.push_back(4);
    md.set("tokenizer.ggml.tokens", test::string_array(tokens));
    md.set("tokenizer.ggml.token_type", test::int_array(ValueType::I32, types));
    const auto tok = tokenizer_from_gguf(md);
    const int32_t im_end = static_cast<int32_t>(n - 1), think = static_cast<int32_t>(n);
    const int32_t hi = k_bpe_first_merge;
    CHECK(tok->encode("<think>hi<|im_end|>", true) == std::vector<int32_t>{think, hi, im_end});
    const auto plain = tok->encode("<think>hi<|im_end|>", false);
    REQUIRE(plain.size() > 3);
    CHECK(plain[0] == think);
    CHECK(std::find(plain.begin(), plain.end(), im_end) == plain.end());
    CHECK(tok->is_eog(im_end));  // "<|im_end|>" is a known end-of-turn marker
    CHECK(tok->is_eog(n - 3));   // "<|endoftext|>"
    CHECK_FALSE(tok->is_eog(n - 2));
    CHECK(tok->eog_ids() == std::vector<int32_t>{static_cast<int32_t>(n - 3), im_end});
    CHECK(tok->token_to_piece(im_end, false).empty());
    CHECK(tok->token_to_piece(im_end, true) == "<|im_end|>");
    CHECK(tok->token_to_piece(think, false) == "<think>");
    CHECK(tok->token_type(think) == TokenType::user_defined);
}

TEST_CASE("malformed vocabularies give clear errors", "[tokenizer][errors]") {
    auto expect = [](const Metadata& md, inlay_status status, const std::string& needle) {
        const auto [s, message] = error_of([&] { (void)tokenizer_from_gguf(md); });
        INFO(message);
        CHECK(s == status);
        CHECK(message.find(needle) != std::string::npos);
    };
    const Metadata spm = tiny_spm_metadata({"a", "b"});
    const Metadata bpe = tiny_bpe_metadata({"a b"});
    {
        Metadata md = spm;
        md.set("tokenizer.ggml.scores", test::float_array({0, 1}));
        expect(md, INLAY_ERR_BAD_FORMAT, "tokenizer.ggml.scores");
    }
    {
        Metadata md = spm;
        md.set("tokenizer.ggml.token_type", test::int_array(ValueType::I32, {1, 1, 1}));
        expect(md, INLAY_ERR_BAD_FORMAT, "tokenizer.ggml.token_type");
    }
    {
        Metadata md = spm;
        auto types = md.get_array("tokenizer.ggml.token_type").ints;
        types[5] = 9;
        md.set("tokenizer.ggml.token_type", test::int_array(ValueType::I32, types));
        expect(md, INLAY_ERR_BAD_FORMAT, "token 5 has type 9");
    }
    {
        Metadata md = spm;
        auto tokens = md.get_string_array("tokenizer.ggml.tokens");
        tokens[10] = "<0xZZ>";
        md.set("tokenizer.ggml.tokens", test::string_array(tokens));
        expect(md, INLAY_ERR_BAD_FORMAT, "byte token 10");
    }
    {
        Metadata md = spm;
        auto tokens = md.get_string_array("tokenizer.ggml.tokens");
        tokens.back() = "a";
        md.set("tokenizer.ggml.tokens", test::string_array(tokens));
        expect(md, INLAY_ERR_BAD_FORMAT, "same text");
    }
    {
        Metadata md = spm;
        md.set("tokenizer.ggml.bos_token_id", MetadataValue::from_int(ValueType::U32, 99999));
        expect(md, INLAY_ERR_BAD_FORMAT, "tokenizer.ggml.bos_token_id");
    }
    {
        Metadata md = spm;
        md.set("tokenizer.ggml.eos_token_id", MetadataValue::from_int(ValueType::U32, 0xFFFFFFFF));  // "none"
        CHECK(tokenizer_from_gguf(md)->eos() == -1);
    }
    {
        Metadata md;
        md.add("tokenizer.ggml.model", MetadataValue::from_string("llama"));
        md.add("tokenizer.ggml.tokens", test::string_array({}));
        expect(md, INLAY_ERR_BAD_FORMAT, "empty");
    }
    {
        Metadata md = spm;
        md.set("tokenizer.ggml.tokens", test::int_array(ValueType::I32, {1, 2}));
        expect(md, INLAY_ERR_BAD_FORMAT, "tokenizer.ggml.tokens");
    }
    {
        Metadata md = spm;
        md.set("tokenizer.ggml.model", MetadataValue::from_string("bert"));
        expect(md, INLAY_ERR_UNSUPPORTED, "'bert'");
    }
    {
        Metadata md;
        md.add("tokenizer.ggml.tokens", test::string_array({"a"}));
        expect(md, INLAY_ERR_MISSING, "tokenizer.ggml.model");
    }
    {
        Metadata md = bpe;
        md.set("tokenizer.ggml.pre", MetadataValue::from_string("starcoder"));
        expect(md, INLAY_ERR_UNSUPPORTED, "'starcoder'");
    }
    for (const std::string bad : {"ab", "a ", " ", ""}) {
        Metadata md = bpe;
        md.set("tokenizer.ggml.merges", test::string_array({"a b", bad}));
        expect(md, INLAY_ERR_BAD_FORMAT, "merge 1");
    }
    {
        Metadata md;
        for (const auto& [k, v] : bpe.entries())
            if (k != "tokenizer.ggml.merges") md.add(k, v);
        expect(md, INLAY_ERR_MISSING, "tokenizer.ggml.merges");
    }
}

TEST_CASE("invalid UTF-8 input and invalid ids are rejected", "[tokenizer][errors]") {
    for (const auto& md : {tiny_spm_metadata({"a"}), tiny_bpe_metadata({"a b"})}) {
        const auto tok = tokenizer_from_gguf(md);
        for (const auto& [text, offset] : std::vector<std::pair<std::string, size_t>>{{"ab\xC3(", 2},
                                                                                      {"ab\xE2\x82", 2},
                                                                                      {"\xC0\xAF", 0},
                                                                                      {"x\xED\xA0\x80", 1},
                                                                                      {"xy\xF4\x90\x80\x80", 2},
                                                                                      {"\xFF", 0},
                                                                                      {"ok\x80", 2}}) {
            for (const bool parse_special : {false, true}) {
                const auto [status, message] = error_of([&] { (void)tok->encode(text, parse_special); });
                INFO(message);
                CHECK(status == INLAY_ERR_INVALID_UTF8);
                CHECK(message.find("offset " + std::to_string(offset)) != std::string::npos);
            }
        }
        for (const int32_t id : {-1, tok->n_vocab(), INT32_MAX}) {
            CHECK(error_of([&] { (void)tok->token_to_piece(id, false); }).first == INLAY_ERR_INVALID_TOKEN);
            CHECK(error_of([&] { (void)tok->token_text(id); }).first == INLAY_ERR_INVALID_TOKEN);
            const std::vector<int32_t> ids = {0, id};
            CHECK(error_of([&] { (void)tok->decode(ids, false, false); }).first == INLAY_ERR_INVALID_TOKEN);
            CHECK_FALSE(tok->is_eog(id));
        }
    }
}

TEST_CASE("concurrent encodes give the single-threaded result", "[tokenizer][threads]") {
    const auto tok = tokenizer_from_gguf(tiny_bpe_metadata({"h e", "l l", "he ll", "hell o", "\xC4\xA0 w"}));
    std::vector<std::string> texts;
    for (int i = 0; i < 64; ++i) texts.push_back("hello world " + std::to_string(i * 7919) + " <|im_end|> x\n");
    std::vector<std::vector<int32_t>> expected;
    for (const auto& t : texts) expected.push_back(tok->encode(t, true));
    std::vector<int> mismatches(4, 0);
    std::vector<std::thread> threads;
    for (int w = 0; w < 4; ++w) {
        threads.emplace_back([&, w] {
            for (int rep = 0; rep < 50; ++rep)
                for (size_t i = 0; i < texts.size(); ++i)
                    if (tok->encode(texts[i], true) != expected[i]) ++mismatches[static_cast<size_t>(w)];
        });
    }
    for (auto& t : threads) t.join();
    CHECK(mismatches == std::vector<int>(4, 0));
}
