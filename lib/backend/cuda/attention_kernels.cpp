// The CUDA backend's attention kernels per shape: see attention_kernels.h.
#include "backend/cuda/attention_kernels.h"

#include "core/log.h"

namespace inlay::cuda_backend {

const char* attention_kernel_source_name(AttentionKernelSource source) {
    switch (source) {
        case AttentionKernelSource::builtin:
            return "built-in";
        case AttentionKernelSource::nvrtc:
            return "NVRTC";
        case AttentionKernelSource::generic:
            return "generic";
        case AttentionKernelSource::none:
            return "none";
    }
    return "unknown";
}

AttentionKernelSource choose_attention_kernel(const cuda::nvrtc_sources::AttentionShape& s) {
    if (cuda::attention_has_builtin(s.head_dim, s.group, s.block_size, s.kv_type))
        return AttentionKernelSource::builtin;
    if (cuda::nvrtc_sources::attention_shape_supported(s)) return AttentionKernelSource::nvrtc;
    if (cuda::attention_supported(s.head_dim, s.group, s.block_size, s.kv_type)) return AttentionKernelSource::generic;
    return AttentionKernelSource::none;
}

std::string cuda_arch_name(int major, int minor) {
    return "sm_" + std::to_string(major) + std::to_string(minor);
}

cuda::nvrtc::Result compile_attention_variant(const cuda::nvrtc_sources::AttentionShape& shape, const std::string& arch,
                                              cuda::nvrtc::CompileCache& cache) {
    return cache.compile(cuda::nvrtc_sources::attention_request({shape}, arch, true));
}

AttentionKernels::AttentionKernels(std::string arch, std::filesystem::path cache_dir, int driver_version)
    : arch_(std::move(arch)), cache_(std::move(cache_dir), driver_version) {}

AttentionKernels::~AttentionKernels() {
    for (cudaLibrary_t lib : libraries_) (void)cudaLibraryUnload(lib);
}

std::optional<AttentionKernels::Choice> AttentionKernels::get(const cuda::nvrtc_sources::AttentionShape& s,
                                                              bool may_load) {
    const Key key{s.head_dim, s.group, s.block_size, static_cast<int>(s.kv_type)};
    std::lock_guard lock(mutex_);
    if (const auto it = chosen_.find(key); it != chosen_.end()) return it->second;
    if (!may_load) return std::nullopt;
    Choice choice{choose_attention_kernel(s), nullptr};
    if (choice.source == AttentionKernelSource::nvrtc) {
        // Any failure from here on leaves the shape to the generic kernel, said once.
        const auto fall_back = [&](const std::string& why) {
            log(LogLevel::warn,
                "CUDA attention for head_dim {}, group {}, blocks of {}: no {} kernel ({}); the generic "
                "kernel serves it",
                s.head_dim, s.group, s.block_size, arch_, why);
            choice = Choice{AttentionKernelSource::generic, nullptr};
        };
        const cuda::nvrtc::Result r = compile_attention_variant(s, arch_, cache_);
        if (!r.ok() || r.lowered_names.size() != 1) {
            fall_back(r.ok() ? "NVRTC returned no kernel name" : r.message);
        } else {
            cudaLibrary_t lib = nullptr;
            cudaKernel_t kernel = nullptr;
            cudaError_t e = cudaLibraryLoadData(&lib, r.image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
            if (e == cudaSuccess) {
                e = cudaLibraryGetKernel(&kernel, lib, r.lowered_names[0].c_str());
                if (e != cudaSuccess) (void)cudaLibraryUnload(lib);
            }
            if (e != cudaSuccess) {
                (void)cudaGetLastError();
                fall_back(std::string(cudaGetErrorName(e)) + " loading the NVRTC image: " + cudaGetErrorString(e));
            } else {
                libraries_.push_back(lib);
                choice.kernel = reinterpret_cast<const void*>(kernel);
                log(LogLevel::info,
                    "CUDA attention for head_dim {}, group {}, blocks of {}: compiled for {} by NVRTC{}", s.head_dim,
                    s.group, s.block_size, arch_,
                    cache_.enabled() ? " (cached in " + cache_.directory().string() + ")" : "");
            }
        }
    }
    chosen_.emplace(key, choice);
    return choice;
}

}  // namespace inlay::cuda_backend
