// CpuBackend: construction, memory and weights. The ops live in cpu_ops.cpp,
// cpu_matmul.cpp and cpu_attention.cpp.
#include "backend/cpu/cpu_backend.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "core/error.h"
#include "core/half.h"
#include "quant/quantize.h"
#include "quant/vec_dot.h"

namespace inlay {

CpuBackend::CpuBackend(int n_threads) : pool_(n_threads) {}

CpuBackend::Buffer CpuBackend::alloc(int64_t n_floats) {
    if (n_floats < 0) fail(INLAY_ERR_INVALID_ARGUMENT, "CpuBackend::alloc: negative size {}", n_floats);
    Buffer b;
    b.data.resize(static_cast<size_t>(n_floats));
    return b;
}

CpuBackend::Weight CpuBackend::upload_matrix(const TensorView& view) {
    const auto stride = row_bytes(view.type, view.row_length());
    if (!stride || *stride * static_cast<size_t>(view.n_rows()) != view.nbytes)
        fail(INLAY_ERR_SHAPE_MISMATCH, "tensor '{}': {} bytes do not hold {} rows of {} {} elements", view.name,
             view.nbytes, view.n_rows(), view.row_length(), dtype_name(view.type));
    (void)quant::vec_dot_type(view.type);  // throws INLAY_ERR_UNSUPPORTED for types without kernels
    Weight w;
    w.type = view.type;
    w.n_cols = view.row_length();
    w.n_rows = view.n_rows();
    w.row_stride = *stride;
    w.data = view.data;
    return w;
}

CpuBackend::Weight CpuBackend::upload_vector(const TensorView& view) {
    Weight w = upload_matrix(view);
    if (w.type == DType::F32) return w;
    // Norm weights are tiny: keep an f32 copy so the norm ops need only one path.
    const int64_t n = w.n_cols * w.n_rows;
    auto owned = std::make_shared<std::vector<float>>(static_cast<size_t>(n));
    quant::dequantize_row(w.type, w.data, owned->data(), n);
    w.type = DType::F32;
    w.row_stride = static_cast<size_t>(w.n_cols) * sizeof(float);
    w.data = reinterpret_cast<const std::byte*>(owned->data());
    w.owned = std::move(owned);
    return w;
}

void CpuBackend::read(const Buffer& src, int64_t offset, int64_t count, float* host_dst) {
    if (offset < 0 || count < 0 || static_cast<size_t>(offset + count) > src.size())
        fail(INLAY_ERR_INTERNAL, "CpuBackend::read: range [{}, {}) outside buffer of {}", offset, offset + count,
             src.size());
    std::memcpy(host_dst, src.ptr() + offset, static_cast<size_t>(count) * sizeof(float));
}

// --- KV storage ---------------------------------------------------------------------

CpuBackend::KvStorage::KvStorage(const KvGeometry& geometry) : geometry_(geometry) {
    if (geometry.dtype != DType::F16 && geometry.dtype != DType::F32)
        fail(INLAY_ERR_UNSUPPORTED, "KV cache type {} is not supported (f16 or f32)", dtype_name(geometry.dtype));
    if (geometry.n_layers <= 0 || geometry.n_kv_heads <= 0 || geometry.head_dim <= 0 || geometry.block_size <= 0)
        fail(INLAY_ERR_INVALID_ARGUMENT, "invalid KV geometry");
    elem_bytes_ = geometry.dtype == DType::F16 ? 2 : 4;
    slab_bytes_ = static_cast<size_t>(geometry.block_size * geometry.head_dim) * elem_bytes_;
    block_bytes_ = slab_bytes_ * 2 * static_cast<size_t>(geometry.n_layers * geometry.n_kv_heads);
}

void CpuBackend::KvStorage::resize(int64_t n_blocks) {
    if (n_blocks < 0) fail(INLAY_ERR_INVALID_ARGUMENT, "negative KV block count");
    const auto n = static_cast<size_t>(n_blocks);
    if (n < blocks_.size()) {
        blocks_.resize(n);
        return;
    }
    blocks_.reserve(n);
    while (blocks_.size() < n) {
        // Zero-filled so that a slot read before it is written is 0, not garbage.
        std::unique_ptr<std::byte[], FreeBlock> block(static_cast<std::byte*>(std::calloc(1, block_bytes_)));
        if (!block) fail(INLAY_ERR_KV_FULL, "out of memory for KV block ({} bytes)", block_bytes_);
        blocks_.push_back(std::move(block));
    }
}

void CpuBackend::KvStorage::FreeBlock::operator()(std::byte* p) const noexcept { std::free(p); }

std::byte* CpuBackend::KvStorage::slab(int64_t block, int64_t layer, int kv, int64_t head) const {
    const size_t index = (static_cast<size_t>(layer) * 2 + static_cast<size_t>(kv)) *
                             static_cast<size_t>(geometry_.n_kv_heads) + static_cast<size_t>(head);
    return blocks_[static_cast<size_t>(block)].get() + index * slab_bytes_;
}

CpuBackend::KvStorage CpuBackend::alloc_kv(const KvGeometry& geometry, int64_t n_blocks) {
    KvStorage kv(geometry);
    kv.resize(n_blocks);
    return kv;
}

void CpuBackend::resize_kv(KvStorage& kv, int64_t n_blocks) { kv.resize(n_blocks); }

}  // namespace inlay
