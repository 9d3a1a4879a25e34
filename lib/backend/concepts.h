// The Backend concept: everything Decoder<B> needs from a compute device.
//
// A backend owns its resources (threads, device memory, streams). Activations live in
// backend Buffers as row-major float32 matrices [rows][cols]; the decoder never reads
// them on the host except through read(). Weights are uploaded once (the CPU backend
// keeps zero-copy views of the mapped file). The KV cache is paged: fixed-size blocks
// of `block_size` token slots in a backend-owned KvStorage, addressed through the
// per-sequence block tables of a BatchLayout, so a block pool can be shared by many
// sequences (and a GPU backend reads the same tables).
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/dtype.h"
#include "core/tensor_view.h"

namespace inlay {

enum class RopeStyle {
    normal,  // GPT-J: rotate adjacent pairs (x[2i], x[2i+1]); GGUF llama
    neox,    // rotate_half: pairs (x[i], x[i + n_rot/2]); HF llama, qwen2/3
};

struct RopeParams {
    RopeStyle style = RopeStyle::normal;
    int64_t n_rot = 0;           // rotated dimensions per head (<= head_dim, even)
    float freq_base = 10000.0f;  // theta_i = pos * base^(-2i/n_rot)
    float freq_scale = 1.0f;     // linear position scaling (pos * scale)
    const float* freq_factors = nullptr;  // optional n_rot/2 divisors (llama3 scaling); host memory
};

// Geometry of a paged KV cache: what every block of every layer holds.
struct KvGeometry {
    int64_t n_layers = 0;
    int64_t n_kv_heads = 0;
    int64_t head_dim = 0;
    int64_t block_size = 16;  // token slots per block
    DType dtype = DType::F16; // element type of stored K and V (F16 or F32)

    bool operator==(const KvGeometry&) const = default;
};

// One sequence of a ragged batch.
struct BatchSequence {
    std::span<const int32_t> block_table;  // block ids holding positions [0, n_kv)
    int64_t n_kv = 0;                      // KV length after this step (cached + new tokens)
};

// Who is who in a ragged batch of tokens drawn from several sequences. Token t belongs
// to sequence seq_of_token[t], sits at position positions[t] and (causal) attends to
// that sequence's positions [0, positions[t]].
struct BatchLayout {
    std::span<const int32_t> positions;     // per token
    std::span<const int32_t> seq_of_token;  // per token, index into sequences
    std::span<const BatchSequence> sequences;

    [[nodiscard]] int64_t n_tokens() const { return static_cast<int64_t>(positions.size()); }
};

template <class B>
concept Backend = requires(B& b, typename B::Buffer& buf, const typename B::Buffer& cbuf,
                           const typename B::Weight& w, const TensorView& view, typename B::KvStorage& kv,
                           const typename B::KvStorage& ckv, const BatchLayout& layout, std::span<const int32_t> ids,
                           const RopeParams& rope, float* host, int64_t n, std::span<std::byte> bytes,
                           std::span<const std::byte> cbytes) {
    typename B::Buffer;     // device float32 storage
    typename B::Weight;     // a weight prepared for this device (any supported DType)
    typename B::KvStorage;  // paged K/V blocks for all layers

    // Memory
    { b.alloc(n) } -> std::same_as<typename B::Buffer>;              // n floats, uninitialised
    { b.upload_matrix(view) } -> std::same_as<typename B::Weight>;   // for matmul / embedding rows
    { b.upload_vector(view) } -> std::same_as<typename B::Weight>;   // norm weights (kept as f32)
    { b.alloc_kv(KvGeometry{}, n) } -> std::same_as<typename B::KvStorage>;  // n blocks
    b.resize_kv(kv, n);              // grow or shrink to n blocks; blocks below n keep their data
    b.read(cbuf, n, n, host);        // copy floats [offset, offset+count) to host

    // KV blocks as a whole (copy-on-write, save/restore). A block's contents travel in
    // the canonical layout [layer][k|v][kv_head][slot][head_dim] of the geometry's dtype,
    // kv_block_bytes(kv) bytes, whatever the device keeps internally. These run between
    // forward passes or on blocks no forward pass touches.
    { b.kv_block_bytes(ckv) } -> std::same_as<size_t>;
    b.kv_copy_block(kv, n, n);       // block src -> block dst (all layers, all slots)
    b.kv_read_block(ckv, n, bytes);  // block -> host bytes (canonical layout)
    b.kv_write_block(kv, n, cbytes); // host bytes (canonical layout) -> block

    // Ops. Sizes are in elements; matrices are row-major [rows][cols].
    b.embed(w, ids, buf);                       // out[t] = row ids[t] of the table, as f32
    b.rms_norm(cbuf, w, 1e-5f, n, n, buf);      // out = x / rms(x) * w, per row (rows, dim)
    b.matmul(w, cbuf, n, buf);                  // y[t] = W x[t] for t < n_tokens
    b.rope(buf, n, n, layout, rope);            // in place over [tokens][heads][head_dim]
    b.kv_store(kv, n, cbuf, cbuf, layout);      // writes K, V of each token at its slot
    b.attention(cbuf, kv, n, layout, n, buf);   // causal GQA over the paged cache (layer, n_heads)
    b.silu_mul(buf, cbuf, n);                   // gate = silu(gate) * up
    b.add(buf, cbuf, n);                        // x += y
    b.gather_rows(cbuf, ids, n, buf);           // out[i] = x[rows[i]] (row length n)
};

}  // namespace inlay
