// UTF-8 helpers: strict validation (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF), stepping over one sequence at a time, and
// replacement of ill-formed bytes by U+FFFD following Unicode's "maximal subpart"
// practice (one U+FFFD per maximal ill-formed subpart), which is what the streaming
// detokenizer needs to stay byte-exact on valid text. All functions are pure and
// thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace inlay::utf8 {

inline constexpr std::string_view replacement_character = "\xEF\xBF\xBD";  // U+FFFD

enum class StepKind : uint8_t {
    valid,       // `length` bytes form one well-formed character
    invalid,     // `length` bytes (>= 1) form one maximal ill-formed subpart
    incomplete,  // the remaining `length` bytes start a character that the text cuts off
};

struct Step {
    StepKind kind;
    size_t length;
};

// Classifies the sequence that starts at text[pos] (pos < text.size()).
Step next_step(std::string_view text, size_t pos) noexcept;

// Byte offset of the first ill-formed byte (a truncated sequence at the end counts),
// or std::string_view::npos when `text` is valid UTF-8.
size_t find_invalid(std::string_view text) noexcept;

// Throws inlay::Error(INLAY_ERR_INVALID_UTF8) naming `what` and the first bad byte offset.
void require_valid(std::string_view text, std::string_view what = "text");

// `text` with every ill-formed subpart (and a truncated tail) replaced by U+FFFD.
std::string sanitize(std::string_view text);

// `bytes` as a double-quoted string for a message: C-style escapes for quotes,
// backslashes, \n \r \t and other control characters, every byte of ill-formed UTF-8 as
// \xNN; valid UTF-8 stays. The result is valid UTF-8 whatever the input. `quote` may be
// '\'' for messages that name keys and tensors in single quotes.
std::string quoted(std::string_view bytes, char quote = '"');

// `text` with every byte of ill-formed UTF-8 written as \xNN and everything else as is:
// what an error message holds when it quotes input. Valid UTF-8 comes back unchanged.
std::string escape_invalid(std::string_view text);

// Appends the UTF-8 encoding of `codepoint` (must be a scalar value <= U+10FFFF).
void append_codepoint(std::string& out, uint32_t codepoint);

// Decodes the well-formed character at text[pos] and advances pos past it. The caller
// guarantees that text is valid UTF-8 at pos.
uint32_t decode_valid(std::string_view text, size_t& pos) noexcept;

}  // namespace inlay::utf8
