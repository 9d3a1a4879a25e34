// CpuBackend: the reference backend. Weights are zero-copy views of the mapped file,
// activations are host arrays (resident only where a step writes them), every op is split across the backend's
// ThreadPool and runs synchronously (so read() and synchronize() have nothing to wait
// for). Each op is correct for any size; the hot ones (matmul, attention) use the SIMD
// kernels of lib/quant. Results are batch invariant: every op computes a token's
// values with the same operations in the same order whatever else is in the batch.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "backend/concepts.h"
#include "core/thread_pool.h"
#include "core/zeroed_array.h"
#include "quant/vec_dot.h"
#include "sampling/sample_chain.h"

namespace inlay {

class CpuBackend {
public:
    struct Buffer {
        ZeroedArray<float> data;
        [[nodiscard]] float* ptr() { return data.data(); }
        [[nodiscard]] const float* ptr() const { return data.data(); }
        [[nodiscard]] size_t size() const { return data.size(); }
    };

    // Per-thread reads for the pool's waits (ThreadPool::set_idle_reads), kept from one
    // decode step to the next: written and read concurrently, so every field is atomic.
    class NextReads {
    public:
        // Threads past this many read nothing while they wait.
        static constexpr int kMaxThreads = 16;
        static constexpr size_t kMaxStreams = kMaxThreads * ThreadPool::kIdleStreams;
        using Streams = std::array<ThreadPool::IdleStream, kMaxStreams>;

        // The first n streams (the rest of a loaded Streams is empty).
        void store(const Streams& streams, size_t n);
        [[nodiscard]] Streams load(size_t n) const;

    private:
        std::array<std::atomic<const void*>, kMaxStreams> begin_{};
        std::array<std::atomic<size_t>, kMaxStreams> bytes_{};
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
        // Q8_0 / Q4_0 / Q5_0 / K-quant rows repacked sixteen at a time for the products, where this CPU
        // takes that layout (quant/interleaved_rows.h; the stored rows' pages are handed
        // back after the repacking); `data` stays the stored rows, for embedding lookups.
        const std::byte* interleaved = nullptr;
        std::shared_ptr<const std::byte[]> interleaved_storage;
        // Where each thread began the decode product that followed this one in the last
        // decode step (see begin_streamed_region); shared by the Weight's copies.
        std::shared_ptr<NextReads> next_reads;

        [[nodiscard]] const std::byte* row(int64_t r) const { return data + static_cast<size_t>(r) * row_stride; }
    };

    // Paged K/V. A block holds every layer's K and V for block_size token slots; its
    // bytes in the canonical layout are [layer][k|v][kv_head][slot][head_dim], and each
    // (layer, k|v, kv_head) part of it is a slab. Blocks are stored sixteen to a segment,
    // one allocation laid out [layer][k|v][kv_head][block of the segment][slot][head_dim],
    // so that a head's keys run contiguously across the consecutive blocks a sequence
    // usually holds, and the hardware prefetchers stream them. (With one allocation per
    // block every slab was a separate 4 KiB read: Qwen3-0.6B's decode attention at depth
    // 512 from memory took 1.3x as long, 1.15x inside a decode step.) Growing adds
    // segments, nothing moves. Segments are fresh zero pages (ZeroedArray) that take no
    // resident memory until first written, so a preallocated pool costs only what is used,
    // and a slot read before it is written is 0.
    class KvStorage {
    public:
        static constexpr int64_t kSegmentBlocks = 16;

        KvStorage() = default;
        explicit KvStorage(const KvGeometry& geometry);
        [[nodiscard]] const KvGeometry& geometry() const { return geometry_; }
        [[nodiscard]] int64_t n_blocks() const { return n_blocks_; }
        void resize(int64_t n_blocks);
        [[nodiscard]] size_t block_bytes() const { return block_bytes_; }
        [[nodiscard]] size_t slab_bytes() const { return slab_bytes_; }
        // Slabs per block: n_layers * 2 * n_kv_heads, in the canonical order.
        [[nodiscard]] int64_t n_slabs() const { return n_slabs_; }
        // First element of slab i of a block (block_size * head_dim elements).
        [[nodiscard]] std::byte* slab(int64_t block, int64_t i) const {
            std::byte* segment = segments_[static_cast<size_t>(block / kSegmentBlocks)].get();
            return segment + static_cast<size_t>(i * kSegmentBlocks + block % kSegmentBlocks) * slab_bytes_;
        }
        [[nodiscard]] std::byte* slab(int64_t block, int64_t layer, int kv, int64_t head) const {
            return slab(block, (layer * 2 + kv) * geometry_.n_kv_heads + head);
        }

    private:
        KvGeometry geometry_{};
        size_t slab_bytes_ = 0;
        size_t block_bytes_ = 0;
        int64_t n_slabs_ = 0;
        int64_t n_blocks_ = 0;
        // Non-const bytes from a const storage, as slab() hands out.
        struct Segment {
            ZeroedArray<std::byte> bytes;
            [[nodiscard]] std::byte* get() const { return const_cast<std::byte*>(bytes.data()); }
        };
        std::vector<Segment> segments_;
    };

