// gemv for the K-quants: q4_k, q5_k (16-byte loads when aligned), q6_k (2-byte loads).
#include "gemv_family.cuh"
#include "gemv_launch.h"

namespace inlay::cuda::detail {

cudaError_t gemv_kquant(WeightFormat format, const dev::GemvArgs& args, cudaStream_t stream) {
    switch (format) {
        case WeightFormat::q4_k:
            return launch_gemv<dev::FmtQ4_K>(args, stream);
        case WeightFormat::q5_k:
            return launch_gemv<dev::FmtQ5_K>(args, stream);
        case WeightFormat::q6_k:
            return launch_gemv<dev::FmtQ6_K>(args, stream);
        default:
            return cudaErrorInvalidValue;
    }
}

}  // namespace inlay::cuda::detail
