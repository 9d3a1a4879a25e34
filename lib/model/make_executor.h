// Device choice: which backend runs a model. `automatic` takes a usable GPU when the
// build has a GPU backend and one is present, else the CPU, and logs which it took.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "io/weight_source.h"
#include "model/decoder_spec.h"
#include "model/executor.h"

namespace inlay {

enum class DeviceKind { automatic, cpu, cuda };

struct DeviceRequest {
    DeviceKind kind = DeviceKind::automatic;
    int index = 0;      // which GPU (cuda)
    int n_threads = 0;  // CPU threads (the CPU backend; a GPU backend's host work); 0: all cores
    // Where a GPU backend keeps the kernels it compiles at load time between processes;
    // empty: nowhere. nullopt: kernel_cache_dir() of the environment.
    std::optional<std::filesystem::path> kernel_cache_dir;
    // Decode steps on a GPU launched as CUDA graphs; nullopt: yes unless the environment
    // has INLAY_CUDA_GRAPHS=0.
    std::optional<bool> cuda_graphs;
};

// What make_cuda_executor passes to the CUDA backend.
struct CudaExecutorOptions {
    std::filesystem::path kernel_cache_dir;  // empty: no disk cache of NVRTC kernels
    bool graphs = true;                      // decode steps as CUDA graphs
};

// The kernel cache's directory from the environment's values (passed in, so that this is
// testable): $INLAY_KERNEL_CACHE_DIR when set (empty turns the cache off), else
// $XDG_CACHE_HOME/inlay/nvrtc when that is an absolute path, else $HOME/.cache/inlay/nvrtc,
// else none.
std::filesystem::path kernel_cache_dir(const char* inlay_kernel_cache_dir, const char* xdg_cache_home,
                                       const char* home);

// "auto", "cpu", "cuda" or "cuda:N"; INLAY_ERR_INVALID_ARGUMENT otherwise.
DeviceRequest parse_device(std::string_view text);

// Whether this build has the CUDA backend (the toolkit was found at build time).
bool cuda_backend_built();

// The executor for `request`: INLAY_ERR_UNSUPPORTED when the device kind is not built
// into this library or no such device is usable (the message says which and why).
std::unique_ptr<Executor> make_executor(const DeviceRequest& request, const DecoderSpec& spec,
                                        const WeightSource& source);

// The CPU backend's executor (cpu_executor.cpp).
std::unique_ptr<Executor> make_cpu_executor(int n_threads, const DecoderSpec& spec, const WeightSource& source);

// The CUDA backend's (cuda/cuda_executor.cpp; only where cuda_backend_built()).
std::unique_ptr<Executor> make_cuda_executor(int device_index, const CudaExecutorOptions& options,
                                             const DecoderSpec& spec, const WeightSource& source);
// Usable CUDA devices (0 without a driver or device; CUDA's reason in *why); 0 where
// the backend is not built.
int cuda_device_count(std::string* why);

}  // namespace inlay
