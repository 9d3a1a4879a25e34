// Shared plumbing of the extern "C" bodies: every entry point runs its body through
// guarded(), which turns any exception into an inlay_status and keeps the message
// in thread-local storage for inlay_last_error().
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
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

// The body of every *_params_init_size: the library's defaults (zeros, then `fill`)
// written into the caller's first `size` bytes, zeros past the library's struct, and
// struct_size = size (the caller's struct as it was compiled).
template <class Params, class Fill>
void init_sized(Params* user, size_t size, Fill fill) {
    if (!user || size < sizeof(size_t)) return;
    Params p;
    std::memset(&p, 0, sizeof p);
    fill(p);
    p.struct_size = size;
    std::memcpy(user, &p, std::min(size, sizeof p));
    if (size > sizeof p) std::memset(reinterpret_cast<unsigned char*>(user) + sizeof p, 0, size - sizeof p);
}

// The defaults of each params struct: its *_params_init() (inlay.h makes that pass the
// struct's size).
inline void init_params(inlay_model_params* p) { inlay_model_params_init(p); }
inline void init_params(inlay_session_params* p) { inlay_session_params_init(p); }
inline void init_params(inlay_generate_params* p) { inlay_generate_params_init(p); }
inline void init_params(inlay_chat_params* p) { inlay_chat_params_init(p); }
inline void init_params(inlay_kv_pool_params* p) { inlay_kv_pool_params_init(p); }

// Reads a params struct passed by the caller (NULL = the defaults), following docs/ABI.md:
// the first min(struct_size, sizeof(Params)) bytes are the caller's, the rest keeps the
// defaults (a caller built against an older, shorter struct). A struct_size larger than
// this library's struct is accepted only if the bytes it does not know are all zero: a
// non-zero byte there is a field this library lacks, which must not be silently ignored
// (INLAY_ERR_INVALID_ARGUMENT). The copy has struct_size = sizeof(Params).
template <class Params>
Params read_params(const Params* user, const char* function, const char* name) {
    Params p;
    init_params(&p);
    if (user) {
        require_params(user, function, name);
        const size_t size = user->struct_size;
        std::memcpy(&p, user, std::min(size, sizeof(Params)));
        const auto* bytes = reinterpret_cast<const unsigned char*>(user);
        for (size_t i = sizeof(Params); i < size; ++i) {
            if (bytes[i] != 0)
                fail(INLAY_ERR_INVALID_ARGUMENT,
                     "{}: {}->struct_size is {} but this library's {} has {} bytes, and byte {} after them is not "
                     "zero: the caller sets a field this library does not have (it needs a newer libinlay)",
                     function, name, size, name, sizeof(Params), i);
        }
    }
    p.struct_size = sizeof(Params);
    return p;
}

// Writes an out-struct (model info, timings, metrics) as docs/ABI.md says: `value`'s bytes
// up to the caller's struct_size (checked by require_params), never beyond; a caller's
// struct longer than this library's gets zeros in the fields this library does not know.
// struct_size itself keeps the caller's value.
template <class Out>
void write_out(Out* user, const Out& value) {
    const size_t size = user->struct_size;
    Out copy = value;
    copy.struct_size = size;
    std::memcpy(user, &copy, std::min(size, sizeof(Out)));
    if (size > sizeof(Out)) std::memset(reinterpret_cast<unsigned char*>(user) + sizeof(Out), 0, size - sizeof(Out));
}

}  // namespace inlay::capi
