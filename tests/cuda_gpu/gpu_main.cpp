// The backend conformance suite (tests/backend/test_conformance.cpp, test_kv_blocks.cpp)
// compiled for the CUDA backend: every op on the GPU against the same float64
// references. Needs a CUDA device: without one the program says why and exits 77
// (skipped). UNVERIFIED until it has run on a GPU (scripts/gpu-check.sh runs it).
#include <string>

#include "backend/cuda/cuda_backend.h"

const char* inlay_test_skip_reason() {
    static std::string why;
    if (inlay::CudaBackend::device_count(&why) > 0) return nullptr;
    why = "no CUDA device: " + why;
    return why.c_str();
}
