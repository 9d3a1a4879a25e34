#include "app.h"

#include <chrono>
#include <cstdio>

#include <fmt/format.h>

namespace inlay::cli {
namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 if it is not one.
size_t utf8_sequence_length(std::string_view s, size_t i) {
    const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char c = b(i);
    size_t n = 0;
    uint32_t cp = 0;
    if (c < 0x80) return 1;
    if ((c & 0xe0) == 0xc0) {
        n = 2;
        cp = c & 0x1fu;
    } else if ((c & 0xf0) == 0xe0) {
        n = 3;
        cp = c & 0x0fu;
    } else if ((c & 0xf8) == 0xf0) {
        n = 4;
        cp = c & 0x07u;
    } else {
        return 0;
    }
    if (i + n > s.size()) return 0;
    for (size_t k = 1; k < n; ++k) {
        if ((b(i + k) & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (b(i + k) & 0x3fu);
    }
    static constexpr uint32_t min_for_length[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_for_length[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return n;
}

}  // namespace

double now_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string c_quoted(std::string_view bytes) {
    std::string out = "\"";
    for (size_t i = 0; i < bytes.size();) {
        const char c = bytes[i];
        const auto u = static_cast<unsigned char>(c);
        switch (c) {
            case '"': out += "\\\""; ++i; continue;
            case '\\': out += "\\\\"; ++i; continue;
            case '\n': out += "\\n"; ++i; continue;
            case '\r': out += "\\r"; ++i; continue;
            case '\t': out += "\\t"; ++i; continue;
            default: break;
        }
        if (u < 0x20 || u == 0x7f) {
            out += fmt::format("\\x{:02x}", u);
            ++i;
            continue;
        }
        const size_t n = utf8_sequence_length(bytes, i);
        if (n == 0) {
            out += fmt::format("\\x{:02x}", u);
            ++i;
            continue;
        }
        out.append(bytes.substr(i, n));
        i += n;
    }
    return out + "\"";
}

std::string_view stop_reason_name(inlay_stop_reason reason) {
    switch (reason) {
        case INLAY_STOP_NONE: return "none";
        case INLAY_STOP_EOG: return "eog";
        case INLAY_STOP_MAX_TOKENS: return "max_tokens";
        case INLAY_STOP_STRING: return "stop_string";
        case INLAY_STOP_CALLBACK: return "callback";
        case INLAY_STOP_CANCELLED: return "cancelled";
        case INLAY_STOP_CONTEXT_FULL: return "context_full";
    }
    return "unknown";
}

void write_stdout(std::string_view text) {
    if (!text.empty()) std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
}

}  // namespace inlay::cli