    // The step's batch: a validated copy of the description, plus each token's write
    // slot (block id and slot) resolved once for every layer's KV append.
    struct Batch {
        std::vector<int32_t> tokens, positions, seq_of_token, kv_indptr, kv_indices, logit_rows;
        std::vector<int32_t> fed_rows;                // empty, or per token (BatchDesc::fed_rows)
        std::vector<int32_t> slot_block, slot_index;  // per token
        int64_t block_size = 0;
        int64_t n_blocks = 0;  // the store's block count it was validated against
        // RoPE's cos and sin of every token's angles ([token][pair]). Every layer rotates
        // q and k by the same angles, so rope() computes them on its first call of the
        // step and again only for other parameters, not in every call (2 x n_layers
        // tables a step). With the vector K/V append, a SmolLM2 decode layer's RoPE and
        // append went from 3.0-3.8 to 1.8 us (Zen 5, docs/perf/cpu-zen5-2026-12-07e.md).
        struct RopeAngles {
            std::vector<float> cos, sin;
            std::vector<float> factors;  // the frequency factors they were made with (or none)
            int64_t n_rot = -1;          // -1: none made for this batch yet
            float freq_base = 0.0f, freq_scale = 0.0f;
        };
        mutable RopeAngles rope_angles;

        [[nodiscard]] int64_t n_tokens() const { return static_cast<int64_t>(tokens.size()); }
        [[nodiscard]] const int32_t* block_table(int64_t seq) const {
            return kv_indices.data() + kv_indptr[static_cast<size_t>(seq)];
        }
    };

    // Matmul scratch: the activations converted to the weights' partner format, their
    // matrix-unit packing, and the second product of matmul_swiglu. Attention's: one
    // slot of attention_slot_floats(attn_head_dim) per parallel chunk (query rows, their
    // accumulators, a converted K and V chunk) and the tile starts of a batch.
    struct Scratch {
        ZeroedArray<std::byte> converted;
        quant::TilePack pack;
        Buffer up;
        std::vector<float> attn;
        std::vector<int32_t> attn_tiles;
        int64_t attn_slots = 0;
        int64_t attn_head_dim = 0;
        SampleChain chain;  // sample_rows' candidates
        // argmax_rows / sample_rows ids: a ring of kMaxUnreadIds rows' ids; the slot last
        // written holds the latest ids (feed_tokens), the `unread` before it wait for read_ids.
        std::array<std::vector<int32_t>, kMaxUnreadIds> ids;
        std::array<int64_t, kMaxUnreadIds> id_rows{};
        int next_ids = 0;  // the slot the next ids go to
        int unread = 0;
    };

    // Attention tiles: at most kAttnMaxRows query rows (tokens x heads of one KV group)
    // per work item, K/V converted kAttnChunk positions at a time, kAttnSlotsPerThread
    // work chunks per thread.
    static constexpr int64_t kAttnMaxRows = 32;
    static constexpr int64_t kAttnChunk = 16;
    static constexpr int64_t kAttnSlotsPerThread = 4;
    static int64_t attention_slot_floats(int64_t head_dim);

    // Forward passes of different workspaces may run at once (the pool serves them in turn).
    static constexpr bool kConcurrentForward = true;
    // Every op has done its work when it returns.
    static constexpr bool kQueuedOps = false;

    // n_threads <= 0: all cores.
    explicit CpuBackend(int n_threads);

    [[nodiscard]] int n_threads() const { return pool_.size(); }
    [[nodiscard]] ThreadPool& pool() { return pool_; }

    [[nodiscard]] std::string device_name() const { return "cpu"; }
    [[nodiscard]] BackendContract contract() const { return BackendContract{true, 0.0}; }
    // Available and total RAM (/proc/meminfo, else sysconf).
    [[nodiscard]] DeviceMemory memory_info() const;

    Buffer alloc(int64_t n_floats);
    void write(Buffer& dst, int64_t offset, const float* host_src, int64_t count);
    void read(const Buffer& src, int64_t offset, int64_t count, float* host_dst);
    void synchronize() {}
    Weight upload_matrix(const TensorView& view);
    Weight upload_vector(const TensorView& view);
    Scratch alloc_scratch(const ScratchShape& shape);
    KvStorage alloc_kv(const KvGeometry& geometry, int64_t n_blocks);
    void resize_kv(KvStorage& kv, int64_t n_blocks);
    void prepare_batch(const BatchDesc& desc, const BatchLimits& limits, Batch& batch);

    // Whole KV blocks (cpu_kv_blocks.cpp). Thread-safe for distinct blocks; no pool use.
    void kv_copy_block(KvStorage& kv, int64_t src, int64_t dst);
    void kv_read_block(const KvStorage& kv, int64_t block, std::span<std::byte> out);
    void kv_write_block(KvStorage& kv, int64_t block, std::span<const std::byte> in);

