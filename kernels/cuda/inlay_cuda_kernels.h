// inlay's stand-alone CUDA kernels: host launch functions for the CUDA backend.
//
// Every function takes raw device pointers, sizes, strides and a stream, enqueues its
// kernel(s) and returns the cudaError_t of the launch: cudaErrorInvalidValue for bad
// arguments (checked on the host before anything is enqueued), cudaErrorNotSupported for
// a shape this build has no kernel for, else cudaGetLastError() after each launch (which
// also reports an earlier asynchronous error of the same thread). Nothing synchronises.
// Sizes of 0 (no tokens, no rows) enqueue nothing and return cudaSuccess.
//
// Conventions: matrices are row-major; a "stride" is the distance between consecutive
// rows in elements (floats) unless its name says bytes; all activations are float32.
// Nothing here includes inlay's lib/: the shapes and formats are described below, and
// weight blocks are byte for byte GGUF's (docs: shared/docs/formats.md).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace inlay::cuda {

// Stored weight formats; block layouts exactly as in GGUF files.
enum class WeightFormat : int { f32, f16, bf16, q8_0, q4_0, q4_k, q5_k, q6_k, q1_0 };

// Element type of the K/V arenas.
enum class KvType : int { f16, f32 };

enum class RopeStyle : int {
    normal,  // rotate adjacent pairs (x[2i], x[2i+1]) (GGUF llama)
    neox,    // rotate pairs (x[i], x[i + n_rot/2]) (qwen2/3, HF llama)
};

// Elements per block (1 for f32/f16/bf16), bytes per block, and the bytes of a row of
// n_cols elements (0 when n_cols is not a multiple of the block). Host functions.
[[nodiscard]] int64_t weight_block_elems(WeightFormat format);
[[nodiscard]] int64_t weight_block_bytes(WeightFormat format);
[[nodiscard]] size_t weight_row_bytes(WeightFormat format, int64_t n_cols);

// ---------------------------------------------------------------------------------------
// Embedding rows.
//   out[t][0..n_cols) = dequantized row ids[t] of table, for t < n_tokens.
//   table: n_rows rows of n_cols elements in `format`, row_stride_bytes apart (a multiple
//          of the element size for f32/f16/bf16, of 2 for the block formats; n_cols a
//          multiple of the block size). ids: device int32[n_tokens]. out: f32, out_stride.
// An id outside [0, n_rows) is clamped into it (the row read is row 0 or n_rows-1, so no
// out-of-bounds read) and, when error_flag is not null, *error_flag is set to 1 (it is
// never cleared; the caller zeroes it). Values are exact (f32 products of the block scale
// and the level; K-quants: one fused multiply-add d*sc*q - dmin*m, rounded once).
cudaError_t embed_rows(const void* table, WeightFormat format, int64_t n_rows, int64_t n_cols, size_t row_stride_bytes,
                       const int32_t* ids, int64_t n_tokens, float* out, int64_t out_stride, int* error_flag,
                       cudaStream_t stream);

// Rows 0..n_rows of a table dequantized and rounded to IEEE binary16 (nearest even,
// saturating at +-65504 so that no infinity reaches a GEMM), for the tensor-core GEMM of
// large batches: out[r][c] for r < n_rows, c < n_cols, out_stride elements apart. Same
// argument rules as embed_rows.
cudaError_t dequantize_rows_f16(const void* table, WeightFormat format, int64_t n_rows, int64_t n_cols,
                                size_t row_stride_bytes, void* out, int64_t out_stride, cudaStream_t stream);

// Half-precision element types of a tensor-core GEMM's operands.
enum class HalfType : int { f16, bf16 };

// out[i] = x[i] rounded to nearest even in `type`, for i < n (activations for a
// tensor-core GEMM). f16 saturates at +-65504 (no infinity from a large activation); NaN
// stays NaN. x 4-byte aligned, out 2-byte aligned.
cudaError_t round_to_half(const float* x, int64_t n, HalfType type, void* out, cudaStream_t stream);

// ---------------------------------------------------------------------------------------
// Greedy sampling: ids[r] = the index of row r's largest value, the first of equal ones;
// NaN is never picked (-inf is, when nothing is larger); -1 when every value of the row
// is NaN (or n_cols is 0). Rows are x_stride floats apart; ids: device int32[n_rows].
// The same rule as the host's sampling argmax (lib/core/argmax.h).
cudaError_t argmax_rows(const float* x, int64_t n_rows, int64_t n_cols, int64_t x_stride, int32_t* ids,
                        cudaStream_t stream);

