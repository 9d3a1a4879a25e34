// CpuBackend's whole-block KV operations: copy-on-write copies and the canonical-layout
// reads and writes that session save/restore use: a slab at a time (the storage keeps a
// head's slabs of neighbouring blocks together, the canonical layout a block's slabs).
#include <cstring>

#include "backend/common/op_checks.h"
#include "backend/cpu/cpu_backend.h"
#include "core/error.h"

namespace inlay {
namespace {

void require_block(const CpuBackend::KvStorage& kv, int64_t block, const char* op) {
    require_kv_block(block, kv.n_blocks(), op);
}

}  // namespace

void CpuBackend::kv_copy_block(KvStorage& kv, int64_t src, int64_t dst) {
    require_block(kv, src, "kv_copy_block");
    require_block(kv, dst, "kv_copy_block");
    if (src == dst) return;
    for (int64_t i = 0; i < kv.n_slabs(); ++i) std::memcpy(kv.slab(dst, i), kv.slab(src, i), kv.slab_bytes());
}

void CpuBackend::kv_read_block(const KvStorage& kv, int64_t block, std::span<std::byte> out) {
    require_block(kv, block, "kv_read_block");
    if (out.size() != kv.block_bytes())
        fail(INLAY_ERR_INTERNAL, "kv_read_block: {} bytes given for a block of {}", out.size(), kv.block_bytes());
    for (int64_t i = 0; i < kv.n_slabs(); ++i)
        std::memcpy(out.data() + static_cast<size_t>(i) * kv.slab_bytes(), kv.slab(block, i), kv.slab_bytes());
}

void CpuBackend::kv_write_block(KvStorage& kv, int64_t block, std::span<const std::byte> in) {
    require_block(kv, block, "kv_write_block");
    if (in.size() != kv.block_bytes())
        fail(INLAY_ERR_INTERNAL, "kv_write_block: {} bytes given for a block of {}", in.size(), kv.block_bytes());
    for (int64_t i = 0; i < kv.n_slabs(); ++i)
        std::memcpy(kv.slab(block, i), in.data() + static_cast<size_t>(i) * kv.slab_bytes(), kv.slab_bytes());
}

}  // namespace inlay
