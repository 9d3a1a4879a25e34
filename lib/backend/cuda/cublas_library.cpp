// cuBLAS loaded on demand: see cublas_library.h.
#include "backend/cuda/cublas_library.h"

#include <dlfcn.h>

#include <mutex>

#include "core/error.h"

#define INLAY_STR2(x) #x
#define INLAY_STR(x) INLAY_STR2(x)

namespace inlay::cuda_backend {
namespace {

template <class F>
bool resolve(void* handle, const char* symbol, F& out, const std::string& library, std::string& why) {
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

}  // namespace

const char* cublas_soname() { return "libcublas.so." INLAY_STR(CUBLAS_VER_MAJOR); }

bool load_cublas_api(const std::string& library, CublasApi& api, std::string& why) {
    void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char* e = dlerror();
        why = e ? std::string(e) : library + ": dlopen failed";
        return false;
    }
    CublasApi a;
    const bool ok = resolve(handle, "cublasCreate_v2", a.create, library, why) &&
                    resolve(handle, "cublasDestroy_v2", a.destroy, library, why) &&
                    resolve(handle, "cublasSetStream_v2", a.set_stream, library, why) &&
                    resolve(handle, "cublasSgemm_v2", a.sgemm, library, why) &&
                    resolve(handle, "cublasGemmEx", a.gemm_ex, library, why);
    if (!ok) {
        dlclose(handle);  // nothing of it was used
        return false;
    }
    api = a;
    return true;
}

const CublasApi& cublas() {
    static std::once_flag once;
    static CublasApi api;
    static std::string failure;
    std::call_once(once, [] {
        std::string why;
        if (load_cublas_api(cublas_soname(), api, why)) return;
        std::string tried = why;
#ifdef INLAY_CUDA_LIBRARY_DIR
        const std::string in_toolkit = std::string(INLAY_CUDA_LIBRARY_DIR) + "/" + cublas_soname();
        if (load_cublas_api(in_toolkit, api, why)) return;
        tried += "; " + why;
#endif
        failure = tried;
    });
    if (!api.create) fail(INLAY_ERR_UNSUPPORTED, "cuBLAS could not be loaded: {}", failure);
    return api;
}

}  // namespace inlay::cuda_backend
