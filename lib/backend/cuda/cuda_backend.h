// CudaBackend: the Backend concept on one NVIDIA GPU. It owns its device context (the
// device is made current on every entry), one non-blocking stream on which every op is
// enqueued in order, a cuBLAS handle bound to that stream, and all device memory it
// hands out; no globals, no thread-local handles (cuBLAS itself is loaded once per
// process, on the first backend: cublas_library.h). Ops enqueue and return; read(),
// kv_read_block() and synchronize() wait for the stream.
//
// Weights stay in their stored format (no dequantized copies); few-token matmuls run the
// fused dequantize-GEMV kernels of kernels/cuda with float activations, larger ones
// cuBLAS: SGEMM for f32 weights, tensor-core GEMMs with f32 accumulation otherwise (f16
// and bf16 weights as stored, other formats dequantized to f16 scratch a chunk of rows
// at a time; the activations rounded to f16, or bf16 for bf16 weights). The KV cache
// keeps one K and one V arena per layer, [block][kv_head][slot][head_dim], so a block's
// K of one layer is contiguous and whole-block moves are 2 x n_layers copies.
//
// Run on an H200 by scripts/gpu-check.sh (docs/perf/gpu-runs.md); what changed after the
// latest run listed there is UNVERIFIED on a GPU (the tensor-core GEMM paths, 2026-12-04;
// the NVRTC attention variants, the tensor-core prefill, CUDA graphs and pipelined steps'
// events, ids ring and fed tokens, 2026-12-06).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <array>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backend/concepts.h"
#include "backend/cuda/attention_kernels.h"
#include "backend/cuda/cublas_library.h"
#include "backend/cuda/cuda_plans.h"
#include "backend/cuda/device_memory.h"
#include "backend/cuda/step_graphs.h"

namespace inlay {

class CudaBackend {
public:
    struct Buffer {
        std::shared_ptr<void> memory;  // device floats
        size_t n = 0;
        [[nodiscard]] float* ptr() const { return static_cast<float*>(memory.get()); }
        [[nodiscard]] size_t size() const { return n; }
    };

    // A matrix of n_rows rows of n_cols elements in `type` on the device, rows
    // row_stride bytes apart; copies of a Weight share its memory (tied embeddings).
    struct Weight {
        DType type = DType::F32;
        int64_t n_cols = 0;
        int64_t n_rows = 0;
        size_t row_stride = 0;
        std::shared_ptr<void> memory;
        [[nodiscard]] const void* data() const { return memory.get(); }
    };

    class KvStorage {
    public:
        KvStorage() = default;
        [[nodiscard]] const KvGeometry& geometry() const { return geometry_; }
        [[nodiscard]] int64_t n_blocks() const { return n_blocks_; }
        // Layer l's arenas as the kernels take them.
        [[nodiscard]] cuda::PagedKvLayer layer(int64_t l) const;
        // Bytes of one block of one layer's K (or V) arena: n_kv_heads * block_size * head_dim elements.
        [[nodiscard]] size_t block_slab_bytes() const { return slab_bytes_; }
        [[nodiscard]] std::byte* k_block(int64_t layer, int64_t block) const;
        [[nodiscard]] std::byte* v_block(int64_t layer, int64_t block) const;

    private:
        friend class CudaBackend;
        KvGeometry geometry_{};
        int64_t n_blocks_ = 0;
        int64_t capacity_ = 0;  // blocks allocated (grows geometrically)
        size_t slab_bytes_ = 0;
        std::vector<cuda_backend::DevicePtr> k_, v_;  // per layer
    };

    // The step's batch on the device: one int32 block holding every array (one upload),
    // plus the host copies the ops need to size their launches.
    struct Batch {
        cuda_backend::DevicePtr device;
        size_t capacity = 0;  // int32 elements
        cuda_backend::PinnedPtr staging;
        cuda_backend::EventPtr uploaded;  // recorded after the last upload from `staging`
        cuda_backend::BatchOffsets offsets;
        bool fed = false;  // it has fed tokens (BatchDesc::fed_rows)
        std::vector<int32_t> logit_rows;  // host copy (row gathers are per-row copies)
        int64_t n_tokens = 0;
        int64_t n_seqs = 0;
        int64_t max_kv_len = 0;
        int64_t block_size = 0;
        int64_t n_blocks = 0;
        // The executable graphs of this workspace's steps (made on its first step).
        std::shared_ptr<cuda_backend::StepGraphs> graphs;
        [[nodiscard]] const int32_t* at(size_t offset) const {
            return static_cast<const int32_t*>(device.get()) + offset;
        }
        [[nodiscard]] int32_t* at(size_t offset) { return static_cast<int32_t*>(device.get()) + offset; }
        [[nodiscard]] cuda::TokenBatch tokens() const;
    };

