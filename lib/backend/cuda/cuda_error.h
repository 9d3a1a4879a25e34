// CUDA and cuBLAS errors as inlay statuses. Every call into the CUDA runtime or cuBLAS
// goes through check_cuda / check_cublas, which name the call: no CUDA error ever
// aborts the host or passes silently.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "inlay/inlay.h"

namespace inlay::cuda_backend {

// The status a CUDA runtime error maps to: OUT_OF_MEMORY for allocation failures,
// UNSUPPORTED when there is no usable device or driver (or the code has no kernel for
// the device), INVALID_ARGUMENT for a bad device ordinal, INTERNAL otherwise.
inlay_status status_of(cudaError_t error) noexcept;
inlay_status status_of(cublasStatus_t status) noexcept;
const char* cublas_status_name(cublasStatus_t status) noexcept;

// Throws inlay::Error(status_of(error), "<call>: <CUDA's name and description>") unless
// error is cudaSuccess.
void check_cuda(cudaError_t error, const char* call);
void check_cublas(cublasStatus_t status, const char* call);

}  // namespace inlay::cuda_backend
