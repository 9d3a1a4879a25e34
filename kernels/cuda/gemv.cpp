// gemv: argument checks and dispatch to the format families.
#include <cstdint>

#include "gemv_args.h"
#include "gemv_launch.h"
#include "inlay_cuda_kernels.h"
#include "launch_util.h"

namespace inlay::cuda {

cudaError_t gemv(const void* w, WeightFormat format, int64_t n_rows, int64_t n_cols, size_t row_stride_bytes,
                 const float* x, int64_t x_stride, int32_t n_tokens, float* y, int64_t y_stride, cudaStream_t stream) {
    if (!w || !x || !y || n_rows < 0 || n_cols < 0 || n_tokens < 0 || n_tokens > 8) return cudaErrorInvalidValue;
    const int64_t block_elems = weight_block_elems(format);
    if (block_elems <= 0) return cudaErrorInvalidValue;
    const bool is_float = block_elems == 1;
    const size_t row_bytes = is_float ? static_cast<size_t>(n_cols) * static_cast<size_t>(weight_block_bytes(format))
                                      : weight_row_bytes(format, n_cols);
    if (!is_float && n_cols % block_elems != 0) return cudaErrorInvalidValue;
    const auto elem_align = static_cast<size_t>(format == WeightFormat::f32 ? 4 : 2);
    if (row_stride_bytes < row_bytes || row_stride_bytes % elem_align != 0 || !detail::aligned(w, elem_align))
        return cudaErrorInvalidValue;
    if (!detail::aligned(x, 16) || x_stride % 4 != 0 || x_stride < n_cols || y_stride < n_rows)
        return cudaErrorInvalidValue;
    if (n_rows == 0 || n_tokens == 0) return cudaSuccess;
    if ((n_rows + 3) / 4 > detail::kMaxGridX) return cudaErrorInvalidValue;

    dev::GemvArgs a{};
    a.w = static_cast<const unsigned char*>(w);
    a.n_rows = n_rows;
    a.n_cols = n_cols;
    a.row_stride = static_cast<long long>(row_stride_bytes);
    a.x = x;
    a.x_stride = x_stride;
    a.n_tokens = n_tokens;
    a.y = y;
    a.y_stride = y_stride;
    a.wide = detail::aligned(w, 16) && row_stride_bytes % 16 == 0;
    switch (format) {
        case WeightFormat::f32:
        case WeightFormat::f16:
        case WeightFormat::bf16:
            return detail::gemv_float(format, a, stream);
        case WeightFormat::q8_0:
        case WeightFormat::q4_0:
        case WeightFormat::q1_0:
            return detail::gemv_block32(format, a, stream);
        case WeightFormat::q4_k:
        case WeightFormat::q5_k:
        case WeightFormat::q6_k:
            return detail::gemv_kquant(format, a, stream);
    }
    return cudaErrorInvalidValue;
}

}  // namespace inlay::cuda
