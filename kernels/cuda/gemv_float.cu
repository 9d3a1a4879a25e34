// gemv for the float formats: f32, f16, bf16 (16-byte units, scalar row tail).
#include "gemv_family.cuh"
#include "gemv_launch.h"

namespace inlay::cuda::detail {

cudaError_t gemv_float(WeightFormat format, const dev::GemvArgs& args, cudaStream_t stream) {
    switch (format) {
        case WeightFormat::f32:
            return launch_gemv<dev::FmtF32>(args, stream);
        case WeightFormat::f16:
            return launch_gemv<dev::FmtF16>(args, stream);
        case WeightFormat::bf16:
            return launch_gemv<dev::FmtBF16>(args, stream);
        default:
            return cudaErrorInvalidValue;
    }
}

}  // namespace inlay::cuda::detail
