// test_kernels_gpu's device check: the kernels of kernels/cuda against float64
// references need a CUDA device. Without one, support/catch_main.cpp (the runner every
// test program shares) prints this reason and exits 77 (skipped); a missing device stays
// a skip under INLAY_TEST_NO_SKIP=1 (support/skip.h).
//
// UNVERIFIED until it runs on a GPU: this executable compiles and links on machines
// without one, but its results mean something only where a CUDA device ran it. Do not
// read a skip as a pass.
#include <cuda_runtime.h>

#include <cstdio>
#include <string>

const char* inlay_test_skip_reason() {
    static std::string why;
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
        why = std::string("no CUDA device: ") +
              (err != cudaSuccess ? cudaGetErrorString(err) : "cudaGetDeviceCount found 0 devices");
        return why.c_str();
    }
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
        std::printf("CUDA device 0: %s (sm_%d%d, %d SMs)\n", prop.name, prop.major, prop.minor,
                    prop.multiProcessorCount);
    return nullptr;
}
