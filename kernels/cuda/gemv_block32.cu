// gemv for the formats of small, 2-byte aligned blocks: q8_0, q4_0 (32 elements), q1_0 (128).
#include "gemv_family.cuh"
#include "gemv_launch.h"

namespace inlay::cuda::detail {

cudaError_t gemv_block32(WeightFormat format, const dev::GemvArgs& args, cudaStream_t stream) {
    switch (format) {
        case WeightFormat::q8_0:
            return launch_gemv<dev::FmtQ8_0>(args, stream);
        case WeightFormat::q4_0:
            return launch_gemv<dev::FmtQ4_0>(args, stream);
        case WeightFormat::q1_0:
            return launch_gemv<dev::FmtQ1_0>(args, stream);
        default:
            return cudaErrorInvalidValue;
    }
}

}  // namespace inlay::cuda::detail
