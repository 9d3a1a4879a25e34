// Host-side helpers of the launchers (not part of the public header).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace inlay::cuda::detail {

// The status of the launch just enqueued (cudaGetLastError also clears a sticky error of
// an earlier call on this thread, which it then reports).
inline cudaError_t launch_status() {
    return cudaGetLastError();
}

inline bool aligned(const void* p, size_t alignment) {
    return reinterpret_cast<uintptr_t>(p) % alignment == 0;
}

inline unsigned blocks_for(int64_t n, int64_t per_block) {
    return static_cast<unsigned>((n + per_block - 1) / per_block);
}

constexpr int64_t kMaxGridX = 2147483647;
constexpr int64_t kMaxGridYZ = 65535;

}  // namespace inlay::cuda::detail
