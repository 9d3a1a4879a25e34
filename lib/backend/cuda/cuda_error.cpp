#include "backend/cuda/cuda_error.h"

#include "core/error.h"

namespace inlay::cuda_backend {

inlay_status status_of(cudaError_t error) noexcept {
    switch (error) {
        case cudaSuccess: return INLAY_OK;
        case cudaErrorMemoryAllocation: return INLAY_ERR_OUT_OF_MEMORY;
        case cudaErrorNoDevice:
        case cudaErrorInsufficientDriver:
        case cudaErrorInitializationError:
        case cudaErrorNoKernelImageForDevice:
        case cudaErrorUnsupportedPtxVersion:
        case cudaErrorNotSupported:
        case cudaErrorDevicesUnavailable:
        case cudaErrorSystemDriverMismatch:
        case cudaErrorCompatNotSupportedOnDevice: return INLAY_ERR_UNSUPPORTED;
        case cudaErrorInvalidDevice: return INLAY_ERR_INVALID_ARGUMENT;
        default: return INLAY_ERR_INTERNAL;
    }
}

inlay_status status_of(cublasStatus_t status) noexcept {
    switch (status) {
        case CUBLAS_STATUS_SUCCESS: return INLAY_OK;
        case CUBLAS_STATUS_ALLOC_FAILED: return INLAY_ERR_OUT_OF_MEMORY;
        case CUBLAS_STATUS_NOT_INITIALIZED:
        case CUBLAS_STATUS_ARCH_MISMATCH:
        case CUBLAS_STATUS_NOT_SUPPORTED: return INLAY_ERR_UNSUPPORTED;
        default: return INLAY_ERR_INTERNAL;
    }
}

const char* cublas_status_name(cublasStatus_t status) noexcept {
    switch (status) {
        case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
        case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
        case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
        case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
        case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
        case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
        case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
        case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
        case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
        case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    }
    return "CUBLAS_STATUS_UNKNOWN";
}

void check_cuda(cudaError_t error, const char* call) {
    if (error == cudaSuccess) return;
    fail(status_of(error), "{}: {} ({})", call, cudaGetErrorName(error), cudaGetErrorString(error));
}

void check_cublas(cublasStatus_t status, const char* call) {
    if (status == CUBLAS_STATUS_SUCCESS) return;
    fail(status_of(status), "{}: {}", call, cublas_status_name(status));
}

}  // namespace inlay::cuda_backend
