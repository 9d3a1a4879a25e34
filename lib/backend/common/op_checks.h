// Argument checks every backend's ops share (each failure is INLAY_ERR_INTERNAL: the
// decoder or the runtime passed something inconsistent).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/common/kv_geometry.h"
#include "core/dtype.h"
#include "core/tensor_view.h"

namespace inlay {

// block in [0, n_blocks).
void require_kv_block(int64_t block, int64_t n_blocks, const char* op);
// A batch prepared (prepare_batch) for blocks of batch_block_size among batch_n_blocks
// fits a store of `geometry` with store_blocks blocks.
void require_batch_fits(int64_t batch_block_size, int64_t batch_n_blocks, const KvGeometry& geometry,
                        int64_t store_blocks, const char* op);
// The row stride of a weight tensor as stored: INLAY_ERR_SHAPE_MISMATCH (naming the
// tensor) when its bytes do not hold its rows of its type.
size_t require_matrix_layout(const TensorView& view);
// A norm weight (or rope factors): f32, `want` elements.
void require_f32_vector(DType type, int64_t n_elements, int64_t want, const char* op);
// A matrix shape of n_rows x n_cols, neither negative.
void require_shape(int64_t n_rows, int64_t n_cols, const char* op);

}  // namespace inlay
