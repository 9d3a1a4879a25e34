// The CUDA backend's decoder and executor (built when the CUDA toolkit is found).
#include "backend/cuda/cuda_backend.h"
#include "core/error.h"
#include "model/backend_executor_impl.h"
#include "model/decoder_impl.h"
#include "model/make_executor.h"

namespace inlay {

template class Decoder<CudaBackend>;
template class BackendExecutor<CudaBackend>;

int cuda_device_count(std::string* why) { return CudaBackend::device_count(why); }

std::unique_ptr<Executor> make_cuda_executor(int device_index, const DecoderSpec& spec, const WeightSource& source) {
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
    return std::make_unique<BackendExecutor<CudaBackend>>(std::make_unique<CudaBackend>(device_index), spec, source);
}

}  // namespace inlay
