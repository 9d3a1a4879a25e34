// CudaBackend's ops: each checks its sizes on the host, enqueues kernels of
// kernels/cuda (or cuBLAS) on the backend's stream and returns without waiting.
#include <algorithm>
#include <cstring>
#include <utility>
#include <optional>

#include "backend/common/op_checks.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_error.h"
#include "backend/cuda/cuda_plans.h"
#include "core/error.h"

namespace inlay {

using cuda_backend::check_cublas;
using cuda_backend::check_cuda;

namespace {

void require_size(const CudaBackend::Buffer& b, int64_t n, const char* op, const char* what) {
    if (n < 0 || b.size() < static_cast<size_t>(n))
        fail(INLAY_ERR_INTERNAL, "CudaBackend::{}: {} holds {} floats, needs {}", op, what, b.size(), n);
}

void require_norm_weight(const CudaBackend::Weight& w, int64_t dim, const char* op) {
    require_f32_vector(w.type, w.n_cols * w.n_rows, dim, op);
}

void require_batch_fits(const CudaBackend::KvStorage& kv, const CudaBackend::Batch& batch, const char* op) {
    inlay::require_batch_fits(batch.block_size, batch.n_blocks, kv.geometry(), kv.n_blocks(), op);
}

cuda::WeightFormat format_of(const CudaBackend::Weight& w) {
    const auto f = cuda_backend::weight_format(w.type);
    if (!f) fail(INLAY_ERR_UNSUPPORTED, "the CUDA backend has no kernels for {} weights", dtype_name(w.type));
    return *f;
}

}  // namespace

void CudaBackend::embed(const Weight& table, const Batch& batch, Buffer& out) {
    require_size(out, batch.n_tokens * table.n_cols, "embed", "out");
    make_current();
    // Token ids were validated against the vocabulary by prepare_batch.
    check_cuda(cuda::embed_rows(table.data(), format_of(table), table.n_rows, table.n_cols, table.row_stride,
                                batch.at(batch.offsets.tokens), batch.n_tokens, out.ptr(), table.n_cols, nullptr,
                                stream_),
               "embed_rows");
}

void CudaBackend::rms_norm(const Buffer& x, const Weight& weight, float eps, int64_t n_rows, int64_t dim, Buffer& out) {
    require_size(x, n_rows * dim, "rms_norm", "x");
    require_size(out, n_rows * dim, "rms_norm", "out");
    require_norm_weight(weight, dim, "rms_norm");
    make_current();
    check_cuda(cuda::rms_norm(x.ptr(), dim, static_cast<const float*>(weight.data()), n_rows, dim, eps, out.ptr(), dim,
                              stream_),
               "rms_norm");
}

void CudaBackend::add_rms_norm(Buffer& x, const Buffer& y, const Weight& weight, float eps, int64_t n_rows,
                               int64_t dim, Buffer& out) {
    require_size(x, n_rows * dim, "add_rms_norm", "x");
    require_size(y, n_rows * dim, "add_rms_norm", "y");
    require_size(out, n_rows * dim, "add_rms_norm", "out");
    require_norm_weight(weight, dim, "add_rms_norm");
    make_current();
    check_cuda(cuda::add_rms_norm(x.ptr(), dim, y.ptr(), dim, static_cast<const float*>(weight.data()), n_rows, dim,
                                  eps, out.ptr(), dim, stream_),
               "add_rms_norm");
}

void CudaBackend::matmul(const Weight& w, const Buffer& x, int64_t n_tokens, Buffer& y, Scratch& scratch) {
    require_size(y, n_tokens * w.n_rows, "matmul", "y");
    std::optional<cuda::HalfType> rounded;
    matmul_into(w, x, n_tokens, y.ptr(), scratch, rounded);
}

void CudaBackend::matmul_into(const Weight& w, const Buffer& x, int64_t n_tokens, float* y, Scratch& scratch,
                              std::optional<cuda::HalfType>& rounded) {
    const int64_t n_in = w.n_cols, n_out = w.n_rows;
    require_size(x, n_tokens * n_in, "matmul", "x");
    if (n_tokens == 0) return;
    make_current();
    const cuda_backend::MatmulPlan plan =
        cuda_backend::plan_matmul(w.type, n_out, n_in, n_tokens, static_cast<size_t>(scratch.dequant_halves));
    const float one = 1.0f, zero = 0.0f;
    const int m = static_cast<int>(n_out), n = static_cast<int>(n_tokens), k = static_cast<int>(n_in);
    // x rounded once per op into scratch.half_x.
    auto round_x = [&](cuda::HalfType type) {
        if (rounded == type) return;
        if (n_tokens * n_in > scratch.half_x_elems)
            fail(INLAY_ERR_INTERNAL, "CudaBackend::matmul: the half-activation scratch holds {} elements, needs {}",
                 scratch.half_x_elems, n_tokens * n_in);
        check_cuda(cuda::round_to_half(x.ptr(), n_tokens * n_in, type, scratch.half_x.get(), stream_), "round_to_half");
        rounded = type;
    };
    // C[rows][n_tokens] (column-major, ldc n_out) = A^T x for `rows` rows of a
    // row-major half matrix A (lda elements apart): tensor cores, f32 accumulation.
    auto gemm_half = [&](const void* a, int lda, cuda::HalfType type, int rows, float* c) {
        const cudaDataType t = type == cuda::HalfType::bf16 ? CUDA_R_16BF : CUDA_R_16F;
        check_cublas(blas_->gemm_ex(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, rows, n, k, &one, a, t, lda,
                                    scratch.half_x.get(), t, k, &zero, c, CUDA_R_32F, m, CUBLAS_COMPUTE_32F,
                                    CUBLAS_GEMM_DEFAULT),
                     "cublasGemmEx");
    };
    switch (plan.path) {
        case cuda_backend::MatmulPath::gemv:
            check_cuda(cuda::gemv(w.data(), format_of(w), n_out, n_in, w.row_stride, x.ptr(), n_in,
                                  static_cast<int32_t>(n_tokens), y, n_out, stream_),
                       "gemv");
            return;
        case cuda_backend::MatmulPath::gemm_f32:
            // Row-major W [n_out][n_in] is column-major W^T; Y^T = W X^T in column-major.
            check_cublas(blas_->sgemm(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one,
                                      static_cast<const float*>(w.data()), static_cast<int>(w.row_stride / sizeof(float)),
                                      x.ptr(), k, &zero, y, m),
                         "cublasSgemm");
            return;
        case cuda_backend::MatmulPath::gemm_half: {
            const cuda::HalfType type = cuda_backend::gemm_half_type(w.type);
            round_x(type);
            gemm_half(w.data(), static_cast<int>(w.row_stride / 2), type, m, y);
            return;
        }
        case cuda_backend::MatmulPath::dequant_gemm:
            round_x(cuda::HalfType::f16);
            for (int64_t r0 = 0; r0 < n_out; r0 += plan.rows_per_chunk) {
                const int64_t nr = std::min(plan.rows_per_chunk, n_out - r0);
                const auto* rows = static_cast<const std::byte*>(w.data()) + static_cast<size_t>(r0) * w.row_stride;
                check_cuda(cuda::dequantize_rows_f16(rows, format_of(w), nr, n_in, w.row_stride, scratch.dequant.get(),
                                                     n_in, stream_),
                           "dequantize_rows_f16");
                gemm_half(scratch.dequant.get(), k, cuda::HalfType::f16, static_cast<int>(nr), y + r0);
            }
            return;
    }
}

void CudaBackend::matmul_swiglu(const Weight& gate, const Weight& up, const Buffer& x, int64_t n_tokens, Buffer& out,
                                Scratch& scratch) {
    if (gate.n_cols != up.n_cols || gate.n_rows != up.n_rows)
        fail(INLAY_ERR_INTERNAL, "matmul_swiglu: gate {}x{} and up {}x{} differ", gate.n_rows, gate.n_cols, up.n_rows,
             up.n_cols);
    require_size(scratch.up, n_tokens * up.n_rows, "matmul_swiglu", "scratch");
    require_size(out, n_tokens * gate.n_rows, "matmul_swiglu", "out");
    std::optional<cuda::HalfType> rounded;
    matmul_into(gate, x, n_tokens, out.ptr(), scratch, rounded);
    matmul_into(up, x, n_tokens, scratch.up.ptr(), scratch, rounded);
    check_cuda(cuda::swiglu(out.ptr(), scratch.up.ptr(), n_tokens * up.n_rows, stream_), "swiglu");
}

// Three products one after the other on the stream, x rounded once for all three on the
// tensor-core paths (one GEMV reading the input once for all three is later work).
void CudaBackend::matmul_qkv(const Weight& wq, const Weight& wk, const Weight& wv, const Buffer& x, int64_t n_tokens,
                             Buffer& q, Buffer& k, Buffer& v, Scratch& scratch) {
    require_size(q, n_tokens * wq.n_rows, "matmul_qkv", "q");
    require_size(k, n_tokens * wk.n_rows, "matmul_qkv", "k");
    require_size(v, n_tokens * wv.n_rows, "matmul_qkv", "v");
    std::optional<cuda::HalfType> rounded;
    matmul_into(wq, x, n_tokens, q.ptr(), scratch, rounded);
    matmul_into(wk, x, n_tokens, k.ptr(), scratch, rounded);
    matmul_into(wv, x, n_tokens, v.ptr(), scratch, rounded);
}

void CudaBackend::rope_kv_append(Buffer& q, Buffer& k, const Buffer& v, const Weight* q_norm, const Weight* k_norm,
                                 float eps, const RopeParams& rope, const Weight* freq_factors, KvStorage& kv,
                                 int64_t layer, int64_t n_heads, const Batch& batch) {
    const KvGeometry& g = kv.geometry();
    const int64_t n = batch.n_tokens;
    require_batch_fits(kv, batch, "rope_kv_append");
    if (layer < 0 || layer >= g.n_layers) fail(INLAY_ERR_INTERNAL, "rope_kv_append: layer {} of {}", layer, g.n_layers);
    require_size(q, n * n_heads * g.head_dim, "rope_kv_append", "q");
    require_size(k, n * g.n_kv_heads * g.head_dim, "rope_kv_append", "k");
    require_size(v, n * g.n_kv_heads * g.head_dim, "rope_kv_append", "v");
    if (q_norm) require_norm_weight(*q_norm, g.head_dim, "rope_kv_append (q norm)");
    if (k_norm) require_norm_weight(*k_norm, g.head_dim, "rope_kv_append (k norm)");
    if (freq_factors) require_norm_weight(*freq_factors, rope.n_rot / 2, "rope_kv_append (frequency factors)");
    make_current();
    cuda::RopeConfig rc;
    rc.style = rope.style == RopeStyle::normal ? cuda::RopeStyle::normal : cuda::RopeStyle::neox;
    rc.n_rot = static_cast<int32_t>(rope.n_rot);
    rc.freq_base = rope.freq_base;
    rc.freq_scale = rope.freq_scale;
    if (rope.n_rot == 0) {
        // No rotation: the kernel rotates at least one pair, so rotate it by angle 0
        // (cos 1, sin 0: x*1 - y*0 and x*0 + y*1 are exactly x and y).
        rc.n_rot = 2;
        rc.freq_scale = 0.0f;
    }
    rc.freq_factors = freq_factors ? static_cast<const float*>(freq_factors->data()) : nullptr;
    check_cuda(cuda::qk_norm_rope_kv_append(
                   q.ptr(), n_heads * g.head_dim, static_cast<int32_t>(n_heads), k.ptr(), g.n_kv_heads * g.head_dim,
                   v.ptr(), g.n_kv_heads * g.head_dim, q_norm ? static_cast<const float*>(q_norm->data()) : nullptr,
                   k_norm ? static_cast<const float*>(k_norm->data()) : nullptr, eps, rc, kv.layer(layer),
                   batch.tokens(), nullptr, stream_),
               "qk_norm_rope_kv_append");
}

void CudaBackend::attention(const Buffer& q, const KvStorage& kv, int64_t layer, const Batch& batch, int64_t n_heads,
                            float scale, Buffer& out, Scratch& scratch) {
    const KvGeometry& g = kv.geometry();
    const int64_t n = batch.n_tokens;
    require_batch_fits(kv, batch, "attention");
    if (layer < 0 || layer >= g.n_layers) fail(INLAY_ERR_INTERNAL, "attention: layer {} of {}", layer, g.n_layers);
    if (n_heads % g.n_kv_heads != 0) fail(INLAY_ERR_INTERNAL, "attention: {} heads over {} KV heads", n_heads, g.n_kv_heads);
    require_size(q, n * n_heads * g.head_dim, "attention", "q");
    require_size(out, n * n_heads * g.head_dim, "attention", "out");
    const auto group = static_cast<int32_t>(n_heads / g.n_kv_heads);
    const cuda::KvType type = g.dtype == DType::F16 ? cuda::KvType::f16 : cuda::KvType::f32;
    if (!cuda::attention_supported(static_cast<int32_t>(g.head_dim), group, static_cast<int32_t>(g.block_size), type))
        fail(INLAY_ERR_UNSUPPORTED,
             "the CUDA backend has no attention kernel for head_dim {}, {} query heads per KV head, blocks of {}",
             g.head_dim, group, g.block_size);
    make_current();
    // The kernel chosen for this shape (an NVRTC variant compiled on first use, or null
    // for the launcher's built-in or generic kernel). A shape's first use may compile and
    // load a kernel, which must not happen inside a recorded step: that step is made
    // again, directly (step_graphs.h).
    const bool recording = batch.graphs && batch.graphs->capturing();
    const auto choice = find_attention_kernel(g.head_dim, group, g.block_size, g.dtype, !recording);
    if (!choice) {
        batch.graphs->refuse_current();
        throw StepRetry("CUDA graph: the attention kernel of a new shape is loaded outside a recording");
    }
    const void* kernel = choice->kernel;
    const int64_t q_stride = n_heads * g.head_dim;
    if (cuda_backend::use_flash_prefill(n, batch.n_seqs, g.head_dim, group, g.dtype)) {
        check_cuda(cuda::attention_prefill_flash(q.ptr(), q_stride, static_cast<int32_t>(n_heads), kv.layer(layer),
                                                 batch.tokens(), scale, out.ptr(), q_stride, stream_),
                   "attention_prefill_flash");
        return;
    }
    const cuda::AttentionSplitPlan plan = attention_plan(g, batch, scratch);
    if (plan.n_splits > 1) {
        check_cuda(cuda::attention_decode_split(q.ptr(), q_stride, static_cast<int32_t>(n_heads), kv.layer(layer),
                                                batch.tokens(), scale, plan, scratch.attention.ptr(), out.ptr(),
                                                q_stride, stream_, kernel),
                   "attention_decode_split");
        return;
    }
    check_cuda(cuda::attention_decode(q.ptr(), q_stride, static_cast<int32_t>(n_heads), kv.layer(layer), batch.tokens(),
                                      scale, out.ptr(), q_stride, stream_, kernel),
               "attention_decode");
}

void CudaBackend::add(Buffer& x, const Buffer& y, int64_t n) {
    require_size(x, n, "add", "x");
    require_size(y, n, "add", "y");
    if (n == 0) return;
    make_current();
    check_cuda(cuda::add(x.ptr(), y.ptr(), n, stream_), "add");
}

void CudaBackend::gather_logit_rows(const Buffer& x, const Batch& batch, int64_t row_length, Buffer& out) {
    const auto& rows = batch.logit_rows;
    require_size(out, static_cast<int64_t>(rows.size()) * row_length, "gather_logit_rows", "out");
    make_current();
    const auto len = static_cast<size_t>(row_length);
    for (size_t i = 0; i < rows.size(); ++i) {
        if (rows[i] < 0 || (static_cast<size_t>(rows[i]) + 1) * len > x.size())
            fail(INLAY_ERR_INTERNAL, "gather_logit_rows: row {} outside the buffer", rows[i]);
        check_cuda(cudaMemcpyAsync(out.ptr() + i * len, x.ptr() + static_cast<size_t>(rows[i]) * len,
                                   len * sizeof(float), cudaMemcpyDeviceToDevice, stream_),
                   "cudaMemcpyAsync (logit rows)");
    }
}

void CudaBackend::check_ids_slot(const Scratch& scratch, int64_t n_rows, const char* op) {
    if (n_rows > scratch.ids_rows)
        fail(INLAY_ERR_INTERNAL, "{}: {} rows, the scratch holds {}", op, n_rows, scratch.ids_rows);
    if (scratch.unread == kMaxUnreadIds)
        fail(INLAY_ERR_INTERNAL, "{}: the ids of {} earlier steps are not read yet", op, kMaxUnreadIds);
}

void CudaBackend::queue_ids_copy(Scratch& scratch, int64_t n_rows) {
    const auto slot = static_cast<size_t>(scratch.next_ids);
    // The slot's last copy was read (unread < kMaxUnreadIds), so its host memory is free.
    check_cuda(cudaMemcpyAsync(scratch.ids_host[slot].get(), scratch.ids.get(),
                               static_cast<size_t>(n_rows) * sizeof(int32_t), cudaMemcpyDeviceToHost, stream_),
               "cudaMemcpyAsync (row ids)");
    check_cuda(cudaEventRecord(scratch.ids_copied[slot].get(), stream_), "cudaEventRecord (row ids)");
    scratch.id_rows[slot] = n_rows;
    scratch.next_ids = (scratch.next_ids + 1) % kMaxUnreadIds;
    ++scratch.unread;
}

void CudaBackend::argmax_rows(const Buffer& x, int64_t n_rows, int64_t n_cols, Scratch& scratch) {
    require_shape(n_rows, n_cols, "argmax_rows");
    require_size(x, n_rows * n_cols, "argmax_rows", "x");
    check_ids_slot(scratch, n_rows, "argmax_rows");
    make_current();
    if (n_rows > 0)
        check_cuda(
            cuda::argmax_rows(x.ptr(), n_rows, n_cols, n_cols, static_cast<int32_t*>(scratch.ids.get()), stream_),
            "argmax_rows");
    queue_ids_copy(scratch, n_rows);
}

void CudaBackend::read_ids(Scratch& scratch, int64_t n_rows, int32_t* ids) {
    if (scratch.unread == 0) fail(INLAY_ERR_INTERNAL, "read_ids: no ids are waiting");
    const auto oldest = static_cast<size_t>((scratch.next_ids - scratch.unread + kMaxUnreadIds) % kMaxUnreadIds);
    const int64_t rows = scratch.id_rows[oldest];
    --scratch.unread;  // read, refused or failed: the slot is free again either way
    if (rows != n_rows) fail(INLAY_ERR_INTERNAL, "read_ids: {} rows asked, the step had {}", n_rows, rows);
    make_current();
    check_cuda(cudaEventSynchronize(scratch.ids_copied[oldest].get()), "cudaEventSynchronize (row ids)");
    std::memcpy(ids, scratch.ids_host[oldest].get(), static_cast<size_t>(rows) * sizeof(int32_t));
}

void CudaBackend::feed_tokens(Batch& batch, const Scratch& scratch) {
    if (!batch.fed) return;
    make_current();
    // prepare_batch checked every fed row against the latest ids' count.
    check_cuda(cuda::feed_tokens(batch.at(batch.offsets.tokens), std::as_const(batch).at(batch.offsets.fed_rows),
                                 batch.n_tokens, static_cast<const int32_t*>(scratch.ids.get()), stream_),
               "feed_tokens");
}

void CudaBackend::sample_rows(Buffer& logits, int64_t n_rows, int64_t n_cols, const SampleRows& rows,
                              Scratch& scratch) {
    require_shape(n_rows, n_cols, "sample_rows");
    require_size(logits, n_rows * n_cols, "sample_rows", "logits");
    validate_sample_rows(rows, n_rows, n_cols);
    check_ids_slot(scratch, n_rows, "sample_rows");
    make_current();
    if (n_rows > 0) {
        // This slot's staging is rewritten once the stream has consumed its last copy (two
        // passes ago: the pass before, a pipelined step's predecessor, may still be running).
        const auto slot = static_cast<size_t>(scratch.next_staging);
        scratch.next_staging = (scratch.next_staging + 1) % kMaxUnreadIds;
        check_cuda(cudaEventSynchronize(scratch.sample_staged[slot].get()), "cudaEventSynchronize (sampling staging)");
        auto* params = static_cast<cuda::SampleRowParams*>(scratch.sample_params_host[slot].get());
        for (int64_t r = 0; r < n_rows; ++r)
            params[r] = cuda_backend::sample_row_params(rows.rows[static_cast<size_t>(r)]);
        auto* pairs = static_cast<cuda::PenaltyPair*>(scratch.penalties_host[slot].get());
        for (size_t i = 0; i < rows.penalties.size(); ++i)
            pairs[i] = {rows.penalties[i].token, rows.penalties[i].count};
        check_cuda(cudaMemcpyAsync(scratch.sample_params.get(), params,
                                   static_cast<size_t>(n_rows) * sizeof(cuda::SampleRowParams),
                                   cudaMemcpyHostToDevice, stream_),
                   "cudaMemcpyAsync (sampling parameters)");
        if (!rows.penalties.empty())
            check_cuda(cudaMemcpyAsync(scratch.penalties.get(), pairs,
                                       rows.penalties.size() * sizeof(cuda::PenaltyPair), cudaMemcpyHostToDevice,
                                       stream_),
                       "cudaMemcpyAsync (sampling penalties)");
        check_cuda(cudaEventRecord(scratch.sample_staged[slot].get(), stream_), "cudaEventRecord (sampling staging)");
        check_cuda(cuda::sample_rows(logits.ptr(), n_rows, n_cols, n_cols,
                                     static_cast<const cuda::SampleRowParams*>(scratch.sample_params.get()),
                                     static_cast<const cuda::PenaltyPair*>(scratch.penalties.get()),
                                     static_cast<int32_t*>(scratch.ids.get()), stream_),
                   "sample_rows");
    }
    queue_ids_copy(scratch, n_rows);
}

}  // namespace inlay