// Sampling: ids[r] = the token drawn from row r with params[r], by the host sampler's
// rule (lib/sampling/sampler.h), so that the same logits, parameters and draw give the same
// token on the host and here:
//  1. Penalties, in place in x: for each of the row's penalty entries (token, count),
//     pairs[params.penalty_begin + i] for i < penalty_count (distinct tokens),
//     x[token] = (x > 0 ? x / repeat : x * repeat) - (float(count) * frequency + presence),
//     each operation rounded to float.
//  2. temperature <= 0: the argmax of the row (argmax_rows' rule).
//  3. Otherwise top_k (1 <= top_k <= kSampleMaxTopK): the top_k best non-NaN values,
//     best = larger value, then lower index (-0 and +0 equal); fewer when fewer are not
//     NaN; -1 when none is. If the best is -inf, its index. Then, over that set sorted
//     best first, in double: w1[i] = exp((v[i] - v[0]) * 1) (1 when v[i] == v[0]); with
//     min_p > 0, the prefix whose v - v[0] >= log_min_p (the first always); with
//     top_p < 1, the shortest prefix whose running sum of w1 (added one by one in order)
//     reaches top_p * (sum of all top_k w1, added in order), else all. The survivors
//     sorted by index get w[i] = exp((v[i] - v[0]) * inv_temperature) (1 at v[0]); the
//     token is the first whose running sum exceeds u * (their sum), each added in index
//     order; when rounding keeps every sum at or below, the last with w > 0.
// Doubles add and multiply one rounding at a time; exp is CUDA's (within 1 ulp of the
// host's), so a draw differs from the host's only where a sum lands within an ulp of its
// target. Rows are x_stride floats apart; params, pairs and ids are device memory.
constexpr int32_t kSampleMaxTopK = 1024;
struct SampleRowParams {
    float temperature;
    int32_t top_k;
    float top_p;
    float min_p;
    double inv_temperature;
    double log_min_p;
    double u;
    float repeat_penalty;
    float frequency_penalty;
    float presence_penalty;
    int32_t penalty_begin;
    int32_t penalty_count;
};
struct PenaltyPair {
    int32_t token;
    int32_t count;
};
cudaError_t sample_rows(float* x, int64_t n_rows, int64_t n_cols, int64_t x_stride, const SampleRowParams* params,
                        const PenaltyPair* pairs, int32_t* ids, cudaStream_t stream);

// ---------------------------------------------------------------------------------------
// RMSNorm. out[r][c] = x[r][c] * (1 / sqrt(mean_c(x[r][c]^2) + eps)) * w[c] for
// r < n_rows, c < n_cols. w: f32[n_cols]. out may be x (same stride) for in place.
// Rounding: one CTA per row; each thread sums the squares of its elements in float
// (columns threadIdx, threadIdx + blockDim, ...; four at a time on the aligned path), then
// a xor-butterfly sums within each warp and warp 0 sums the warp totals in warp order.
// The scale is 1 / sqrtf(sum / n_cols + eps) (IEEE sqrt and division), applied as
// (x * scale) * w.
cudaError_t rms_norm(const float* x, int64_t x_stride, const float* w, int64_t n_rows, int64_t n_cols, float eps,
                     float* out, int64_t out_stride, cudaStream_t stream);

// Fused residual add + RMSNorm: x[r] += y[r] (x is updated in place, rounded to f32),
// then out[r] = rms_norm(x[r]) as above. out must not overlap y; it may be x.
cudaError_t add_rms_norm(float* x, int64_t x_stride, const float* y, int64_t y_stride, const float* w, int64_t n_rows,
                         int64_t n_cols, float eps, float* out, int64_t out_stride, cudaStream_t stream);

