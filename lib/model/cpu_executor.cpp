// The CPU backend's decoder and executor: the one instantiation of each for CpuBackend.
#include "backend/cpu/cpu_backend.h"
#include "model/backend_executor_impl.h"
#include "model/decoder_impl.h"
#include "model/make_executor.h"

namespace inlay {

template class Decoder<CpuBackend>;
template class BackendExecutor<CpuBackend>;

std::unique_ptr<Executor> make_cpu_executor(int n_threads, const DecoderSpec& spec, const WeightSource& source) {
    return std::make_unique<BackendExecutor<CpuBackend>>(std::make_unique<CpuBackend>(n_threads), spec, source);
}

}  // namespace inlay
