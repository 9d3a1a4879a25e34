// A shared library opened at run time and its entry points looked up (dlopen/dlsym): how
// the CUDA backend uses NVRTC and cuBLAS without linking them, so that libinlay loads and
// runs on the CPU where they are absent.
#pragma once

#include <dlfcn.h>

#include <string>

namespace inlay::cuda::detail {

// The library at `path` (a soname the loader searches for, or a full path), opened with
// RTLD_NOW | RTLD_LOCAL; null when it cannot be, with the loader's reason in `why`.
inline void* open_library(const std::string& path, std::string& why) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char* e = dlerror();
        why = e ? std::string(e) : path + ": dlopen failed";
    }
    return handle;
}

// `out` = the library's `symbol` as F; false (and `why` naming both) when it has none.
template <class F>
bool resolve_symbol(void* handle, const char* symbol, F& out, const std::string& library, std::string& why) {
    dlerror();  // clear any earlier error
    void* p = dlsym(handle, symbol);
    if (!p) {
        const char* e = dlerror();
        why = library + " has no " + symbol + (e ? std::string(" (") + e + ")" : std::string());
        return false;
    }
    out = reinterpret_cast<F>(p);
    return true;
}

}  // namespace inlay::cuda::detail
