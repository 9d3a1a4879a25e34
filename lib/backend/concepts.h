// The Backend concept: everything Decoder<B> needs from a compute device.
//
// A backend owns its resources (threads, device memory, streams, library handles).
// Activations live in backend Buffers as row-major float32 matrices [rows][cols].
//
// Memory model. Host memory reaches a backend only through write() (floats into a
// Buffer), the upload_* calls (weights, once at load), prepare_batch() (the step's
// batch, once per forward pass) and kv_write_block(); it leaves only through read(),
// read_ids() and kv_read_block(). Everything else (the ops) may run asynchronously, in
// issue order, on the backend's stream: read(), read_ids(), kv_read_block() and
// synchronize() are the only points where the host waits for the device, and
// prepare_batch() and sample_rows() may be called again while earlier work is still
// queued (their host staging is not reused before the device has consumed it). Ops never allocate: scratch comes
// from a Scratch made once per workspace (alloc_scratch), K/V from a KvStorage made
// once per store.
//
// The KV cache is paged: fixed-size blocks of `block_size` token slots in a
// backend-owned KvStorage, addressed through the CSR block tables of the step's Batch,
// so a block pool can be shared by many sequences. Each backend lays blocks out as it
// likes; whole blocks travel in the canonical layout [layer][k|v][kv_head][slot][head_dim].
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>

#include "backend/common/batch.h"
#include "backend/common/kv_geometry.h"
#include "backend/common/sample_rows.h"
#include "core/dtype.h"
#include "core/tensor_view.h"

