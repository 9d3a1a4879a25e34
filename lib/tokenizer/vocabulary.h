// Vocabulary: the token table every tokenizer shares (texts, scores, types, special
// ids and flags) plus the indexes derived from it by finalize(). Internal to the
// tokenizer component; the loaders fill the first block of fields and then call
// finalize() once, after which the object is immutable.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace inlay {

// Hashing std::string keys looked up by std::string_view without a copy.
struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
using TextToId = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

// How normal tokens' text maps to bytes.
enum class PieceStyle {
    sentencepiece,  // U+2581 stands for a space
    byte_level,     // GPT-2 byte-to-unicode alphabet
};

struct Vocabulary {
    // ---- filled by the loader ----
    std::string origin;  // what the vocabulary came from, for messages
    std::vector<std::string> texts;
    std::vector<float> scores;     // empty or one per token
    std::vector<TokenType> types;  // one per token
    int32_t bos = -1, eos = -1, unk = -1, eot = -1, eom = -1;
    std::vector<int32_t> extra_eog;  // further ids that end generation (FIM pad/rep/sep keys)
    bool add_bos = false;
    bool add_eos = false;
    bool add_space_prefix = false;
    // Whitespace the special token swallows on its left / right (llama.cpp's
    // LSTRIP/RSTRIP attributes, set by model name); empty = none anywhere.
    std::vector<uint8_t> strip;
    static constexpr uint8_t lstrip = 1, rstrip = 2;
    // llama.cpp's Phi-3 rule: every special token except <unk>, <s> and <|endoftext|>
    // swallows the whitespace after it (applied by finalize()).
    bool rstrip_specials = false;

    // ---- derived by finalize() ----
    TextToId text_to_id;
    std::vector<uint8_t> eog;          // one flag per token
    std::vector<int32_t> specials;     // control/user-defined/unknown, longest text first
    std::vector<std::string> pieces;   // each token's bytes, control tokens rendered
    std::vector<int32_t> byte_tokens;  // "<0xXX>" token per byte value, or -1

    // Validates the table (sizes, byte-token texts, duplicate texts, special ids) and
    // builds the indexes. Empty texts become "[EMPTY_<id>]" as in llama.cpp.
    // Throws INLAY_ERR_BAD_FORMAT naming `origin`.
    void finalize(PieceStyle style);

    [[nodiscard]] int32_t n_tokens() const { return static_cast<int32_t>(texts.size()); }
    [[nodiscard]] int32_t find(std::string_view text) const {
        const auto it = text_to_id.find(text);
        return it == text_to_id.end() ? -1 : it->second;
    }
};

}  // namespace inlay
