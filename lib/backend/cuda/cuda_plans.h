// The CUDA backend's host-side decisions, pure functions so that they are tested on
// machines without a GPU: how a step's batch is packed for its one upload, which matmul
// path serves a shape, and which stored formats have device kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "backend/common/batch.h"
#include "backend/common/sample_rows.h"
#include "core/dtype.h"
#include "kernels/cuda/inlay_cuda_kernels.h"

namespace inlay::cuda_backend {

// Offsets (in int32 elements, each array starting 16-byte aligned) of a BatchDesc's
// arrays in one staging block, and its total length.
struct BatchOffsets {
    size_t tokens = 0, positions = 0, seq_of_token = 0, kv_indptr = 0, kv_indices = 0, kv_len = 0, logit_rows = 0,
           fed_rows = 0;
    size_t total = 0;
};
BatchOffsets batch_offsets(const BatchDesc& batch);
// Copies the arrays to staging[...] at `offsets` (staging holds offsets.total int32).
void pack_batch(const BatchDesc& batch, const BatchOffsets& offsets, int32_t* staging);

// The device kernels' name for a stored type; nullopt for types they do not read.
std::optional<cuda::WeightFormat> weight_format(DType type);

enum class MatmulPath {
    gemv,          // few tokens: the fused dequantize-GEMV kernel, each weight byte read once
    gemm_f32,      // f32 weights: cuBLAS SGEMM on the stored matrix
    gemm_half,     // f16/bf16 weights: tensor-core GEMM (cublasGemmEx, f32 accumulation) on
                   // the stored matrix, activations rounded to the weights' type
    dequant_gemm,  // other formats: rows dequantized to f16 scratch in chunks, activations
                   // rounded to f16, then the same tensor-core GEMM per chunk
};
struct MatmulPlan {
    MatmulPath path = MatmulPath::gemv;
    int64_t rows_per_chunk = 0;  // dequant_gemm: rows per dequantized chunk
};
// The largest token count the GEMV kernel takes in one launch.
inline constexpr int64_t kGemvMaxTokens = 8;
// `scratch_halves`: the f16 elements the dequantization scratch holds. Chunks are a
// multiple of 8 rows when they can be (16-byte aligned operands for the tensor cores).
// Throws INLAY_ERR_INTERNAL when dequant_gemm is needed and the scratch holds no row.
MatmulPlan plan_matmul(DType weight, int64_t n_rows, int64_t n_cols, int64_t n_tokens, size_t scratch_halves);
// The half type the activations are rounded to on the tensor-core paths: bf16 for bf16
// weights (as llama.cpp rounds them), f16 otherwise.
cuda::HalfType gemm_half_type(DType weight);

// Whether a step's attention runs the tensor-core prefill kernel (attention_prefill_flash)
// instead of the decode kernel: a cache and shape it takes, and a batch of prompt chunks,
// at least kFlashMinTokens tokens and kFlashMinTokensPerSeq per sequence on average (its
// CTAs share K/V loads between the tokens of one sequence; decode steps of many sequences
// gain nothing from it and keep the decode kernel's f32 rounding).
inline constexpr int64_t kFlashMinTokens = 64;
inline constexpr int64_t kFlashMinTokensPerSeq = 16;
bool use_flash_prefill(int64_t n_tokens, int64_t n_seqs, int64_t head_dim, int64_t group, DType kv_type);

// A row's sampling as the sample_rows kernel reads it (every field as the host gave it).
cuda::SampleRowParams sample_row_params(const RowSampling& row);
static_assert(kMaxSampleTopK == cuda::kSampleMaxTopK, "the host's and the kernel's top_k limits agree");

}  // namespace inlay::cuda_backend
