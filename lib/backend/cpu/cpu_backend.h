// CpuBackend: the reference backend. Weights are zero-copy views of the mapped file,
// activations are std::vector<float>, every op is split across the backend's
// ThreadPool. Each op is correct for any size; the hot ones (matmul, attention) use
// the SIMD kernels of lib/quant.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "backend/concepts.h"
#include "core/thread_pool.h"

namespace inlay {

class CpuBackend {
public:
    struct Buffer {
        std::vector<float> data;
        [[nodiscard]] float* ptr() { return data.data(); }
        [[nodiscard]] const float* ptr() const { return data.data(); }
        [[nodiscard]] size_t size() const { return data.size(); }
    };

    // A matrix of n_rows rows of n_cols elements in `type`, rows row_stride bytes apart.
    // `data` points into the model file mapping (or into `owned` for converted vectors).
    struct Weight {
        DType type = DType::F32;
        int64_t n_cols = 0;
        int64_t n_rows = 0;
        size_t row_stride = 0;
        const std::byte* data = nullptr;
        std::shared_ptr<const std::vector<float>> owned;

        [[nodiscard]] const std::byte* row(int64_t r) const { return data + static_cast<size_t>(r) * row_stride; }
    };

    // Paged K/V: each block is one allocation holding every layer's K and V for
    // block_size token slots, laid out [layer][k|v][kv_head][slot][head_dim] (the
    // canonical layout of concepts.h), so blocks can be added one at a time and a head's
    // keys are contiguous within a block. Blocks come from calloc: large ones are fresh
    // zero pages that take no resident memory until first written, so a preallocated
    // pool costs only what is used.
    class KvStorage {
    public:
        KvStorage() = default;
        explicit KvStorage(const KvGeometry& geometry);
        [[nodiscard]] const KvGeometry& geometry() const { return geometry_; }
        [[nodiscard]] int64_t n_blocks() const { return static_cast<int64_t>(blocks_.size()); }
        void resize(int64_t n_blocks);
        [[nodiscard]] size_t block_bytes() const { return block_bytes_; }
        // First element of (block, layer, k or v, head): block_size * head_dim elements.
        [[nodiscard]] std::byte* slab(int64_t block, int64_t layer, int kv, int64_t head) const;

    private:
        KvGeometry geometry_{};
        size_t elem_bytes_ = 0;
        size_t slab_bytes_ = 0;   // one head of K (or V) of one layer in one block
        size_t block_bytes_ = 0;
        struct FreeBlock {
            void operator()(std::byte* p) const noexcept;
        };
        std::vector<std::unique_ptr<std::byte[], FreeBlock>> blocks_;
    };

    // n_threads <= 0: all cores.
    explicit CpuBackend(int n_threads);

    [[nodiscard]] int n_threads() const { return pool_.size(); }
    [[nodiscard]] ThreadPool& pool() { return pool_; }

    Buffer alloc(int64_t n_floats);
    Weight upload_matrix(const TensorView& view);
    Weight upload_vector(const TensorView& view);
    KvStorage alloc_kv(const KvGeometry& geometry, int64_t n_blocks);
    void resize_kv(KvStorage& kv, int64_t n_blocks);
    void read(const Buffer& src, int64_t offset, int64_t count, float* host_dst);

    // Whole KV blocks (cpu_kv_blocks.cpp). Thread-safe for distinct blocks; no pool use.
    [[nodiscard]] size_t kv_block_bytes(const KvStorage& kv) const { return kv.block_bytes(); }
    void kv_copy_block(KvStorage& kv, int64_t src, int64_t dst);
    void kv_read_block(const KvStorage& kv, int64_t block, std::span<std::byte> out);
    void kv_write_block(KvStorage& kv, int64_t block, std::span<const std::byte> in);

    void embed(const Weight& table, std::span<const int32_t> ids, Buffer& out);
    void rms_norm(const Buffer& x, const Weight& weight, float eps, int64_t n_rows, int64_t dim, Buffer& out);
    void matmul(const Weight& w, const Buffer& x, int64_t n_tokens, Buffer& y);
    void rope(Buffer& x, int64_t n_heads, int64_t head_dim, const BatchLayout& layout, const RopeParams& rope);
    void kv_store(KvStorage& kv, int64_t layer, const Buffer& k, const Buffer& v, const BatchLayout& layout);
    void attention(const Buffer& q, const KvStorage& kv, int64_t layer, const BatchLayout& layout, int64_t n_heads,
                   Buffer& out);
    void silu_mul(Buffer& gate, const Buffer& up, int64_t n);
    void add(Buffer& x, const Buffer& y, int64_t n);
    void gather_rows(const Buffer& x, std::span<const int32_t> rows, int64_t row_length, Buffer& out);

private:
    ThreadPool pool_;
};

static_assert(Backend<CpuBackend>);

}  // namespace inlay
