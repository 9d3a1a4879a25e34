// CpuBackend's whole-block KV operations: copy-on-write copies and the canonical-layout
// reads and writes that session save/restore use. The CPU storage already keeps each
// block in the canonical layout, so all three are plain copies.
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
    std::memcpy(kv.slab(dst, 0, 0, 0), kv.slab(src, 0, 0, 0), kv.block_bytes());
}

void CpuBackend::kv_read_block(const KvStorage& kv, int64_t block, std::span<std::byte> out) {
    require_block(kv, block, "kv_read_block");
    if (out.size() != kv.block_bytes())
        fail(INLAY_ERR_INTERNAL, "kv_read_block: {} bytes given for a block of {}", out.size(), kv.block_bytes());
    std::memcpy(out.data(), kv.slab(block, 0, 0, 0), out.size());
}

void CpuBackend::kv_write_block(KvStorage& kv, int64_t block, std::span<const std::byte> in) {
    require_block(kv, block, "kv_write_block");
    if (in.size() != kv.block_bytes())
        fail(INLAY_ERR_INTERNAL, "kv_write_block: {} bytes given for a block of {}", in.size(), kv.block_bytes());
    std::memcpy(kv.slab(block, 0, 0, 0), in.data(), in.size());
}

}  // namespace inlay