    // The ops of the concept.
    void embed(const Weight& table, const Batch& batch, Buffer& out);
    void rms_norm(const Buffer& x, const Weight& weight, float eps, int64_t n_rows, int64_t dim, Buffer& out);
    void add_rms_norm(Buffer& x, const Buffer& y, const Weight& weight, float eps, int64_t n_rows, int64_t dim,
                      Buffer& out);
    void matmul(const Weight& w, const Buffer& x, int64_t n_tokens, Buffer& y, Scratch& scratch);
    void matmul_swiglu(const Weight& gate, const Weight& up, const Buffer& x, int64_t n_tokens, Buffer& out,
                       Scratch& scratch);
    void matmul_qkv(const Weight& wq, const Weight& wk, const Weight& wv, const Buffer& x, int64_t n_tokens, Buffer& q,
                    Buffer& k, Buffer& v, Scratch& scratch);
    void rope_kv_append(Buffer& q, Buffer& k, const Buffer& v, const Weight* q_norm, const Weight* k_norm, float eps,
                        const RopeParams& rope, const Weight* freq_factors, KvStorage& kv, int64_t layer,
                        int64_t n_heads, const Batch& batch);
    void attention(const Buffer& q, const KvStorage& kv, int64_t layer, const Batch& batch, int64_t n_heads,
                   float scale, Buffer& out, Scratch& scratch);
    void add(Buffer& x, const Buffer& y, int64_t n);
    void gather_logit_rows(const Buffer& x, const Batch& batch, int64_t row_length, Buffer& out);
    void argmax_rows(const Buffer& x, int64_t n_rows, int64_t n_cols, Scratch& scratch);
    // The Sampler's own rule (penalties in place, then argmax or SampleChain with the row's draw).
    void sample_rows(Buffer& logits, int64_t n_rows, int64_t n_cols, const SampleRows& rows, Scratch& scratch);
    void read_ids(Scratch& scratch, int64_t n_rows, int32_t* ids);
    void feed_tokens(Batch& batch, const Scratch& scratch);

    // The pieces the fused ops are made of, public for their tests.
    void rope(Buffer& x, int64_t n_heads, int64_t head_dim, const Batch& batch, const RopeParams& rope,
              const Weight* freq_factors);
    void kv_store(KvStorage& kv, int64_t layer, const Buffer& k, const Buffer& v, const Batch& batch);
    void silu_mul(Buffer& gate, const Buffer& up, int64_t n);

private:
    // Row-wise and element-wise ops (norms, SiLU gating, the K/V append) on fewer floats
    // than this run on the calling thread: a decode step's few hundred values cost less
    // than a parallel region's start and end.
    static constexpr int64_t kInPlaceFloats = 16384;

    // One product of a fused matmul: y[t] = W x[t].
    struct Product {
        const Weight* w;
        Buffer* y;
    };

    // Converts x's first n_tokens rows to w's partner format in scratch.converted (or
    // returns x itself for f32 weights); the row stride goes to *stride.
    const std::byte* convert_activations(const Weight& w, const Buffer& x, int64_t n_tokens, Scratch& scratch,
                                         size_t* stride);
    void matmul_converted(const Weight& w, const std::byte* xq, size_t x_stride, int64_t n_tokens, Buffer& y,
                          Scratch& scratch);
    // Several products of the same converted activations in one parallel region where
    // the weights allow it (one token; or one weight type, so one activation pack).
    void matmul_products(std::span<const Product> products, const std::byte* xq, size_t x_stride, int64_t n_tokens,
                         Scratch& scratch);
    // Repacks a Q8_0 / Q4_0 / Q5_0 / Q4_K / Q5_K / Q6_K matrix into Weight::interleaved where this CPU takes that
    // layout; `file_backed`: w.data is a file mapping's (TensorView::file_backed).
    void interleave_rows(Weight& w, bool file_backed);
    // batch's RoPE angles for these parameters (half = n_rot / 2 pairs), made if the
    // batch holds none or others.
    const Batch::RopeAngles& rope_angles(const Batch& batch, const RopeParams& rope, const float* factors,
                                         int64_t half);
    // A decode product (a few tokens, so bound by memory) keyed by its first weight is
    // about to run, and pool thread t will start on starts[t * kIdleStreams ...]
    // (cpu_matmul.cpp). Those become the idle reads of the product run before it, and
    // the pool's waits from now on read what followed this product in the last step: a
    // decode step runs the same products in the same order.
    void begin_streamed_region(const Weight& key, const NextReads::Streams& starts);

    ThreadPool pool_;
    std::mutex last_streamed_mutex_;
    std::shared_ptr<NextReads> last_streamed_;  // the slot of the last decode product begun
};

static_assert(Backend<CpuBackend>);

// g[i] = g[i] / (1 + exp(-g[i])) * u[i] for i < n (cpu_ops.cpp).
void silu_mul_range(float* g, const float* u, size_t n);

}  // namespace inlay