// ---------------------------------------------------------------------------------------
// A ragged batch of tokens over a paged KV cache, CSR-style; all arrays are device int32.
//   positions[n_tokens]     position of token t in its sequence
//   seq_of_token[n_tokens]  its sequence, in [0, n_seqs)
//   kv_indptr[n_seqs + 1]   sequence s owns block ids kv_indices[kv_indptr[s] .. kv_indptr[s+1])
//   kv_indices[...]         block ids; the block of position p is entry p / block_size
//   kv_len[n_seqs]          KV length of s after this step (cached + new tokens)
struct TokenBatch {
    const int32_t* positions = nullptr;
    const int32_t* seq_of_token = nullptr;
    const int32_t* kv_indptr = nullptr;
    const int32_t* kv_indices = nullptr;
    const int32_t* kv_len = nullptr;
    int32_t n_tokens = 0;
    int32_t n_seqs = 0;
};

// One layer of the paged KV cache on the device: two arenas (K and V) with the same
// layout [block][kv_head][slot][head_dim] of `type` elements, i.e. element (block b,
// head g, slot s, dim d) at ((b * n_kv_heads + g) * block_size + s) * head_dim + d. Token
// at position p of a sequence lives in block table[p / block_size], slot p % block_size.
// Both arena pointers must be 16-byte aligned.
struct PagedKvLayer {
    void* k = nullptr;
    void* v = nullptr;
    KvType type = KvType::f16;
    int32_t n_kv_heads = 0;
    int32_t head_dim = 0;
    int32_t block_size = 16;
};

struct RopeConfig {
    RopeStyle style = RopeStyle::normal;
    int32_t n_rot = 0;  // rotated dims per head: even, 2 <= n_rot <= head_dim
    float freq_base = 10000.0f;
    float freq_scale = 1.0f;              // linear position scaling
    const float* freq_factors = nullptr;  // optional device f32[n_rot / 2] divisors (llama3)
};

// Per-head RMSNorm (optional), RoPE and KV append for a ragged batch, one CTA per token:
//   q: [n_tokens][n_q_heads][head_dim] f32, q_stride floats between tokens; updated in place.
//   k, v: [n_tokens][n_kv_heads][head_dim] f32, k_stride / v_stride; read only.
//   q_norm_w / k_norm_w: optional f32[head_dim] (Qwen3): x = x / sqrt(mean(x^2) + norm_eps) * w
//     over each head before RoPE (sum of squares: float, xor-butterfly over one warp).
//   RoPE on q and k: pair i (i < n_rot/2) rotates by
//     theta_i = pos * freq_scale * base^(-2i/n_rot) / freq_factor[i]   (float: powf, sincosf)
//   normal: pairs (2i, 2i+1); neox: pairs (i, i + n_rot/2); dims >= n_rot are unchanged.
//   The rotated k and the unchanged v are stored at the token's slot of `kv` (rounded to
//   f16 with round-to-nearest-even for an f16 cache).
// A token whose position is negative or not covered by its sequence's block table gets
// no K/V write (its q is still rotated) and sets *error_flag = 1 when error_flag is not
// null. head_dim <= 256, head_dim % 2 == 0. n_q_heads and n_kv_heads <= 1024.
cudaError_t qk_norm_rope_kv_append(float* q, int64_t q_stride, int32_t n_q_heads, const float* k, int64_t k_stride,
                                   const float* v, int64_t v_stride, const float* q_norm_w, const float* k_norm_w,
                                   float norm_eps, const RopeConfig& rope, const PagedKvLayer& kv,
                                   const TokenBatch& batch, int* error_flag, cudaStream_t stream);

// ---------------------------------------------------------------------------------------
// A pipelined step's fed tokens: tokens[i] = max(ids[fed_rows[i]], 0) where
// fed_rows[i] >= 0 (ids: the previous step's chosen ids, -1 for an all-NaN row, which
// becomes the valid id 0 in a row whose result the caller discards); other tokens are
// left as they are. All arrays device int32; fed_rows[i] must index ids.
cudaError_t feed_tokens(int32_t* tokens, const int32_t* fed_rows, int64_t n_tokens, const int32_t* ids,
                        cudaStream_t stream);

// x[i] += y[i] for i < n (f32, one rounding each: bitwise x[i] + y[i]). x and y must not
// overlap unless equal.
cudaError_t add(float* x, const float* y, int64_t n, cudaStream_t stream);

// ---------------------------------------------------------------------------------------
// SwiGLU. gate[i] = silu(gate[i]) * up[i] for i < n, silu(g) = g / (1 + expf(-g)).
cudaError_t swiglu(float* gate, const float* up, int64_t n, cudaStream_t stream);

