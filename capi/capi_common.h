// Shared plumbing of the extern "C" bodies: every entry point runs its body through
// guarded(), which turns any exception into an inlay_status and keeps the message
// in thread-local storage for inlay_last_error().
#pragma once

#include <new>
#include <string>

#include "core/error.h"
#include "inlay/inlay.h"

namespace inlay::capi {

// Records `message` as this thread's last error and returns `status`.
inlay_status set_error(inlay_status status, std::string message) noexcept;
// Clears this thread's last error (successful calls do not clear it: see inlay.h).
const char* last_error() noexcept;

template <class Body>
inlay_status guarded(const char* function, Body&& body) noexcept {
    try {
        body();
        return INLAY_OK;
    } catch (const Error& e) {
        return set_error(e.status(), e.what());
    } catch (const std::bad_alloc&) {
        return set_error(INLAY_ERR_OUT_OF_MEMORY, std::string(function) + ": out of memory");
    } catch (const std::exception& e) {
        return set_error(INLAY_ERR_INTERNAL, std::string(function) + ": " + e.what());
    } catch (...) {
        return set_error(INLAY_ERR_INTERNAL, std::string(function) + ": unknown exception");
    }
}

// Throws INLAY_ERR_INVALID_ARGUMENT naming the argument when `ok` is false.
inline void require_arg(bool ok, const char* function, const char* what) {
    if (!ok) fail(INLAY_ERR_INVALID_ARGUMENT, "{}: {}", function, what);
}

// Checks the struct_size of a params struct passed by the caller.
template <class Params>
void require_params(const Params* p, const char* function, const char* name) {
    if (p && ((p->struct_size) < sizeof(size_t) || (p->struct_size) > (1u << 16)))
        fail(INLAY_ERR_INVALID_ARGUMENT, "{}: {}->struct_size is {}; initialise it with {}_init()", function, name,
             p->struct_size, name);
}

}  // namespace inlay::capi