namespace inlay {

enum class RopeStyle {
    normal,  // GPT-J: rotate adjacent pairs (x[2i], x[2i+1]); GGUF llama
    neox,    // rotate_half: pairs (x[i], x[i + n_rot/2]); HF llama, qwen2/3
};

// RoPE's scalars; optional frequency factors (llama3 scaling) come as a Weight.
struct RopeParams {
    RopeStyle style = RopeStyle::normal;
    int64_t n_rot = 0;           // rotated dimensions per head (<= head_dim, even; 0: none)
    float freq_base = 10000.0f;  // theta_i = pos * base^(-2i/n_rot)
    float freq_scale = 1.0f;     // linear position scaling (pos * scale)
};

// Sizes a Scratch must serve: the widest matmul input and output, the largest batch.
struct ScratchShape {
    int64_t max_tokens = 0;
    int64_t max_in = 0;     // longest activation row fed to a matmul
    int64_t n_ff = 0;       // SwiGLU width (matmul_swiglu's second product)
    int64_t n_heads = 0;    // attention partials (split-sequence backends)
    int64_t head_dim = 0;
};

// Device memory as the backend sees it (the CPU: available and total RAM).
struct DeviceMemory {
    size_t free_bytes = 0;
    size_t total_bytes = 0;
};

// What a backend promises about its numbers.
struct BackendContract {
    // A sequence's logits and K/V are bitwise the same whatever else is in its batch.
    bool batch_invariant = true;
    // Otherwise: the largest |logit difference| between a sequence run alone and in a
    // batch, relative to the logits' largest magnitude (0 when batch_invariant).
    double batch_logit_tolerance = 0.0;
    // Matmuls round the activations as llama.cpp's CPU backend does (Q8_0/Q8_K blocks
    // for quantized weights, f16/bf16 for half weights), so logits follow llama.cpp's
    // within summation order; false: float activations (a GPU's GEMV), which differ from
    // llama.cpp's by its activation rounding.
    bool llamacpp_activations = true;
};

template <class B>
concept Backend = requires(B& b, const B& cb, typename B::Buffer& buf, const typename B::Buffer& cbuf,
                           const typename B::Weight& w, const typename B::Weight* wp, const TensorView& view,
                           typename B::KvStorage& kv, const typename B::KvStorage& ckv, typename B::Batch& batch,
                           const typename B::Batch& cbatch, typename B::Scratch& scratch,
                           const typename B::Scratch& cscratch, const BatchDesc& desc,
                           const BatchLimits& limits,
                           const KvGeometry& geometry, const RopeParams& rope, float* host, const float* chost,
                           int64_t n, float f, std::span<std::byte> bytes, std::span<const std::byte> cbytes,
                           int32_t* ids, const SampleRows& sample) {
    typename B::Buffer;     // device float32 storage
    typename B::Weight;     // a weight prepared for this device (any supported DType)
    typename B::KvStorage;  // paged K/V blocks for all layers
    typename B::Batch;      // one step's batch, uploaded (prepare_batch)
    typename B::Scratch;    // the ops' scratch, one per workspace

    // What the backend is
    { B::kConcurrentForward } -> std::convertible_to<bool>;  // may forward passes run at once?
    { B::kQueuedOps } -> std::convertible_to<bool>;  // do ops return before their work is done (a stream)?
    { cb.device_name() } -> std::convertible_to<std::string>;  // "cpu", "cuda:0", ...
    { cb.contract() } -> std::same_as<BackendContract>;
    { cb.memory_info() } -> std::same_as<DeviceMemory>;

    // Memory
    { b.alloc(n) } -> std::same_as<typename B::Buffer>;               // n floats, uninitialised
    b.write(buf, n, chost, n);                                        // host floats -> [offset, offset+count)
    b.read(cbuf, n, n, host);                                         // [offset, offset+count) -> host (waits)
    b.synchronize();                                                  // waits for every op issued so far
    { b.upload_matrix(view) } -> std::same_as<typename B::Weight>;    // for matmul / embedding rows
    { b.upload_vector(view) } -> std::same_as<typename B::Weight>;    // norm weights, rope factors (kept f32)
    { b.alloc_scratch(ScratchShape{}) } -> std::same_as<typename B::Scratch>;
    { b.alloc_kv(geometry, n) } -> std::same_as<typename B::KvStorage>;  // n blocks
    b.resize_kv(kv, n);               // grow or shrink to n blocks; blocks below n keep their data

    { ckv.geometry() } -> std::same_as<const KvGeometry&>;
    { ckv.n_blocks() } -> std::same_as<int64_t>;

    // The step's batch: validated (validate_batch) and uploaded once per forward pass.
    // Ops given a batch check only that its limits fit the storage (block size, count).
    b.prepare_batch(desc, limits, batch);

    // KV blocks as a whole (copy-on-write, save/restore), in the canonical layout,
    // kv_canonical_block_bytes(geometry) bytes, whatever the device keeps internally.
    // They run between forward passes or on blocks no forward pass touches.
    b.kv_copy_block(kv, n, n);        // block src -> block dst (all layers, all slots)
    b.kv_read_block(ckv, n, bytes);   // block -> host bytes (waits)
    b.kv_write_block(kv, n, cbytes);  // host bytes -> block

    // Ops. Sizes are in elements; matrices are row-major [rows][cols].
    b.embed(w, cbatch, buf);                        // out[t] = row tokens[t] of the table, as f32
    b.rms_norm(cbuf, w, f, n, n, buf);              // out = x / rms(x) * w, per row (rows, dim)
    b.add_rms_norm(buf, cbuf, w, f, n, n, buf);     // x += y; out = rms_norm(x) (rows, dim); out may be x, not y
    b.matmul(w, cbuf, n, buf, scratch);             // y[t] = W x[t] for t < n_tokens
    b.matmul_swiglu(w, w, cbuf, n, buf, scratch);   // out[t] = silu(G x[t]) * (U x[t])
    b.matmul_qkv(w, w, w, cbuf, n, buf, buf, buf, scratch);  // q[t], k[t], v[t] = Wq x[t], Wk x[t], Wv x[t]
    // q [tokens][n_heads][head_dim], k [tokens][n_kv_heads][head_dim]: optional per-head
    // RMSNorm (q_norm/k_norm may be null), RoPE (freq factors may be null), then K and V
    // appended at each token's slot of `layer`.
    b.rope_kv_append(buf, buf, cbuf, wp, wp, f, rope, wp, kv, n, n, cbatch);  // ..., layer, n_heads, batch
    b.attention(cbuf, ckv, n, cbatch, n, f, buf, scratch);  // causal GQA (layer, n_heads, scale)
    b.add(buf, cbuf, n);                            // x += y
    b.gather_logit_rows(cbuf, cbatch, n, buf);      // out[i] = x[logit_rows[i]] (row length n)

    // Token ids chosen where the logits are. Each of argmax_rows and sample_rows leaves
    // its rows' ids in the scratch (the step's "latest ids", which feed_tokens reads) and
    // starts their copy to the host without waiting; read_ids waits for the oldest copy
    // not yet read and writes its n_rows ids. At most kMaxUnreadIds are unread at once, so
    // a caller can queue step N+1 before reading step N's ids (pipelined steps).
    // Greedy: id = the first index of row r's largest value, NaN never, -1 when the row
    // is all NaN (n_rows, n_cols).
    b.argmax_rows(cbuf, n, n, scratch);
    // Sampling: id = the token the Sampler would draw from row r with the row's
    // parameters, penalties and draw (sample_rows.h; the penalties are applied to the
    // rows in place), -1 when the row is all NaN (n_rows, n_cols).
    b.sample_rows(buf, n, n, sample, scratch);
    b.read_ids(scratch, n, ids);  // n_rows of the oldest unread ids -> host (waits)
    // A batch's fed tokens (BatchDesc::fed_rows) take the latest ids of the scratch: the
    // first op of a pipelined step, before embed.
    b.feed_tokens(batch, cscratch);
};

// Ids of argmax_rows / sample_rows calls not yet read (read_ids) that a scratch holds.
inline constexpr int kMaxUnreadIds = 2;

// Optional: a backend that can record a step's ops and replay them (CUDA graphs).
// Decoder::forward brackets the ops after prepare_batch and before its outputs are read
// with graph_begin / graph_end; graph_begin returning true means the backend replays the
// step's launches as recorded, and the ops are not called. When an op throws in between,
// graph_abort discards what was recorded and says whether the failure came from the
// recording itself.
template <class B>
concept StepGraphBackend = requires(B& b, typename B::Batch& batch, const typename B::KvStorage& kv,
                                    const typename B::Scratch& scratch) {
    { b.graph_begin(batch, kv, scratch) } -> std::same_as<bool>;
    b.graph_end(batch);
    { b.graph_abort(batch) } -> std::same_as<bool>;
};

// Thrown by a backend when a step's work did not run at all (a recording that the device
// refused: none of it executed) and the same call may simply be made again; the backend
// has switched off whatever failed, so the retry runs the ops directly.
class StepRetry : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

}  // namespace inlay
