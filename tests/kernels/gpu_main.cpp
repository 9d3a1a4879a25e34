// Entry point of test_kernels_gpu: the kernels of kernels/cuda against float64 references.
//
// UNVERIFIED until it runs on a GPU: this executable compiles and links on machines
// without one (where it exits 77 = skipped), but its results mean something only where a
// CUDA device ran it. Do not read a skip as a pass.
#define CATCH_CONFIG_RUNNER
#include <cuda_runtime.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

#include "support/skip.h"

int main(int argc, char** argv) {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
        const char* why = err != cudaSuccess ? cudaGetErrorString(err) : "cudaGetDeviceCount found 0 devices";
        std::printf("no CUDA device: %s\n", why);
        // A missing device stays a skip under INLAY_TEST_NO_SKIP=1 (support/skip.h).
        inlay_test_log_skip(INLAY_BINARY_DIR, INLAY_SKIP_DEVICE, (std::string("no CUDA device: ") + why).c_str());
        return 77;
    }
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
        std::printf("CUDA device 0: %s (sm_%d%d, %d SMs)\n", prop.name, prop.major, prop.minor,
                    prop.multiProcessorCount);
    return Catch::Session().run(argc, argv);
}
