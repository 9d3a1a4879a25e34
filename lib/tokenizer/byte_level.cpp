#include "tokenizer/byte_level.h"

#include <array>

#include "core/utf8.h"

namespace inlay::byte_level {

namespace {

struct Tables {
    std::array<std::string, 256> byte_to_text;
    std::array<int16_t, 324> cp_to_byte{};  // the alphabet lies in U+0000..U+0143

    Tables() {
        cp_to_byte.fill(-1);
        uint32_t next_extra = 256;
        for (uint32_t b = 0; b < 256; ++b) {
            const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
            const uint32_t cp = printable ? b : next_extra++;
            utf8::append_codepoint(byte_to_text[b], cp);
            cp_to_byte[cp] = static_cast<int16_t>(b);
        }
    }
};

const Tables& tables() {
    static const Tables t;
    return t;
}

}  // namespace

const std::string& encode_byte(uint8_t byte) {
    return tables().byte_to_text[byte];
}

void encode_append(std::string& out, std::string_view bytes) {
    const Tables& t = tables();
    for (const char c : bytes) out += t.byte_to_text[static_cast<uint8_t>(c)];
}

int decode_codepoint(uint32_t cp) noexcept {
    const Tables& t = tables();
    return cp < t.cp_to_byte.size() ? t.cp_to_byte[cp] : -1;
}

std::string decode(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    size_t pos = 0;
    while (pos < text.size()) {
        const size_t start = pos;
        const uint32_t cp = utf8::decode_valid(text, pos);
        const int b = decode_codepoint(cp);
        if (b >= 0)
            out.push_back(static_cast<char>(b));
        else
            out.append(text.substr(start, pos - start));
    }
    return out;
}

}  // namespace inlay::byte_level
