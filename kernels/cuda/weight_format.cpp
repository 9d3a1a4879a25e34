// Block geometry of the weight formats (host only); GGUF's layouts.
#include "inlay_cuda_kernels.h"

namespace inlay::cuda {

int64_t weight_block_elems(WeightFormat format) {
    switch (format) {
        case WeightFormat::f32:
        case WeightFormat::f16:
        case WeightFormat::bf16:
            return 1;
        case WeightFormat::q8_0:
        case WeightFormat::q4_0:
            return 32;
        case WeightFormat::q1_0:
            return 128;
        case WeightFormat::q4_k:
        case WeightFormat::q5_k:
        case WeightFormat::q6_k:
            return 256;
    }
    return 0;
}

int64_t weight_block_bytes(WeightFormat format) {
    switch (format) {
        case WeightFormat::f32:
            return 4;
        case WeightFormat::f16:
        case WeightFormat::bf16:
            return 2;
        case WeightFormat::q8_0:
            return 34;
        case WeightFormat::q4_0:
            return 18;
        case WeightFormat::q1_0:
            return 18;
        case WeightFormat::q4_k:
            return 144;
        case WeightFormat::q5_k:
            return 176;
        case WeightFormat::q6_k:
            return 210;
    }
    return 0;
}

size_t weight_row_bytes(WeightFormat format, int64_t n_cols) {
    const int64_t elems = weight_block_elems(format);
    if (elems <= 0 || n_cols < 0 || n_cols % elems != 0) return 0;
    return static_cast<size_t>(n_cols / elems) * static_cast<size_t>(weight_block_bytes(format));
}

}  // namespace inlay::cuda
