// CudaBackend: device, stream and handles; memory, weights, the step's batch and the KV
// arenas. The ops are in cuda_ops.cpp.
#include "backend/cuda/cuda_backend.h"

#include <algorithm>
#include <cstring>

#include "backend/common/op_checks.h"
#include "backend/cuda/cuda_error.h"
#include "core/error.h"
#include "quant/quantize.h"

namespace inlay {

using cuda_backend::check_cublas;
using cuda_backend::check_cuda;
using cuda_backend::device_alloc;

namespace {

std::shared_ptr<void> shared_device(size_t bytes, std::string_view what) {
    cuda_backend::DevicePtr p = device_alloc(bytes, what);
    return std::shared_ptr<void>(p.release(), cuda_backend::DeviceFree{});
}

}  // namespace

int CudaBackend::device_count(std::string* why) {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        if (why) *why = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
        return 0;
    }
    if (n == 0 && why) *why = "the driver reports no CUDA device";
    return n;
}

CudaBackend::CudaBackend(int device_index) : CudaBackend(device_index, Options{}) {}

CudaBackend::CudaBackend(int device_index, Options options) : device_(device_index), graphs_(options.graphs) {
    std::string why;
    const int n = device_count(&why);
    if (device_index < 0 || device_index >= n)
        fail(INLAY_ERR_UNSUPPORTED, "no CUDA device {}: {} usable{}{}", device_index, n, why.empty() ? "" : "; ", why);
    check_cuda(cudaSetDevice(device_), "cudaSetDevice");
    check_cuda(cudaGetDeviceProperties(&props_, device_), "cudaGetDeviceProperties");
    blas_ = &cuda_backend::cublas();
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    const cublasStatus_t s = blas_->create(&cublas_);
    if (s != CUBLAS_STATUS_SUCCESS) {
        (void)cudaStreamDestroy(stream_);
        check_cublas(s, "cublasCreate");
    }
    if (const cublasStatus_t st = blas_->set_stream(cublas_, stream_); st != CUBLAS_STATUS_SUCCESS) {
        (void)blas_->destroy(cublas_);
        (void)cudaStreamDestroy(stream_);
        check_cublas(st, "cublasSetStream");
    }
    int driver = 0;
    if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
    attention_kernels_ = std::make_unique<cuda_backend::AttentionKernels>(
        cuda_backend::cuda_arch_name(props_.major, props_.minor), std::move(options.kernel_cache_dir), driver);
}

CudaBackend::~CudaBackend() {
    (void)cudaSetDevice(device_);
    if (stream_) (void)cudaStreamSynchronize(stream_);
    attention_kernels_.reset();  // unloads the NVRTC variants' libraries while the device is current
    if (cublas_) (void)blas_->destroy(cublas_);
    if (stream_) (void)cudaStreamDestroy(stream_);
}

void CudaBackend::make_current() const { check_cuda(cudaSetDevice(device_), "cudaSetDevice"); }

cuda_backend::AttentionKernels::Choice CudaBackend::attention_kernel(int64_t head_dim, int64_t group,
                                                                     int64_t block_size, DType kv_type) {
    return *find_attention_kernel(head_dim, group, block_size, kv_type, true);
}

std::optional<cuda_backend::AttentionKernels::Choice> CudaBackend::find_attention_kernel(int64_t head_dim,
                                                                                        int64_t group,
                                                                                        int64_t block_size,
                                                                                        DType kv_type, bool may_load) {
    make_current();
    constexpr int64_t kMax = int64_t{1} << 30;  // far beyond any kernel: keeps the int casts exact
    if (head_dim <= 0 || head_dim > kMax || group <= 0 || group > kMax || block_size <= 0 || block_size > kMax)
        return cuda_backend::AttentionKernels::Choice{};  // no kernel takes it
    return attention_kernels_->get(
        cuda::nvrtc_sources::AttentionShape{static_cast<int>(head_dim), static_cast<int>(group),
                                            static_cast<int>(block_size),
                                            kv_type == DType::F16 ? cuda::KvType::f16 : cuda::KvType::f32},
        may_load);
}

