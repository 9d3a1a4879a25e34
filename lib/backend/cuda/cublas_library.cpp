// cuBLAS loaded on demand: see cublas_library.h.
#include "backend/cuda/cublas_library.h"

#include <dlfcn.h>

#include <mutex>

#include "core/error.h"
#include "kernels/cuda/dynamic_library.h"

#define INLAY_STR2(x) #x
#define INLAY_STR(x) INLAY_STR2(x)

namespace inlay::cuda_backend {

const char* cublas_soname() { return "libcublas.so." INLAY_STR(CUBLAS_VER_MAJOR); }

bool load_cublas_api(const std::string& library, CublasApi& api, std::string& why) {
    void* handle = cuda::detail::open_library(library, why);
    if (!handle) return false;
    CublasApi a;
    const bool ok = cuda::detail::resolve_symbol(handle, "cublasCreate_v2", a.create, library, why) &&
                    cuda::detail::resolve_symbol(handle, "cublasDestroy_v2", a.destroy, library, why) &&
                    cuda::detail::resolve_symbol(handle, "cublasSetStream_v2", a.set_stream, library, why) &&
                    cuda::detail::resolve_symbol(handle, "cublasSgemm_v2", a.sgemm, library, why) &&
                    cuda::detail::resolve_symbol(handle, "cublasGemmEx", a.gemm_ex, library, why);
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
