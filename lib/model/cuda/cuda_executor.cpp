// The CUDA backend's decoder and executor (built when the CUDA toolkit is found).
#include "backend/cuda/cuda_backend.h"
#include "core/error.h"
#include "core/log.h"
#include "model/backend_executor_impl.h"
#include "model/decoder_impl.h"
#include "model/make_executor.h"

namespace inlay {

template class Decoder<CudaBackend>;
template class BackendExecutor<CudaBackend>;

int cuda_device_count(std::string* why) { return CudaBackend::device_count(why); }

std::unique_ptr<Executor> make_cuda_executor(int device_index, const CudaExecutorOptions& options,
                                             const DecoderSpec& spec, const WeightSource& source) {
    // Checked before any weight is uploaded, so that `auto` can fall back to the CPU.
    std::string why;
    const int n_devices = CudaBackend::device_count(&why);
    if (device_index < 0 || device_index >= n_devices)
        fail(INLAY_ERR_UNSUPPORTED, "no CUDA device {}: {} usable{}{}", device_index, n_devices, why.empty() ? "" : "; ",
             why);
    const int64_t group = spec.n_kv_heads > 0 ? spec.n_heads / spec.n_kv_heads : 0;
    if (!cuda::attention_supported(static_cast<int32_t>(spec.head_dim), static_cast<int32_t>(group),
                                   static_cast<int32_t>(BackendExecutor<CudaBackend>::kBlockSize), cuda::KvType::f16))
        fail(INLAY_ERR_UNSUPPORTED, "device cuda:{}: no attention kernel for head_dim {} with {} query heads per KV head",
             device_index, spec.head_dim, group);
    auto backend =
        std::make_unique<CudaBackend>(device_index, CudaBackend::Options{options.kernel_cache_dir, options.graphs});
    if (!options.graphs) log(LogLevel::info, "device cuda:{}: CUDA graphs off", device_index);
    // The model's attention kernel now, not in its first step: an NVRTC variant takes
    // seconds to compile where the cache does not hold it yet.
    const auto kernel =
        backend->attention_kernel(spec.head_dim, group, BackendExecutor<CudaBackend>::kBlockSize, DType::F16);
    log(LogLevel::info, "device cuda:{}: attention for head_dim {}, group {}: {} kernel", device_index, spec.head_dim,
        group, cuda_backend::attention_kernel_source_name(kernel.source));
    return std::make_unique<BackendExecutor<CudaBackend>>(std::move(backend), spec, source);
}

}  // namespace inlay
