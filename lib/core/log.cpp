#include "core/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>

namespace inlay {
namespace {

struct Sink {
    std::mutex mutex;
    inlay_log_fn fn = nullptr;
    void* user = nullptr;
    std::atomic<int> min_level{INLAY_LOG_WARN};
};

Sink& sink() {
    static Sink s;
    return s;
}

const char* level_name(LogLevel level) {
    switch (level) {
        case LogLevel::debug: return "debug";
        case LogLevel::info: return "info";
        case LogLevel::warn: return "warn";
        case LogLevel::error: return "error";
    }
    return "?";
}

}  // namespace

void set_log_sink(inlay_log_fn fn, inlay_log_level min_level, void* user) {
    Sink& s = sink();
    std::lock_guard lock(s.mutex);
    s.fn = fn;
    s.user = user;
    s.min_level.store(static_cast<int>(min_level), std::memory_order_relaxed);
}

bool log_enabled(LogLevel level) noexcept {
    return static_cast<int>(level) >= sink().min_level.load(std::memory_order_relaxed);
}

void log_message(LogLevel level, std::string_view message) noexcept {
    Sink& s = sink();
    std::lock_guard lock(s.mutex);
    if (static_cast<int>(level) < s.min_level.load(std::memory_order_relaxed)) return;
    if (s.fn) {
        try {
            const std::string text(message);
            s.fn(static_cast<inlay_log_level>(level), text.c_str(), s.user);
        } catch (...) {
        }
        return;
    }
    std::fprintf(stderr, "inlay %s: %.*s\n", level_name(level), static_cast<int>(message.size()),
                 message.data());
}

}  // namespace inlay
