#include "backend/common/op_checks.h"

#include "core/error.h"

namespace inlay {

void require_kv_block(int64_t block, int64_t n_blocks, const char* op) {
    if (block < 0 || block >= n_blocks)
        fail(INLAY_ERR_INTERNAL, "{}: block {} outside the storage of {} blocks", op, block, n_blocks);
}

void require_batch_fits(int64_t batch_block_size, int64_t batch_n_blocks, const KvGeometry& geometry,
                        int64_t store_blocks, const char* op) {
    if (batch_block_size != geometry.block_size || batch_n_blocks > store_blocks)
        fail(INLAY_ERR_INTERNAL, "{}: a batch prepared for {} blocks of {} given a store of {} blocks of {}", op,
             batch_n_blocks, batch_block_size, store_blocks, geometry.block_size);
}

size_t require_matrix_layout(const TensorView& view) {
    const auto stride = row_bytes(view.type, view.row_length());
    if (!stride || *stride * static_cast<size_t>(view.n_rows()) != view.nbytes)
        fail(INLAY_ERR_SHAPE_MISMATCH, "tensor '{}': {} bytes do not hold {} rows of {} {} elements", view.name,
             view.nbytes, view.n_rows(), view.row_length(), dtype_name(view.type));
    return *stride;
}

void require_f32_vector(DType type, int64_t n_elements, int64_t want, const char* op) {
    if (type != DType::F32 || n_elements != want)
        fail(INLAY_ERR_INTERNAL, "{}: a {} weight of {} elements where {} f32 are needed", op, dtype_name(type),
             n_elements, want);
}

void require_shape(int64_t n_rows, int64_t n_cols, const char* op) {
    if (n_rows < 0 || n_cols < 0) fail(INLAY_ERR_INTERNAL, "{}: {} rows of {}", op, n_rows, n_cols);
}

}  // namespace inlay