    // Split-attention partials and the dequantized-rows scratch of large matmuls, and the
    // second product of matmul_swiglu.
    struct Scratch {
        Buffer attention;   // split partials for up to attention_tokens tokens and max_splits splits
        int64_t attention_tokens = 0;
        int32_t max_splits = 1;
        Buffer up;          // matmul_swiglu's up projection
        // The tensor-core paths (more than kGemvMaxTokens tokens): the activations rounded
        // to f16/bf16, and f16 rows of a weight being multiplied.
        cuda_backend::DevicePtr half_x;
        int64_t half_x_elems = 0;
        cuda_backend::DevicePtr dequant;
        int64_t dequant_halves = 0;
        // argmax_rows and sample_rows: the latest ids on the device (feed_tokens reads
        // them) and a ring of kMaxUnreadIds pinned host copies, each with the event
        // recorded after its copy (read_ids waits for the oldest); max_tokens rows each.
        cuda_backend::DevicePtr ids;
        std::array<cuda_backend::PinnedPtr, kMaxUnreadIds> ids_host;
        std::array<cuda_backend::EventPtr, kMaxUnreadIds> ids_copied;
        std::array<int64_t, kMaxUnreadIds> id_rows{};
        int next_ids = 0;  // the ring slot the next ids go to
        int unread = 0;
        int64_t ids_rows = 0;
        // sample_rows: the rows' parameters (ids_rows of them) and the step's penalty
        // entries (kMaxSamplePenalties), staged in pinned memory and copied once a step.
        // Two staging slots taken in turn, each rewritten only after the event of its last
        // copy: that copy follows its pass's forward, so with one slot a pipelined step's
        // sampling would wait for the step before to end.
        cuda_backend::DevicePtr sample_params;
        cuda_backend::DevicePtr penalties;
        std::array<cuda_backend::PinnedPtr, kMaxUnreadIds> sample_params_host;
        std::array<cuda_backend::PinnedPtr, kMaxUnreadIds> penalties_host;
        std::array<cuda_backend::EventPtr, kMaxUnreadIds> sample_staged;
        int next_staging = 0;
    };

    // One stream and one cuBLAS handle: forward passes are serialised by the executor.
    static constexpr bool kConcurrentForward = false;
    // Ops are queued on the stream and return at once.
    static constexpr bool kQueuedOps = true;

    struct Options {
        // Where NVRTC's compilations of attention variants are kept between processes
        // (attention_kernels.h); empty: compiled in every process that needs them.
        std::filesystem::path kernel_cache_dir;
        // Decode steps launched as CUDA graphs (step_graphs.h).
        bool graphs = true;
    };

    // Opens device `index`: INLAY_ERR_UNSUPPORTED when there is no CUDA driver or device
    // of that index (the message has CUDA's reason).
    CudaBackend(int device_index, Options options);
    explicit CudaBackend(int device_index);
    ~CudaBackend();
    CudaBackend(const CudaBackend&) = delete;
    CudaBackend& operator=(const CudaBackend&) = delete;

    // How many CUDA devices are usable here (0 when no driver or device; never throws),
    // with CUDA's reason in *why when there are none.
    static int device_count(std::string* why = nullptr);

    [[nodiscard]] std::string device_name() const { return "cuda:" + std::to_string(device_); }
    // Batch shape changes the arithmetic (float GEMV for a few tokens, tensor-core GEMMs on
    // f16/bf16-rounded activations beyond), so results depend on the batch within a
    // tolerance. Run 1 (f32 GEMV and SGEMM only) stayed within 2e-3; 1e-2 is the estimate
    // for the rounded activations until a GPU run measures it (test_batch_invariance
    // prints the figure). Activations stay float in the GEMV (no Q8 rounding as in
    // llama.cpp's CPU matmuls).
    [[nodiscard]] BackendContract contract() const {
        return BackendContract{.batch_invariant = false,
                               .batch_logit_tolerance = 1e-2,
                               .llamacpp_activations = false};
    }
    [[nodiscard]] DeviceMemory memory_info() const;
    // The kernel that runs attention of this shape (a group of `group` query heads per KV
    // head), resolved on first use: an NVRTC variant is compiled (or read from the cache)
    // and loaded then, so a caller that knows its shape at load time calls this there.
    cuda_backend::AttentionKernels::Choice attention_kernel(int64_t head_dim, int64_t group, int64_t block_size,
                                                            DType kv_type);
    [[nodiscard]] const cudaDeviceProp& properties() const { return props_; }

