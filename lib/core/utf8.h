// UTF-8 validation (RFC 3629: no overlong forms, no surrogates, at most U+10FFFF).
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace inlay {

// Offset of the first byte that is not part of a valid UTF-8 sequence; nullopt if valid.
std::optional<size_t> find_invalid_utf8(std::string_view text);
// Throws INLAY_ERR_INVALID_UTF8 naming `what` and the offset.
void require_valid_utf8(std::string_view text, std::string_view what);
// Length of the UTF-8 sequence introduced by lead byte c (1-4), or 0 if c cannot start one.
size_t utf8_sequence_length(unsigned char c);

}  // namespace inlay
