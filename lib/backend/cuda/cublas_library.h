// cuBLAS, loaded when the first CudaBackend is made rather than when libinlay is.
//
// Linking cuBLAS makes the dynamic loader map libcublas and libcublasLt into every host
// process, GPU or not, and cublasLt's initialisers touch its static data: about 140 MiB
// resident in a process that only ever runs on the CPU. Loading it with dlopen on demand
// costs nothing until a CUDA backend is asked for. It is loaded once per process and
// never unloaded (cuBLAS's own teardown at unload is not safe while handles may remain).
#pragma once

#include <cublas_v2.h>

#include <string>

namespace inlay::cuda_backend {

// The entry points the backend calls, with cuBLAS's own signatures (the _v2 symbols the
// cublas_v2.h macros name).
struct CublasApi {
    decltype(&cublasCreate_v2) create = nullptr;
    decltype(&cublasDestroy_v2) destroy = nullptr;
    decltype(&cublasSetStream_v2) set_stream = nullptr;
    decltype(&cublasSgemm_v2) sgemm = nullptr;
    // Spelt out: in C++ cublas_api.h overloads cublasGemmEx with an inline wrapper.
    cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                              const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                              cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
};

// The soname this build was compiled against ("libcublas.so.13").
const char* cublas_soname();

// Opens `library` (a soname or a path) and resolves every entry point of CublasApi.
// Returns false with `why` naming the library and what failed (dlopen's or dlsym's
// message). The handle is kept open for the life of the process.
bool load_cublas_api(const std::string& library, CublasApi& api, std::string& why);

// The process's cuBLAS, loaded on first use: cublas_soname(), then the same name in the
// toolkit's library folder this build was configured with. Throws
// Error(INLAY_ERR_UNSUPPORTED) naming what was tried when it cannot be loaded, so that
// device "auto" falls back to the CPU.
const CublasApi& cublas();

}  // namespace inlay::cuda_backend
