// Version, status names, the per-thread last error and the log sink.
#include <string>

#include "capi/capi_common.h"
#include "core/log.h"
#include "core/utf8.h"

namespace inlay::capi {
namespace {
thread_local std::string t_last_error;
}

inlay_status set_error(inlay_status status, std::string message) noexcept {
    try {
        t_last_error = fmt::format("{}: {}", status_name(status), utf8::escape_invalid(message));
    } catch (...) {
        t_last_error.clear();
    }
    log(LogLevel::debug, "{}", t_last_error);
    return status;
}

const char* last_error() noexcept { return t_last_error.c_str(); }

}  // namespace inlay::capi

extern "C" {

INLAY_API int inlay_abi_version(void) { return INLAY_ABI_VERSION; }
INLAY_API const char* inlay_version(void) { return INLAY_VERSION_STRING; }
INLAY_API const char* inlay_status_name(inlay_status status) { return inlay::status_name(status); }
INLAY_API const char* inlay_last_error(void) { return inlay::capi::last_error(); }

INLAY_API void inlay_set_log_sink(inlay_log_fn sink, inlay_log_level min_level, void* user) {
    if (min_level < INLAY_LOG_DEBUG || min_level > INLAY_LOG_NONE) min_level = INLAY_LOG_WARN;
    inlay::set_log_sink(sink, min_level, user);
}

}  // extern "C"