// The same reading gate and up from one buffer: gate_up[t] = [gate (n_ff) | up (n_ff)]
// (what a gemv over the gate and up weights stacked as one matrix produces), in_stride
// floats between tokens (>= 2 * n_ff); out[t][j] = silu(gate_up[t][j]) * gate_up[t][n_ff + j].
// out may be gate_up (same stride) for in place.
cudaError_t swiglu_fused(const float* gate_up, int64_t in_stride, int64_t n_tokens, int64_t n_ff, float* out,
                         int64_t out_stride, cudaStream_t stream);

// ---------------------------------------------------------------------------------------
// Paged causal GQA attention over the cache of qk_norm_rope_kv_append.
//   q:   [n_tokens][n_q_heads][head_dim] f32, q_stride floats between tokens (RoPE applied)
//   out: [n_tokens][n_q_heads][head_dim] f32, out_stride floats between tokens
// Token t of sequence s at position p attends, with query head h, to positions
// [0, min(p + 1, kv_len[s], blocks of s * block_size)) of kv head h / (n_q_heads /
// n_kv_heads): out = softmax(scale * q.K^T) V. A token with nothing to attend to (p < 0 or
// kv_len[s] == 0) gets zeros.
// Arithmetic: K/V are converted to f32, q stays f32; q.k sums in f32 (a xor-butterfly
// over a warp), scores are multiplied by scale * log2(e) and exponentiated with exp2f; an
// online softmax per warp over chunks of keys, the warps of a CTA merged in warp order.
// One CTA per (token, kv head): the query heads of one GQA group share each K/V load.
// The kernels built by nvcc cover head_dim 64/128, group 1/2/4/8, block_size 16, f16/f32
// KV (attention_has_builtin); other shapes (head_dim a multiple of 32 up to 256, any
// group up to 32, block_size a power of two) are compiled at load time with NVRTC
// (nvrtc_sources.h) and passed as `kernel` (a cudaKernel_t from cudaLibraryGetKernel, or
// any paged_attention_kernel instantiation).
// Without a built-in kernel and without `kernel`, a generic kernel serves every shape with
// head_dim even in [2, 256], group 1..32, any block_size >= 1, f16/f32 KV (head_dim, group
// and block_size are run-time values; paged_attention_generic.cu). Same CTA per (token,
// kv head), the group sharing each K/V load (tiles of up to 32 keys staged in shared
// memory as f32), online softmax in f32 in log2 units; its rounding differs from the
// templated kernels': q.k sums in f32 in dimension order with fmaf (no butterfly), per
// tile l = l * exp2f(m - M) + (xor-butterfly sum of the tile's exp2f(score - M)), and
// acc = acc * exp2f(m - M) then + p * v with fmaf in key order. Other shapes return
// cudaErrorNotSupported.
[[nodiscard]] bool attention_has_builtin(int32_t head_dim, int32_t group, int32_t block_size, KvType type);

// Whether attention_decode / _split / _prefill run a shape without a `kernel` argument:
// true for every shape with a built-in kernel (attention_has_builtin) and every shape the
// generic kernel serves (head_dim even in [2, 256], group 1..32, block_size >= 1, f16/f32).
[[nodiscard]] bool attention_supported(int32_t head_dim, int32_t group, int32_t block_size, KvType type);

// How to split the keys of each (token, kv head) among CTAs. keys_per_split is a multiple
// of block_size; split i covers keys [i * keys_per_split, (i + 1) * keys_per_split).
struct AttentionSplitPlan {
    int32_t n_splits = 1;
    int32_t keys_per_split = 0;  // 0 when n_splits == 1 (the whole context)
};

// A plan must cover every attended length: n_splits * keys_per_split >= the longest one
// (the kernel cannot check that on the host; keys beyond are not attended to).
// Plans the split for the longest context of a batch (pure host function):
// max_kv_len: the largest attended length; n_ctas: n_tokens * n_kv_heads (the CTAs
// without a split); n_sms: the device's multiprocessor count. Splits only when the CTAs
// would not give every SM two, and never into pieces shorter than min_keys_per_split;
// at most max_splits. Every split of the longest context is non-empty.
[[nodiscard]] AttentionSplitPlan plan_attention_split(int64_t max_kv_len, int64_t n_ctas, int32_t n_sms,
                                                      int32_t block_size, int32_t max_splits = 32,
                                                      int32_t min_keys_per_split = 256);

