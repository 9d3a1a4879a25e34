// Geometry of a paged KV cache (what every block of every layer holds) and the size of
// a block's canonical image, the layout whole blocks travel in between backends, the
// runtime and session files: [layer][k|v][kv_head][slot][head_dim].
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace inlay {

struct KvGeometry {
    int64_t n_layers = 0;
    int64_t n_kv_heads = 0;
    int64_t head_dim = 0;
    int64_t block_size = 16;  // token slots per block
    DType dtype = DType::F16; // element type of stored K and V (F16 or F32)

    bool operator==(const KvGeometry&) const = default;
};

// Bytes of one block's canonical image. Computed from the geometry alone (no storage is
// made). Throws INLAY_ERR_UNSUPPORTED for an element type other than f16/f32 and
// INLAY_ERR_INVALID_ARGUMENT for a non-positive or overflowing size.
size_t kv_canonical_block_bytes(const KvGeometry& geometry);

}  // namespace inlay
