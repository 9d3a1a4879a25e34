#include "backend/cuda/cuda_plans.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace inlay::cuda_backend {
namespace {

size_t aligned4(size_t n) { return (n + 3) / 4 * 4; }

}  // namespace

BatchOffsets batch_offsets(const BatchDesc& b) {
    BatchOffsets o;
    size_t at = 0;
    auto place = [&at](size_t& where, size_t n) {
        where = at;
        at += aligned4(n);
    };
    place(o.tokens, b.tokens.size());
    place(o.positions, b.positions.size());
    place(o.seq_of_token, b.seq_of_token.size());
    place(o.kv_indptr, b.kv_indptr.size());
    place(o.kv_indices, b.kv_indices.size());
    place(o.kv_len, b.kv_len.size());
    place(o.logit_rows, b.logit_rows.size());
    place(o.fed_rows, b.fed_rows.size());
    o.total = at;
    return o;
}

void pack_batch(const BatchDesc& b, const BatchOffsets& o, int32_t* staging) {
    auto put = [staging](size_t at, std::span<const int32_t> from) {
        if (!from.empty()) std::memcpy(staging + at, from.data(), from.size() * sizeof(int32_t));
    };
    put(o.tokens, b.tokens);
    put(o.positions, b.positions);
    put(o.seq_of_token, b.seq_of_token);
    put(o.kv_indptr, b.kv_indptr);
    put(o.kv_indices, b.kv_indices);
    put(o.kv_len, b.kv_len);
    put(o.logit_rows, b.logit_rows);
    put(o.fed_rows, b.fed_rows);
}

std::optional<cuda::WeightFormat> weight_format(DType type) {
    switch (type) {
        case DType::F32: return cuda::WeightFormat::f32;
        case DType::F16: return cuda::WeightFormat::f16;
        case DType::BF16: return cuda::WeightFormat::bf16;
        case DType::Q8_0: return cuda::WeightFormat::q8_0;
        case DType::Q4_0: return cuda::WeightFormat::q4_0;
        case DType::Q4_K: return cuda::WeightFormat::q4_k;
        case DType::Q5_K: return cuda::WeightFormat::q5_k;
        case DType::Q6_K: return cuda::WeightFormat::q6_k;
        case DType::Q1_0: return cuda::WeightFormat::q1_0;
        default: return std::nullopt;
    }
}

MatmulPlan plan_matmul(DType weight, int64_t n_rows, int64_t n_cols, int64_t n_tokens, size_t scratch_halves) {
    if (n_tokens <= kGemvMaxTokens) return MatmulPlan{MatmulPath::gemv, 0};
    if (weight == DType::F32) return MatmulPlan{MatmulPath::gemm_f32, 0};
    if (weight == DType::F16 || weight == DType::BF16) return MatmulPlan{MatmulPath::gemm_half, 0};
    int64_t rows = static_cast<int64_t>(scratch_halves / static_cast<size_t>(std::max<int64_t>(n_cols, 1)));
    if (rows < 1)
        fail(INLAY_ERR_INTERNAL, "matmul: a dequantization scratch of {} halves holds no row of {}", scratch_halves,
             n_cols);
    if (rows >= n_rows) return MatmulPlan{MatmulPath::dequant_gemm, n_rows};
    if (rows >= 8) rows -= rows % 8;
    return MatmulPlan{MatmulPath::dequant_gemm, rows};
}

cuda::HalfType gemm_half_type(DType weight) {
    return weight == DType::BF16 ? cuda::HalfType::bf16 : cuda::HalfType::f16;
}

cuda::SampleRowParams sample_row_params(const RowSampling& row) {
    cuda::SampleRowParams p{};
    p.temperature = row.temperature;
    p.top_k = row.top_k;
    p.top_p = row.top_p;
    p.min_p = row.min_p;
    p.inv_temperature = row.inv_temperature;
    p.log_min_p = row.log_min_p;
    p.u = row.u;
    p.repeat_penalty = row.repeat_penalty;
    p.frequency_penalty = row.frequency_penalty;
    p.presence_penalty = row.presence_penalty;
    p.penalty_begin = row.penalty_begin;
    p.penalty_count = row.penalty_count;
    return p;
}

bool use_flash_prefill(int64_t n_tokens, int64_t n_seqs, int64_t head_dim, int64_t group, DType kv_type) {
    if (n_tokens < kFlashMinTokens || n_seqs <= 0 || n_tokens < kFlashMinTokensPerSeq * n_seqs) return false;
    if (kv_type != DType::F16 || head_dim > 4096 || group > 4096) return false;
    return cuda::attention_prefill_flash_supported(static_cast<int32_t>(head_dim), static_cast<int32_t>(group),
                                                   cuda::KvType::f16);
}

}  // namespace inlay::cuda_backend