// Floats of scratch the split path needs: per (token, query head, split) the partial
// accumulator (head_dim floats) and its running max and sum (2 floats).
[[nodiscard]] size_t attention_scratch_floats(int64_t n_tokens, int32_t n_q_heads, int32_t head_dim, int32_t n_splits);

// Decode attention, no split: grid (n_tokens, n_kv_heads).
cudaError_t attention_decode(const float* q, int64_t q_stride, int32_t n_q_heads, const PagedKvLayer& kv,
                             const TokenBatch& batch, float scale, float* out, int64_t out_stride, cudaStream_t stream,
                             const void* kernel = nullptr);

// Decode attention split along the keys (long contexts): grid (n_tokens, n_kv_heads,
// plan.n_splits) writes each split's (max, sum, unnormalised acc) to scratch
// (attention_scratch_floats(...) floats; max is in log2 units), then a second kernel
// merges the splits of each (token, head) by log-sum-exp in split order. With
// plan.n_splits == 1 this is attention_decode (scratch unused).
cudaError_t attention_decode_split(const float* q, int64_t q_stride, int32_t n_q_heads, const PagedKvLayer& kv,
                                   const TokenBatch& batch, float scale, const AttentionSplitPlan& plan, float* scratch,
                                   float* out, int64_t out_stride, cudaStream_t stream, const void* kernel = nullptr);

// Prefill attention (many query tokens of the same sequences) in f32: the decode kernel
// run for every token (one CTA per token and kv head, no sharing of K/V loads between the
// tokens of a prompt). Same arguments and results as attention_decode; the shapes and
// caches attention_prefill_flash takes go faster through it.
cudaError_t attention_prefill(const float* q, int64_t q_stride, int32_t n_q_heads, const PagedKvLayer& kv,
                              const TokenBatch& batch, float scale, float* out, int64_t out_stride, cudaStream_t stream,
                              const void* kernel = nullptr);

// Prefill attention on tensor cores (flash_prefill.cu): the same arguments and attention
// as attention_decode for an f16 cache with head_dim 64 or 128 and a GQA group of at most
// 64 (attention_prefill_flash_supported; cudaErrorNotSupported otherwise). One CTA per 64
// query rows (consecutive tokens times the group's query heads) and kv head, so every
// K/V row staged in shared memory serves 64 rows, and q K^T and P V run as mma.sync
// m16n8k16 with f16 operands and f32 accumulation. Rounding: q and the softmax weights P
// are rounded to f16 (the decode kernel keeps both in f32), the online softmax is f32 in
// log2 units over tiles of 64 keys. Meant for prompts (many tokens per sequence); a CTA
// whose tokens span several sequences walks them one after the other.
[[nodiscard]] bool attention_prefill_flash_supported(int32_t head_dim, int32_t group, KvType type);
cudaError_t attention_prefill_flash(const float* q, int64_t q_stride, int32_t n_q_heads, const PagedKvLayer& kv,
                                    const TokenBatch& batch, float scale, float* out, int64_t out_stride,
                                    cudaStream_t stream);

// ---------------------------------------------------------------------------------------
// Decode matmul (gemv over a few tokens): y[t][r] = dot(W row r, x[t]) for t < n_tokens
// (1..8), r < n_rows.
//   w: n_rows rows of n_cols elements in `format`, row_stride_bytes apart; the same
//      alignment rules as embed_rows. Rows are read with 16-byte loads when w and
//      row_stride_bytes are 16-byte aligned for f32/f16/bf16/q4_k/q5_k (2-byte loads for
//      the formats whose blocks are only 2-byte aligned: q8_0, q4_0, q6_k, q1_0).
//   x: [n_tokens][x_stride] f32, 16-byte aligned, x_stride a multiple of 4.
//   y: [n_tokens][y_stride] f32.
// One warp per row; every weight byte is read once per call and dequantized once for all
// tokens. Rounding: each weight is dequantized to f32 as in embed_rows; each lane sums
// w * x for its share of the row in column order with fmaf (per token), then a
// xor-butterfly sums the 32 lanes.
cudaError_t gemv(const void* w, WeightFormat format, int64_t n_rows, int64_t n_cols, size_t row_stride_bytes,
                 const float* x, int64_t x_stride, int32_t n_tokens, float* y, int64_t y_stride, cudaStream_t stream);

}  // namespace inlay::cuda
