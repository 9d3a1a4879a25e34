#include "backend/cuda/device_memory.h"

#include <cuda_runtime.h>

#include "core/error.h"

namespace inlay::cuda_backend {

void DeviceFree::operator()(void* p) const noexcept { (void)cudaFree(p); }
void PinnedFree::operator()(void* p) const noexcept { (void)cudaFreeHost(p); }
void EventDestroy::operator()(CUevent_st* e) const noexcept { (void)cudaEventDestroy(e); }

DevicePtr device_alloc(size_t bytes, std::string_view what) {
    if (bytes == 0) return DevicePtr{};
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, bytes);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();  // clear the sticky-free error so later calls see their own
        size_t free_bytes = 0, total_bytes = 0;
        (void)cudaMemGetInfo(&free_bytes, &total_bytes);
        if (e == cudaErrorMemoryAllocation)
            fail(INLAY_ERR_OUT_OF_MEMORY, "out of device memory for {}: {} bytes asked, {} of {} bytes free", what,
                 bytes, free_bytes, total_bytes);
        fail(INLAY_ERR_INTERNAL, "cudaMalloc of {} bytes for {}: {}", bytes, what, cudaGetErrorString(e));
    }
    return DevicePtr{p};
}

PinnedPtr pinned_alloc(size_t bytes, std::string_view what) {
    if (bytes == 0) return PinnedPtr{};
    void* p = nullptr;
    const cudaError_t e = cudaMallocHost(&p, bytes);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        fail(e == cudaErrorMemoryAllocation ? INLAY_ERR_OUT_OF_MEMORY : INLAY_ERR_INTERNAL,
             "cudaMallocHost of {} bytes for {}: {}", bytes, what, cudaGetErrorString(e));
    }
    return PinnedPtr{p};
}

EventPtr event_create(std::string_view what) {
    cudaEvent_t e = nullptr;
    const cudaError_t status = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    if (status != cudaSuccess) {
        (void)cudaGetLastError();
        fail(status == cudaErrorMemoryAllocation ? INLAY_ERR_OUT_OF_MEMORY : INLAY_ERR_INTERNAL,
             "cudaEventCreateWithFlags for {}: {}", what, cudaGetErrorString(status));
    }
    return EventPtr{e};
}

}  // namespace inlay::cuda_backend
