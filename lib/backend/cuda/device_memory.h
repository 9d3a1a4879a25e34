// Owning handles of device and pinned host memory. Allocation failures are
// INLAY_ERR_OUT_OF_MEMORY naming what was being allocated, its size and what the device
// has free; frees never throw.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

namespace inlay::cuda_backend {

struct DeviceFree {
    void operator()(void* p) const noexcept;
};
struct PinnedFree {
    void operator()(void* p) const noexcept;
};

using DevicePtr = std::unique_ptr<void, DeviceFree>;
using PinnedPtr = std::unique_ptr<void, PinnedFree>;

// cudaMalloc of `bytes` (0 gives a null pointer); `what` names the allocation in errors.
DevicePtr device_alloc(size_t bytes, std::string_view what);
// cudaMallocHost (page-locked, so copies from it are truly asynchronous).
PinnedPtr pinned_alloc(size_t bytes, std::string_view what);

}  // namespace inlay::cuda_backend
