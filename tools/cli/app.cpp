#include "app.h"

#include <chrono>
#include <cstdio>

#include <fmt/format.h>

#include "core/utf8.h"

namespace inlay::cli {

double now_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string c_quoted(std::string_view bytes) { return utf8::quoted(bytes); }

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
