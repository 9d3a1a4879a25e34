// Unicode Normalization Form C (canonical decomposition, canonical ordering, canonical
// composition; UAX #15), which the Qwen2/Qwen3 tokenizer.json normalizer applies
// before splitting. Tables are generated from Python's unicodedata by
// gen_unicode_nfc.py (unicode_version() says which Unicode version); Hangul syllables
// are handled algorithmically. All functions are pure and thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace inlay::unicode {

// True when `text` is certainly in NFC without looking further (every code point is
// below U+0300, the first combining mark). False means "maybe not": call nfc().
bool is_nfc_quick(std::string_view text) noexcept;

// `text` (valid UTF-8) in NFC.
std::string nfc(std::string_view text);

// The Unicode version of the tables, e.g. "14.0.0".
const char* unicode_version() noexcept;

}  // namespace inlay::unicode
