// Which kernel runs a model's attention on the CUDA backend, and the variants NVRTC
// compiles for shapes nvcc did not build.
//
// nvcc builds paged_attention_kernel for the common shapes (head_dim 64/128, GQA group
// 1/2/4/8, blocks of 16; attention_has_builtin). Other shapes the template takes (head_dim
// a multiple of 32 up to 256, group up to 32, power-of-two blocks: SmolLM2's group of 3,
// Qwen3-14B's 5) get the same template compiled at load time by NVRTC for the device's
// architecture, through the on-disk cache (kernels/cuda/nvrtc_cache.h), so a shape is
// compiled once per machine and driver, not once per process. The rest (head_dim 48, odd
// block sizes) run the generic kernel, whose shape is a run-time value. A variant that
// cannot be compiled or loaded (no libnvrtc, an architecture NVRTC does not know) is
// logged once and served by the generic kernel: never a failed step.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/cuda/inlay_cuda_kernels.h"
#include "kernels/cuda/nvrtc_cache.h"
#include "kernels/cuda/nvrtc_sources.h"

namespace inlay::cuda_backend {

enum class AttentionKernelSource {
    builtin,  // compiled by nvcc into the library
    nvrtc,    // the same template compiled at load time for this shape
    generic,  // the generic kernel (shape as run-time values)
    none,     // no kernel takes this shape
};
[[nodiscard]] const char* attention_kernel_source_name(AttentionKernelSource source);

// What serves a shape when everything works: built-in, else NVRTC where the template takes
// the shape, else generic where it serves, else none.
[[nodiscard]] AttentionKernelSource choose_attention_kernel(const cuda::nvrtc_sources::AttentionShape& shape);

// "sm_90" from a compute capability.
[[nodiscard]] std::string cuda_arch_name(int major, int minor);

// NVRTC's compilation of one attention variant for `arch` (CUBIN), through `cache`:
// the step of AttentionKernels that needs no GPU (tested on any machine with the toolkit).
[[nodiscard]] cuda::nvrtc::Result compile_attention_variant(const cuda::nvrtc_sources::AttentionShape& shape,
                                                            const std::string& arch, cuda::nvrtc::CompileCache& cache);

// The kernels of one device: variants compiled and loaded on first use of a shape, kept
// (and their libraries loaded) for the life of the backend. Thread-safe.
class AttentionKernels {
public:
    // arch: the device's ("sm_90"); cache_dir: empty for no disk cache; driver_version:
    // cudaDriverGetVersion's (part of the cache key).
    AttentionKernels(std::string arch, std::filesystem::path cache_dir, int driver_version);
    ~AttentionKernels();
    AttentionKernels(const AttentionKernels&) = delete;
    AttentionKernels& operator=(const AttentionKernels&) = delete;

    struct Choice {
        AttentionKernelSource source = AttentionKernelSource::none;
        // The `kernel` argument of attention_decode and _split: the loaded NVRTC variant,
        // or null (the launcher then takes the built-in or the generic kernel).
        const void* kernel = nullptr;
    };
    // The kernel for a shape; the first call of an NVRTC shape compiles (or reads the
    // cache) and loads it. The device must be current. may_load false: nullopt for a shape
    // not chosen yet instead (a step being recorded must not compile or load).
    std::optional<Choice> get(const cuda::nvrtc_sources::AttentionShape& shape, bool may_load = true);

    [[nodiscard]] cuda::nvrtc::CacheStats cache_stats() const { return cache_.stats(); }
    [[nodiscard]] const std::filesystem::path& cache_dir() const { return cache_.directory(); }

private:
    using Key = std::tuple<int, int, int, int>;
    std::string arch_;
    cuda::nvrtc::CompileCache cache_;
    std::mutex mutex_;
    std::map<Key, Choice> chosen_;
    std::vector<cudaLibrary_t> libraries_;
};

}  // namespace inlay::cuda_backend
