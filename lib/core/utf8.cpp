#include "core/utf8.h"

#include "core/error.h"

namespace inlay::utf8 {

namespace {

// Allowed range of the second byte for each lead byte (Unicode Table 3-7); the third
// and fourth bytes are always 0x80..0xBF.
struct LeadInfo {
    uint8_t length;  // 0: not a lead byte
    uint8_t lo;
    uint8_t hi;
};

constexpr LeadInfo lead_info(uint8_t b) noexcept {
    if (b < 0x80) return {1, 0, 0};
    if (b < 0xC2) return {0, 0, 0};
    if (b < 0xE0) return {2, 0x80, 0xBF};
    if (b == 0xE0) return {3, 0xA0, 0xBF};
    if (b == 0xED) return {3, 0x80, 0x9F};
    if (b < 0xF0) return {3, 0x80, 0xBF};
    if (b == 0xF0) return {4, 0x90, 0xBF};
    if (b < 0xF4) return {4, 0x80, 0xBF};
    if (b == 0xF4) return {4, 0x80, 0x8F};
    return {0, 0, 0};
}

}  // namespace

Step next_step(std::string_view text, size_t pos) noexcept {
    const auto lead = static_cast<uint8_t>(text[pos]);
    const LeadInfo info = lead_info(lead);
    if (info.length == 0) return {StepKind::invalid, 1};
    if (info.length == 1) return {StepKind::valid, 1};
    for (size_t k = 1; k < info.length; ++k) {
        if (pos + k >= text.size()) return {StepKind::incomplete, k};
        const auto b = static_cast<uint8_t>(text[pos + k]);
        const uint8_t lo = k == 1 ? info.lo : 0x80;
        const uint8_t hi = k == 1 ? info.hi : 0xBF;
        if (b < lo || b > hi) return {StepKind::invalid, k};
    }
    return {StepKind::valid, info.length};
}

size_t find_invalid(std::string_view text) noexcept {
    size_t pos = 0;
    while (pos < text.size()) {
        const auto b = static_cast<uint8_t>(text[pos]);
        if (b < 0x80) {  // fast path for ASCII
            ++pos;
            continue;
        }
        const Step step = next_step(text, pos);
        if (step.kind != StepKind::valid) return pos;
        pos += step.length;
    }
    return std::string_view::npos;
}

void require_valid(std::string_view text, std::string_view what) {
    const size_t bad = find_invalid(text);
    if (bad != std::string_view::npos) {
        fail(INLAY_ERR_INVALID_UTF8, "{} is not valid UTF-8: ill-formed sequence at byte offset {} (byte 0x{:02X})",
             what, bad, static_cast<uint8_t>(text[bad]));
    }
}

std::string quoted(std::string_view bytes, char quote) {
    std::string out(1, quote);
    size_t pos = 0;
    while (pos < bytes.size()) {
        const char c = bytes[pos];
        const auto u = static_cast<unsigned char>(c);
        if (c == quote) {
            out += '\\';
            out += c;
            ++pos;
            continue;
        }
        switch (c) {
            case '\\': out += "\\\\"; ++pos; continue;
            case '\n': out += "\\n"; ++pos; continue;
            case '\r': out += "\\r"; ++pos; continue;
            case '\t': out += "\\t"; ++pos; continue;
            default: break;
        }
        if (u < 0x20 || u == 0x7f) {
            out += fmt::format("\\x{:02x}", u);
            ++pos;
            continue;
        }
        const Step step = next_step(bytes, pos);
        if (step.kind == StepKind::valid) {
            out.append(bytes.substr(pos, step.length));
        } else {
            for (size_t k = 0; k < step.length; ++k)
                out += fmt::format("\\x{:02x}", static_cast<unsigned char>(bytes[pos + k]));
        }
        pos += step.length;
    }
    return out + quote;
}

std::string escape_invalid(std::string_view text) {
    if (find_invalid(text) == std::string_view::npos) return std::string(text);
    std::string out;
    size_t pos = 0;
    while (pos < text.size()) {
        const Step step = next_step(text, pos);
        if (step.kind == StepKind::valid) {
            out.append(text.substr(pos, step.length));
        } else {
            for (size_t k = 0; k < step.length; ++k)
                out += fmt::format("\\x{:02x}", static_cast<unsigned char>(text[pos + k]));
        }
        pos += step.length;
    }
    return out;
}

std::string sanitize(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    size_t pos = 0;
    while (pos < text.size()) {
        const Step step = next_step(text, pos);
        if (step.kind == StepKind::valid)
            out.append(text.substr(pos, step.length));
        else
            out.append(replacement_character);
        pos += step.length;
    }
    return out;
}

void append_codepoint(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

uint32_t decode_valid(std::string_view text, size_t& pos) noexcept {
    const auto b0 = static_cast<uint8_t>(text[pos]);
    auto cont = [&](size_t k) { return static_cast<uint32_t>(static_cast<uint8_t>(text[pos + k]) & 0x3F); };
    uint32_t cp;
    size_t n;
    if (b0 < 0x80) {
        cp = b0;
        n = 1;
    } else if (b0 < 0xE0) {
        cp = ((b0 & 0x1Fu) << 6) | cont(1);
        n = 2;
    } else if (b0 < 0xF0) {
        cp = ((b0 & 0x0Fu) << 12) | (cont(1) << 6) | cont(2);
        n = 3;
    } else {
        cp = ((b0 & 0x07u) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3);
        n = 4;
    }
    pos += n;
    return cp;
}

}  // namespace inlay::utf8
