// Logging: formatted messages go to one process-wide sink, which the C ABI lets the
// host replace (inlay_set_log_sink). The default sink prints WARN and above to stderr.
#pragma once

#include <string_view>

#include <fmt/format.h>

#include "inlay/inlay.h"

namespace inlay {

enum class LogLevel { debug = INLAY_LOG_DEBUG, info = INLAY_LOG_INFO, warn = INLAY_LOG_WARN, error = INLAY_LOG_ERROR };

// Replaces the sink (nullptr = default). Thread-safe.
void set_log_sink(inlay_log_fn sink, inlay_log_level min_level, void* user);
// True when messages of this level reach the sink (lets callers skip formatting).
bool log_enabled(LogLevel level) noexcept;
// Delivers one message. Never throws.
void log_message(LogLevel level, std::string_view message) noexcept;

template <class... Args>
void log(LogLevel level, fmt::format_string<Args...> format, Args&&... args) noexcept {
    if (!log_enabled(level)) return;
    try {
        log_message(level, fmt::format(format, std::forward<Args>(args)...));
    } catch (...) {  // formatting failure (out of memory): drop the message
    }
}

}  // namespace inlay