DeviceMemory CudaBackend::memory_info() const {
    make_current();
    size_t free_bytes = 0, total_bytes = 0;
    check_cuda(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
    return DeviceMemory{free_bytes, total_bytes};
}

CudaBackend::Buffer CudaBackend::alloc(int64_t n_floats) {
    if (n_floats < 0) fail(INLAY_ERR_INVALID_ARGUMENT, "CudaBackend::alloc: negative size {}", n_floats);
    make_current();
    return Buffer{shared_device(static_cast<size_t>(n_floats) * sizeof(float), "activations"),
                  static_cast<size_t>(n_floats)};
}

void CudaBackend::write(Buffer& dst, int64_t offset, const float* host_src, int64_t count) {
    if (offset < 0 || count < 0 || static_cast<size_t>(offset + count) > dst.size())
        fail(INLAY_ERR_INTERNAL, "CudaBackend::write: range [{}, {}) outside buffer of {}", offset, offset + count,
             dst.size());
    if (count == 0) return;
    make_current();
    check_cuda(cudaMemcpyAsync(dst.ptr() + offset, host_src, static_cast<size_t>(count) * sizeof(float),
                               cudaMemcpyHostToDevice, stream_),
               "cudaMemcpyAsync (write)");
    // The source is the caller's pageable memory: done before returning.
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (write)");
}

void CudaBackend::read(const Buffer& src, int64_t offset, int64_t count, float* host_dst) {
    if (offset < 0 || count < 0 || static_cast<size_t>(offset + count) > src.size())
        fail(INLAY_ERR_INTERNAL, "CudaBackend::read: range [{}, {}) outside buffer of {}", offset, offset + count,
             src.size());
    make_current();
    if (count > 0)
        check_cuda(cudaMemcpyAsync(host_dst, src.ptr() + offset, static_cast<size_t>(count) * sizeof(float),
                                   cudaMemcpyDeviceToHost, stream_),
                   "cudaMemcpyAsync (read)");
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (read)");
}

void CudaBackend::synchronize() {
    make_current();
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

CudaBackend::Weight CudaBackend::upload_matrix(const TensorView& view) {
    const size_t stride = require_matrix_layout(view);
    if (!cuda_backend::weight_format(view.type))
        fail(INLAY_ERR_UNSUPPORTED, "tensor '{}': the CUDA backend has no kernels for {} weights", view.name,
             dtype_name(view.type));
    make_current();
    Weight w;
    w.type = view.type;
    w.n_cols = view.row_length();
    w.n_rows = view.n_rows();
    w.row_stride = stride;
    w.memory = shared_device(view.nbytes, "weights");
    check_cuda(cudaMemcpyAsync(w.memory.get(), view.data, view.nbytes, cudaMemcpyHostToDevice, stream_),
               "cudaMemcpyAsync (weights)");
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (weights)");
    return w;
}

CudaBackend::Weight CudaBackend::upload_vector(const TensorView& view) {
    const size_t stride = require_matrix_layout(view);
    // Norm weights and rope factors are tiny: kept as f32 so the kernels need one path.
    const int64_t n = view.row_length() * view.n_rows();
    std::vector<float> f(static_cast<size_t>(n));
    for (int64_t r = 0; r < view.n_rows(); ++r)
        quant::dequantize_row(view.type, view.data + static_cast<size_t>(r) * stride,
                              f.data() + r * view.row_length(), view.row_length());
    make_current();
    Weight w;
    w.type = DType::F32;
    w.n_cols = view.row_length();
    w.n_rows = view.n_rows();
    w.row_stride = static_cast<size_t>(w.n_cols) * sizeof(float);
    w.memory = shared_device(f.size() * sizeof(float), "norm weights");
    check_cuda(cudaMemcpyAsync(w.memory.get(), f.data(), f.size() * sizeof(float), cudaMemcpyHostToDevice, stream_),
               "cudaMemcpyAsync (vector)");
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (vector)");
    return w;
}

CudaBackend::Scratch CudaBackend::alloc_scratch(const ScratchShape& shape) {
    if (shape.max_tokens < 0 || shape.max_in < 0 || shape.n_ff < 0 || shape.n_heads < 0 || shape.head_dim < 0)
        fail(INLAY_ERR_INVALID_ARGUMENT, "CudaBackend::alloc_scratch: negative size");
    make_current();
    Scratch s;
    // Splitting along the keys pays only when few (token, head) pairs fill the device;
    // partials are kept for that many tokens (larger batches run unsplit).
    s.attention_tokens = std::min<int64_t>(shape.max_tokens, 64);
    s.max_splits = 32;
    s.attention = alloc(static_cast<int64_t>(cuda::attention_scratch_floats(
        s.attention_tokens, static_cast<int32_t>(shape.n_heads), static_cast<int32_t>(shape.head_dim), s.max_splits)));
    s.up = alloc(shape.max_tokens * shape.n_ff);
    s.ids_rows = std::max<int64_t>(shape.max_tokens, 1);
    s.ids = cuda_backend::device_alloc(static_cast<size_t>(s.ids_rows) * sizeof(int32_t), "row ids");
    for (int i = 0; i < kMaxUnreadIds; ++i) {
        s.ids_host[static_cast<size_t>(i)] =
            cuda_backend::pinned_alloc(static_cast<size_t>(s.ids_rows) * sizeof(int32_t), "row ids (host)");
        s.ids_copied[static_cast<size_t>(i)] = cuda_backend::event_create("row ids copied");
    }
    const size_t param_bytes = static_cast<size_t>(s.ids_rows) * sizeof(cuda::SampleRowParams);
    const size_t penalty_bytes = static_cast<size_t>(kMaxSamplePenalties) * sizeof(cuda::PenaltyPair);
    s.sample_params = cuda_backend::device_alloc(param_bytes, "sampling parameters");
    s.penalties = cuda_backend::device_alloc(penalty_bytes, "sampling penalties");
    for (size_t i = 0; i < kMaxUnreadIds; ++i) {
        s.sample_params_host[i] = cuda_backend::pinned_alloc(param_bytes, "sampling parameters (host)");
        s.penalties_host[i] = cuda_backend::pinned_alloc(penalty_bytes, "sampling penalties (host)");
        s.sample_staged[i] = cuda_backend::event_create("sampling parameters staged");
    }
    if (shape.max_tokens > cuda_backend::kGemvMaxTokens) {
        constexpr int64_t kDequantHalves = int64_t{32} << 20;  // 64 MiB of f16 rows per GEMM
        s.half_x_elems = shape.max_tokens * shape.max_in;
        s.half_x = cuda_backend::device_alloc(static_cast<size_t>(s.half_x_elems) * 2, "half activations");
        s.dequant = cuda_backend::device_alloc(static_cast<size_t>(kDequantHalves) * 2, "dequantized rows");
        s.dequant_halves = kDequantHalves;
    }
    return s;
}

// --- the step's batch ------------------------------------------------------------------

cuda::TokenBatch CudaBackend::Batch::tokens() const {
    cuda::TokenBatch t;
    t.positions = at(offsets.positions);
    t.seq_of_token = at(offsets.seq_of_token);
    t.kv_indptr = at(offsets.kv_indptr);
    t.kv_indices = at(offsets.kv_indices);
    t.kv_len = at(offsets.kv_len);
    t.n_tokens = static_cast<int32_t>(n_tokens);
    t.n_seqs = static_cast<int32_t>(n_seqs);
    return t;
}

void CudaBackend::prepare_batch(const BatchDesc& desc, const BatchLimits& limits, Batch& batch) {
    validate_batch(desc, limits);
    make_current();
    const cuda_backend::BatchOffsets offsets = cuda_backend::batch_offsets(desc);
    if (offsets.total > batch.capacity) {
        const size_t capacity = std::max(offsets.total, batch.capacity * 2);
        // The old block may still be read by queued passes: they finish before it is freed.
        check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (batch grows)");
        batch.device = device_alloc(capacity * sizeof(int32_t), "batch");
        batch.staging = cuda_backend::pinned_alloc(capacity * sizeof(int32_t), "batch staging");
        batch.capacity = capacity;
    }
    if (!batch.uploaded) batch.uploaded = cuda_backend::event_create("batch uploaded");
    // The staging block is rewritten only once the stream has consumed the last upload
    // from it: that upload opened the pass before, so with one pass still running (a
    // pipelined step) this does not wait for it to end.
    check_cuda(cudaEventSynchronize(batch.uploaded.get()), "cudaEventSynchronize (batch staging)");
    cuda_backend::pack_batch(desc, offsets, static_cast<int32_t*>(batch.staging.get()));
    check_cuda(cudaMemcpyAsync(batch.device.get(), batch.staging.get(), offsets.total * sizeof(int32_t),
                               cudaMemcpyHostToDevice, stream_),
               "cudaMemcpyAsync (batch)");
    check_cuda(cudaEventRecord(batch.uploaded.get(), stream_), "cudaEventRecord (batch uploaded)");
    batch.offsets = offsets;
    batch.fed = desc.has_fed_tokens();
    batch.logit_rows.assign(desc.logit_rows.begin(), desc.logit_rows.end());
    batch.n_tokens = desc.n_tokens();
    batch.n_seqs = desc.n_seqs();
    batch.max_kv_len = 0;
    for (const int32_t len : desc.kv_len) batch.max_kv_len = std::max<int64_t>(batch.max_kv_len, len);
    batch.block_size = limits.block_size;
    batch.n_blocks = limits.n_blocks;
}

bool CudaBackend::graph_begin(Batch& batch, const KvStorage& kv, const Scratch& scratch) {
    make_current();
    if (!batch.graphs) batch.graphs = std::make_shared<cuda_backend::StepGraphs>(graphs_);
    // Every host value the step's launch arguments are made of (step_graphs.h), gathered
    // only for a step that is recorded.
    auto signature = [&] {
        cuda_backend::StepSignature sig;
        sig.batch_block = batch.device.get();
        const cuda_backend::BatchOffsets& o = batch.offsets;
        sig.batch_offsets = {o.tokens,     o.positions, o.seq_of_token, o.kv_indptr, o.kv_indices,
                             o.kv_len,     o.logit_rows, o.fed_rows,   o.total};
        sig.fed_tokens = batch.fed;
        sig.latest_ids = scratch.ids.get();
        sig.n_tokens = batch.n_tokens;
        sig.n_seqs = batch.n_seqs;
        sig.logit_rows = batch.logit_rows;
        const cuda::AttentionSplitPlan plan = attention_plan(kv.geometry(), batch, scratch);
        sig.attention_splits = plan.n_splits;
        sig.attention_keys_per_split = plan.keys_per_split;
        sig.kv_arenas.reserve(2 * kv.k_.size());
        for (size_t l = 0; l < kv.k_.size(); ++l) {
            sig.kv_arenas.push_back(kv.k_[l].get());
            sig.kv_arenas.push_back(kv.v_[l].get());
        }
        sig.kv_capacity = kv.capacity_;
        sig.kv_type = static_cast<int>(kv.geometry().dtype);
        return sig;
    };
    // Up to kGemvMaxTokens tokens every op is a kernel of ours (no cuBLAS GEMM).
    const cuda_backend::StepShape shape{batch.n_tokens, static_cast<int64_t>(batch.logit_rows.size()),
                                        batch.block_size, batch.fed};
    return batch.graphs->begin(stream_, shape, cuda_backend::kGemvMaxTokens, signature);
}

cuda::AttentionSplitPlan CudaBackend::attention_plan(const KvGeometry& g, const Batch& batch,
                                                     const Scratch& scratch) const {
    cuda::AttentionSplitPlan plan{};
    if (batch.n_tokens <= scratch.attention_tokens)
        plan = cuda::plan_attention_split(batch.max_kv_len, batch.n_tokens * g.n_kv_heads, props_.multiProcessorCount,
                                          static_cast<int32_t>(g.block_size), scratch.max_splits);
    return plan;
}

void CudaBackend::graph_end(Batch& batch) {
    if (!batch.graphs) return;
    make_current();
    batch.graphs->end(stream_);
}

bool CudaBackend::graph_abort(Batch& batch) {
    if (!batch.graphs) return false;
    (void)cudaSetDevice(device_);
    return batch.graphs->abort(stream_);
}

cuda_backend::StepGraphStats CudaBackend::graph_stats(const Batch& batch) const {
    if (!batch.graphs) {
        cuda_backend::StepGraphStats s;
        s.disabled = !graphs_;
        return s;
    }
    return batch.graphs->stats();
}

// --- KV arenas -------------------------------------------------------------------------

cuda::PagedKvLayer CudaBackend::KvStorage::layer(int64_t l) const {
    cuda::PagedKvLayer p;
    p.k = k_[static_cast<size_t>(l)].get();
    p.v = v_[static_cast<size_t>(l)].get();
    p.type = geometry_.dtype == DType::F16 ? cuda::KvType::f16 : cuda::KvType::f32;
    p.n_kv_heads = static_cast<int32_t>(geometry_.n_kv_heads);
    p.head_dim = static_cast<int32_t>(geometry_.head_dim);
    p.block_size = static_cast<int32_t>(geometry_.block_size);
    return p;
}

std::byte* CudaBackend::KvStorage::k_block(int64_t layer, int64_t block) const {
    return static_cast<std::byte*>(k_[static_cast<size_t>(layer)].get()) + static_cast<size_t>(block) * slab_bytes_;
}

std::byte* CudaBackend::KvStorage::v_block(int64_t layer, int64_t block) const {
    return static_cast<std::byte*>(v_[static_cast<size_t>(layer)].get()) + static_cast<size_t>(block) * slab_bytes_;
}

CudaBackend::KvStorage CudaBackend::alloc_kv(const KvGeometry& geometry, int64_t n_blocks) {
    (void)kv_canonical_block_bytes(geometry);  // validates the geometry
    if (n_blocks < 0) fail(INLAY_ERR_INVALID_ARGUMENT, "negative KV block count");
    KvStorage kv;
    kv.geometry_ = geometry;
    kv.slab_bytes_ = static_cast<size_t>(geometry.n_kv_heads * geometry.block_size * geometry.head_dim) *
                     (geometry.dtype == DType::F16 ? 2 : 4);
    kv.k_.resize(static_cast<size_t>(geometry.n_layers));
    kv.v_.resize(static_cast<size_t>(geometry.n_layers));
    resize_kv(kv, n_blocks);
    return kv;
}

void CudaBackend::copy_kv_storage(const KvStorage& from, KvStorage& to, int64_t n_blocks) {
    const size_t bytes = static_cast<size_t>(n_blocks) * from.slab_bytes_;
    for (size_t l = 0; l < from.k_.size(); ++l) {
        if (bytes == 0) break;
        check_cuda(cudaMemcpyAsync(to.k_[l].get(), from.k_[l].get(), bytes, cudaMemcpyDeviceToDevice, stream_),
                   "cudaMemcpyAsync (KV grow)");
        check_cuda(cudaMemcpyAsync(to.v_[l].get(), from.v_[l].get(), bytes, cudaMemcpyDeviceToDevice, stream_),
                   "cudaMemcpyAsync (KV grow)");
    }
}

void CudaBackend::resize_kv(KvStorage& kv, int64_t n_blocks) {
    if (n_blocks < 0) fail(INLAY_ERR_INVALID_ARGUMENT, "negative KV block count");
    if (n_blocks <= kv.capacity_) {  // shrinking keeps the memory for regrowth
        kv.n_blocks_ = n_blocks;
        return;
    }
    make_current();
    // Geometric growth: a sequence that grows a block at a time is copied O(log n) times.
    const int64_t capacity = std::max(n_blocks, kv.capacity_ * 2);
    KvStorage grown;
    grown.geometry_ = kv.geometry_;
    grown.slab_bytes_ = kv.slab_bytes_;
    const size_t bytes = static_cast<size_t>(capacity) * kv.slab_bytes_;
    for (size_t l = 0; l < kv.k_.size(); ++l) {
        grown.k_.push_back(device_alloc(bytes, "KV cache (K)"));
        grown.v_.push_back(device_alloc(bytes, "KV cache (V)"));
        // Zero-filled so that a slot read before it is written is 0, as on the CPU.
        check_cuda(cudaMemsetAsync(grown.k_.back().get(), 0, bytes, stream_), "cudaMemsetAsync (KV)");
        check_cuda(cudaMemsetAsync(grown.v_.back().get(), 0, bytes, stream_), "cudaMemsetAsync (KV)");
    }
    copy_kv_storage(kv, grown, kv.n_blocks_);
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (KV grow)");
    grown.capacity_ = capacity;
    grown.n_blocks_ = n_blocks;
    kv = std::move(grown);
}

namespace {

void require_block(const CudaBackend::KvStorage& kv, int64_t block, const char* op) {
    require_kv_block(block, kv.n_blocks(), op);
}

}  // namespace

void CudaBackend::kv_copy_block(KvStorage& kv, int64_t src, int64_t dst) {
    require_block(kv, src, "kv_copy_block");
    require_block(kv, dst, "kv_copy_block");
    if (src == dst) return;
    make_current();
    for (int64_t l = 0; l < kv.geometry().n_layers; ++l) {
        check_cuda(cudaMemcpyAsync(kv.k_block(l, dst), kv.k_block(l, src), kv.slab_bytes_, cudaMemcpyDeviceToDevice,
                                   stream_),
                   "cudaMemcpyAsync (KV block copy)");
        check_cuda(cudaMemcpyAsync(kv.v_block(l, dst), kv.v_block(l, src), kv.slab_bytes_, cudaMemcpyDeviceToDevice,
                                   stream_),
                   "cudaMemcpyAsync (KV block copy)");
    }
}

// The canonical image [layer][k|v][kv_head][slot][head_dim]: each layer's K (and V) slab
// of a block is already [kv_head][slot][head_dim], so a block is 2 x n_layers copies.
void CudaBackend::kv_read_block(const KvStorage& kv, int64_t block, std::span<std::byte> out) {
    require_block(kv, block, "kv_read_block");
    if (out.size() != kv_canonical_block_bytes(kv.geometry()))
        fail(INLAY_ERR_INTERNAL, "kv_read_block: {} bytes given for a block of {}", out.size(),
             kv_canonical_block_bytes(kv.geometry()));
    make_current();
    for (int64_t l = 0; l < kv.geometry().n_layers; ++l) {
        std::byte* dst = out.data() + static_cast<size_t>(l) * 2 * kv.slab_bytes_;
        check_cuda(cudaMemcpyAsync(dst, kv.k_block(l, block), kv.slab_bytes_, cudaMemcpyDeviceToHost, stream_),
                   "cudaMemcpyAsync (KV block read)");
        check_cuda(cudaMemcpyAsync(dst + kv.slab_bytes_, kv.v_block(l, block), kv.slab_bytes_, cudaMemcpyDeviceToHost,
                                   stream_),
                   "cudaMemcpyAsync (KV block read)");
    }
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (KV block read)");
}

void CudaBackend::kv_write_block(KvStorage& kv, int64_t block, std::span<const std::byte> in) {
    require_block(kv, block, "kv_write_block");
    if (in.size() != kv_canonical_block_bytes(kv.geometry()))
        fail(INLAY_ERR_INTERNAL, "kv_write_block: {} bytes given for a block of {}", in.size(),
             kv_canonical_block_bytes(kv.geometry()));
    make_current();
    for (int64_t l = 0; l < kv.geometry().n_layers; ++l) {
        const std::byte* src = in.data() + static_cast<size_t>(l) * 2 * kv.slab_bytes_;
        check_cuda(cudaMemcpyAsync(kv.k_block(l, block), src, kv.slab_bytes_, cudaMemcpyHostToDevice, stream_),
                   "cudaMemcpyAsync (KV block write)");
        check_cuda(cudaMemcpyAsync(kv.v_block(l, block), src + kv.slab_bytes_, kv.slab_bytes_, cudaMemcpyHostToDevice,
                                   stream_),
                   "cudaMemcpyAsync (KV block write)");
    }
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (KV block write)");
}

}  // namespace inlay
