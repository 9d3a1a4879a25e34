// Owning handles of device and pinned host memory. Allocation failures are
// INLAY_ERR_OUT_OF_MEMORY naming what was being allocated, its size and what the device
// has free; frees never throw.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

struct CUevent_st;  // cudaEvent_t's target

namespace inlay::cuda_backend {

struct DeviceFree {
    void operator()(void* p) const noexcept;
};
struct PinnedFree {
    void operator()(void* p) const noexcept;
};

struct EventDestroy {
    void operator()(CUevent_st* e) const noexcept;
};

using DevicePtr = std::unique_ptr<void, DeviceFree>;
using PinnedPtr = std::unique_ptr<void, PinnedFree>;
using EventPtr = std::unique_ptr<CUevent_st, EventDestroy>;

// cudaMalloc of `bytes` (0 gives a null pointer); `what` names the allocation in errors.
DevicePtr device_alloc(size_t bytes, std::string_view what);
// cudaMallocHost (page-locked, so copies from it are truly asynchronous).
PinnedPtr pinned_alloc(size_t bytes, std::string_view what);
// An event without timing, recorded where the host must later know that the stream got
// past a point (a staging buffer consumed, ids copied).
EventPtr event_create(std::string_view what);

}  // namespace inlay::cuda_backend
