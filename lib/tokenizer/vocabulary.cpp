#include "tokenizer/vocabulary.h"

#include <algorithm>
#include <array>
#include <climits>

#include "core/error.h"
#include "tokenizer/byte_level.h"
#include "core/utf8.h"

namespace inlay {

namespace {

// Texts that llama.cpp treats as end of generation whatever the file says, and forces
// to control type (llama-vocab.cpp, "auto-detect EOG tokens"), plus the Qwen FIM
// markers it finds by text and also ends generation on.
// clang-format off
constexpr std::array<std::string_view, 26> k_eog_texts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<\xEF\xBD\x9C" "end\xE2\x96\x81" "of\xE2\x96\x81" "sentence\xEF\xBD\x9C>",  // <｜end▁of▁sentence｜>
    "[e~[", "<|fim_pad|>", "<|fim_repo|>", "<|repo_name|>", "<|file_sep|>",
};
// clang-format on

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

// The byte of a "<0xXX>" token text, or -1.
int byte_token_value(std::string_view text) {
    if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
    const int hi = hex_value(text[3]);
    const int lo = hex_value(text[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

std::string unescape_sentencepiece(std::string_view text) {
    constexpr std::string_view k_space = "\xE2\x96\x81";  // U+2581
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
        if (text.substr(i, 3) == k_space) {
            out.push_back(' ');
            i += 3;
        } else {
            out.push_back(text[i++]);
        }
    }
    return out;
}

}  // namespace

void Vocabulary::finalize(PieceStyle style) {
    const size_t n = texts.size();
    if (n == 0) fail(INLAY_ERR_BAD_FORMAT, "{}: the vocabulary is empty", origin);
    if (n > static_cast<size_t>(INT32_MAX)) fail(INLAY_ERR_BAD_FORMAT, "{}: {} tokens is too many", origin, n);
    if (types.size() != n) {
        fail(INLAY_ERR_BAD_FORMAT, "{}: {} token types for {} tokens", origin, types.size(), n);
    }
    if (!scores.empty() && scores.size() != n) {
        fail(INLAY_ERR_BAD_FORMAT, "{}: {} scores for {} tokens", origin, scores.size(), n);
    }
    if (!strip.empty() && strip.size() != n) strip.assign(n, 0);
    const auto n_tok = static_cast<int32_t>(n);
    auto check_special = [&](int32_t id, std::string_view what) {
        if (id < -1 || id >= n_tok)
            fail(INLAY_ERR_BAD_FORMAT, "{}: {} id {} is outside the vocabulary (0..{})", origin, what, id, n_tok - 1);
    };
    check_special(bos, "BOS");
    check_special(eos, "EOS");
    check_special(unk, "unknown-token");
    check_special(eot, "EOT");
    check_special(eom, "EOM");
    for (const int32_t id : extra_eog) check_special(id, "end-of-generation");

    text_to_id.clear();
    text_to_id.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        if (texts[i].empty()) texts[i] = "[EMPTY_" + std::to_string(i) + "]";
        const auto [it, inserted] = text_to_id.emplace(texts[i], static_cast<int32_t>(i));
        if (!inserted) {
            fail(INLAY_ERR_BAD_FORMAT, "{}: tokens {} and {} have the same text {}", origin, it->second, i,
                 utf8::quoted(texts[i]));
        }
        if (types[i] == TokenType::byte && byte_token_value(texts[i]) < 0) {
            fail(INLAY_ERR_BAD_FORMAT, "{}: byte token {} has text {}, expected <0xXX>", origin, i, utf8::quoted(texts[i]));
        }
    }

    eog.assign(n, 0);
    for (const std::string_view text : k_eog_texts) {
        const int32_t id = find(text);
        if (id < 0) continue;
        eog[static_cast<size_t>(id)] = 1;
        types[static_cast<size_t>(id)] = TokenType::control;  // llama.cpp overrides "control-looking" tokens
    }
    for (const int32_t id : {eos, eot, eom}) {
        if (id >= 0) eog[static_cast<size_t>(id)] = 1;
    }
    for (const int32_t id : extra_eog) eog[static_cast<size_t>(id)] = 1;

    specials.clear();
    for (int32_t id = 0; id < n_tok; ++id) {
        const TokenType t = types[static_cast<size_t>(id)];
        if (t != TokenType::control && t != TokenType::user_defined && t != TokenType::unknown) continue;
        // A needle that is not valid UTF-8 could match inside a character and cut
        // the text at a non-boundary; such a token can never be typed anyway.
        if (utf8::find_invalid(texts[static_cast<size_t>(id)]) != std::string_view::npos) continue;
        specials.push_back(id);
    }
    std::stable_sort(specials.begin(), specials.end(), [&](int32_t a, int32_t b) {
        return texts[static_cast<size_t>(a)].size() > texts[static_cast<size_t>(b)].size();
    });

    if (rstrip_specials) {
        strip.assign(n, 0);
        for (const int32_t id : specials) strip[static_cast<size_t>(id)] |= rstrip;
        for (const std::string_view text : {"</s>"}) {
            if (const int32_t id = find(text); id >= 0) strip[static_cast<size_t>(id)] |= rstrip;
        }
        for (const std::string_view text : {"<unk>", "<s>", "<|endoftext|>"}) {
            if (const int32_t id = find(text); id >= 0) strip[static_cast<size_t>(id)] &= static_cast<uint8_t>(~rstrip);
        }
    }

    byte_tokens.assign(256, -1);
    for (int b = 0; b < 256; ++b) {
        static constexpr char hex[] = "0123456789ABCDEF";
        const char name[7] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>', 0};
        byte_tokens[static_cast<size_t>(b)] = find(name);
    }

    pieces.assign(n, std::string());
    for (size_t i = 0; i < n; ++i) {
        const std::string& text = texts[i];
        switch (types[i]) {
            case TokenType::control:
            case TokenType::unknown:
            case TokenType::user_defined:
                pieces[i] = text;
                break;
            case TokenType::normal:
                if (style == PieceStyle::sentencepiece)
                    pieces[i] = unescape_sentencepiece(text);
                else if (utf8::find_invalid(text) == std::string_view::npos)
                    pieces[i] = byte_level::decode(text);
                else
                    pieces[i] = text;  // not byte-level text at all: keep its bytes
                break;
            case TokenType::byte:
                pieces[i] = std::string(1, static_cast<char>(byte_token_value(text)));
                break;
            case TokenType::unused:
            case TokenType::undefined:
                break;  // llama.cpp renders these as nothing
        }
    }
}

}  // namespace inlay