    Buffer alloc(int64_t n_floats);
    void write(Buffer& dst, int64_t offset, const float* host_src, int64_t count);
    void read(const Buffer& src, int64_t offset, int64_t count, float* host_dst);
    void synchronize();
    Weight upload_matrix(const TensorView& view);
    Weight upload_vector(const TensorView& view);
    Scratch alloc_scratch(const ScratchShape& shape);
    KvStorage alloc_kv(const KvGeometry& geometry, int64_t n_blocks);
    void resize_kv(KvStorage& kv, int64_t n_blocks);
    void prepare_batch(const BatchDesc& desc, const BatchLimits& limits, Batch& batch);

    void kv_copy_block(KvStorage& kv, int64_t src, int64_t dst);
    void kv_read_block(const KvStorage& kv, int64_t block, std::span<std::byte> out);
    void kv_write_block(KvStorage& kv, int64_t block, std::span<const std::byte> in);

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
    // CUDA graphs (StepGraphBackend, step_graphs.h): the ops of a step between graph_begin
    // (after prepare_batch) and graph_end (before its outputs are read) are recorded and
    // launched as one graph when the step is eligible; graph_abort after an op threw.
    // graph_begin is true when the step replays the last recorded one's launches as they
    // are (the same arguments): the caller then skips the ops.
    bool graph_begin(Batch& batch, const KvStorage& kv, const Scratch& scratch);
    void graph_end(Batch& batch);
    bool graph_abort(Batch& batch);
    [[nodiscard]] cuda_backend::StepGraphStats graph_stats(const Batch& batch) const;
    void sample_rows(Buffer& logits, int64_t n_rows, int64_t n_cols, const SampleRows& rows, Scratch& scratch);
    void read_ids(Scratch& scratch, int64_t n_rows, int32_t* ids);
    void feed_tokens(Batch& batch, const Scratch& scratch);

private:
    void make_current() const;
    // The ring slot for the next ids (INLAY_ERR_INTERNAL when kMaxUnreadIds are unread).
    static void check_ids_slot(const Scratch& scratch, int64_t n_rows, const char* op);
    // Queues the copy of the scratch's first n_rows device ids to the ring's next slot.
    void queue_ids_copy(Scratch& scratch, int64_t n_rows);
    // y = W x for one weight; `rounded` says which half type scratch.half_x holds x in
    // (nullopt: not yet rounded), so that the products of one op round x once.
    void matmul_into(const Weight& w, const Buffer& x, int64_t n_tokens, float* y, Scratch& scratch,
                     std::optional<cuda::HalfType>& rounded);
    void copy_kv_storage(const KvStorage& from, KvStorage& to, int64_t n_blocks);
    // attention_kernel's choice; may_load false: nullopt for a shape not chosen yet.
    std::optional<cuda_backend::AttentionKernels::Choice> find_attention_kernel(int64_t head_dim, int64_t group,
                                                                                int64_t block_size, DType kv_type,
                                                                                bool may_load);
    // How attention splits its keys for this batch (n_splits 1: unsplit).
    [[nodiscard]] cuda::AttentionSplitPlan attention_plan(const KvGeometry& g, const Batch& batch,
                                                          const Scratch& scratch) const;

    int device_ = 0;
    cudaDeviceProp props_{};
    cudaStream_t stream_ = nullptr;
    const cuda_backend::CublasApi* blas_ = nullptr;  // loaded on demand (cublas_library.h)
    cublasHandle_t cublas_ = nullptr;
    std::unique_ptr<cuda_backend::AttentionKernels> attention_kernels_;
    bool graphs_ = true;
};

static_assert(StepGraphBackend<CudaBackend>);

static_assert(Backend<CudaBackend>);

}  // namespace inlay
