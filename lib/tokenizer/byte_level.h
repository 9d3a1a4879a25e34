// GPT-2's byte-level alphabet: every byte maps to one printable code point, so that
// byte-level BPE vocabularies can store arbitrary bytes as text. Bytes 0x21..0x7E,
// 0xA1..0xAC and 0xAE..0xFF map to themselves; the other 68 bytes map, in increasing
// byte order, to U+0100, U+0101, ... (so the space 0x20 becomes U+0120 'Ġ').
// Tables are built once; all functions are thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace inlay::byte_level {

// UTF-8 text of the code point that stands for `byte`.
const std::string& encode_byte(uint8_t byte);

// Appends the byte-level encoding of `bytes` (each byte becomes one code point).
void encode_append(std::string& out, std::string_view bytes);

// The byte that code point `cp` stands for, or -1 when `cp` is not in the alphabet.
int decode_codepoint(uint32_t cp) noexcept;

// Maps byte-level text back to raw bytes. Code points outside the alphabet (as in
// text that was never byte-level encoded) are copied through as UTF-8. `text` must
// be valid UTF-8.
std::string decode(std::string_view text);

}  // namespace inlay::byte_level
