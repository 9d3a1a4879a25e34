#include "core/utf8.h"

#include "core/error.h"

namespace inlay {

size_t utf8_sequence_length(unsigned char c) {
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) return 2;
    if (c >= 0xe0 && c <= 0xef) return 3;
    if (c >= 0xf0 && c <= 0xf4) return 4;
    return 0;
}

std::optional<size_t> find_invalid_utf8(std::string_view text) {
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const size_t n = text.size();
    size_t i = 0;
    while (i < n) {
        const unsigned char c = s[i];
        const size_t len = utf8_sequence_length(c);
        if (len == 0 || i + len > n) return i;
        if (len > 1) {
            // Second-byte ranges exclude overlong forms, surrogates and > U+10FFFF.
            const unsigned char c1 = s[i + 1];
            unsigned char lo = 0x80, hi = 0xbf;
            if (c == 0xe0) lo = 0xa0;
            else if (c == 0xed) hi = 0x9f;
            else if (c == 0xf0) lo = 0x90;
            else if (c == 0xf4) hi = 0x8f;
            if (c1 < lo || c1 > hi) return i;
            for (size_t k = 2; k < len; ++k)
                if ((s[i + k] & 0xc0) != 0x80) return i;
        }
        i += len;
    }
    return std::nullopt;
}

void require_valid_utf8(std::string_view text, std::string_view what) {
    if (auto bad = find_invalid_utf8(text))
        fail(INLAY_ERR_INVALID_UTF8, "{} is not valid UTF-8 (byte {} at offset {})", what,
             static_cast<unsigned>(static_cast<unsigned char>(text[*bad])), *bad);
}

}  // namespace inlay
