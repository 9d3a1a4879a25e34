// Device memory and checks for the GPU kernel tests.
#pragma once

#include <cuda_runtime.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#define CUDA_REQUIRE(expr)                                                                                         \
    do {                                                                                                           \
        const cudaError_t cuda_require_err_ = (expr);                                                              \
        INFO(#expr << ": " << cudaGetErrorName(cuda_require_err_) << " (" << cudaGetErrorString(cuda_require_err_) \
                   << ")");                                                                                        \
        REQUIRE(cuda_require_err_ == cudaSuccess);                                                                 \
    } while (0)

namespace inlay::cuda::test {

// Device bytes, freed on scope exit.
class DeviceBytes {
public:
    DeviceBytes() = default;
    explicit DeviceBytes(size_t bytes) : bytes_(bytes) { CUDA_REQUIRE(cudaMalloc(&ptr_, bytes ? bytes : 1)); }
    DeviceBytes(const DeviceBytes&) = delete;
    DeviceBytes& operator=(const DeviceBytes&) = delete;
    DeviceBytes(DeviceBytes&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; }
    DeviceBytes& operator=(DeviceBytes&& o) noexcept {
        std::swap(ptr_, o.ptr_);
        std::swap(bytes_, o.bytes_);
        return *this;
    }
    ~DeviceBytes() {
        if (ptr_) cudaFree(ptr_);
    }
    [[nodiscard]] void* get() const { return ptr_; }
    template <class T>
    [[nodiscard]] T* as() const {
        return static_cast<T*>(ptr_);
    }
    [[nodiscard]] size_t size() const { return bytes_; }

    // Fills every byte with 0xff: NaN as f32 and as f16.
    void poison() const { CUDA_REQUIRE(cudaMemset(ptr_, 0xff, bytes_)); }

private:
    void* ptr_ = nullptr;
    size_t bytes_ = 0;
};

template <class T>
DeviceBytes upload(const std::vector<T>& host) {
    DeviceBytes d(host.size() * sizeof(T));
    CUDA_REQUIRE(cudaMemcpy(d.get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}

template <class T>
std::vector<T> download(const DeviceBytes& d) {
    std::vector<T> host(d.size() / sizeof(T));
    CUDA_REQUIRE(cudaMemcpy(host.data(), d.get(), host.size() * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
}

// Waits for the launches and checks they ran without error.
inline void sync_ok() {
    CUDA_REQUIRE(cudaGetLastError());
    CUDA_REQUIRE(cudaDeviceSynchronize());
}

inline bool is_poison(float x) {
    uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    return bits == 0xffffffffu;
}

}  // namespace inlay::cuda::test
