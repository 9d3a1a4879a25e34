// Regex pre-tokenizers of byte-level BPE vocabularies: they cut text into the words
// that BPE merges never cross. Each pattern splits every piece produced by the
// previous one; the matches and the text between matches both become pieces (the
// "Isolated" behaviour of Hugging Face and llama.cpp). Patterns run under PCRE2 with
// UTF and UCP; `\s`/`\S` are replaced by Unicode White_Space classes so that they
// match exactly what llama.cpp and Hugging Face treat as whitespace (PCRE2's own `\s`
// misses U+0085).
//
// Immutable after construction; split() is safe to call from several threads.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "inlay/inlay.h"

namespace inlay {

enum class PretokenizerKind {
    gpt2,      // GPT-2's pattern ("gpt-2", "phi-2", ...)
    llama3,    // Llama 3 ("llama-bpe", "llama3", "llama-v3")
    qwen2,     // Qwen2/Qwen3 ("qwen2"): like llama3 but single digits
    fallback,  // llama.cpp's "default": four patterns applied in turn
};

class RegexPretokenizer {
public:
    // Throws INLAY_ERR_INTERNAL if a built-in pattern does not compile.
    explicit RegexPretokenizer(PretokenizerKind kind);
    // Patterns from a file (already translated by hf_regex_to_pcre2), applied in
    // turn. A pattern PCRE2 rejects throws INLAY_ERR_UNSUPPORTED naming it.
    explicit RegexPretokenizer(std::vector<std::string> patterns);
    ~RegexPretokenizer();
    RegexPretokenizer(const RegexPretokenizer&) = delete;
    RegexPretokenizer& operator=(const RegexPretokenizer&) = delete;

    // Appends the pieces of `text` (valid UTF-8) to `pieces` as [begin, end) byte
    // offsets into `text`, in order, covering all of it.
    void split(std::string_view text, std::vector<std::pair<size_t, size_t>>& pieces) const;

    // The PCRE2 patterns in use (for messages and tests).
    [[nodiscard]] const std::vector<std::string>& patterns() const { return patterns_; }

private:
    struct Compiled;
    void compile(inlay_status on_error);
    std::vector<std::string> patterns_;
    std::vector<std::unique_ptr<Compiled>> compiled_;
};

// Translates a Hugging Face (Oniguruma-syntax) split regex to the PCRE2 dialect used
// here: `\s` and `\S`, outside or inside character classes, become the Unicode
// White_Space classes that Hugging Face's regex engine uses. Throws
// INLAY_ERR_UNSUPPORTED for constructs it cannot translate (`\S` inside a class).
std::string hf_regex_to_pcre2(std::string_view regex);

}  // namespace inlay
