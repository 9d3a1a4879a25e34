// Executor: the backend-independent face of a loaded decoder. Sessions and the runtime's
// engine talk to it; behind it sits Decoder<B> on one backend (BackendExecutor<B>, made
// by make_executor for the device the caller chose).
//
// Two ways in:
//  - eval() on a SequenceState: one sequence with a private, growable set of KV blocks
//    (block table 0, 1, 2, ...). Simple callers and tests use it.
//  - step() over a KvStore: one forward pass over a ragged batch of many sequences whose
//    block tables point into a shared, preallocated store (the runtime's block pool
//    decides which block holds what). copy_block / read_block / write_block move whole
//    blocks for copy-on-write and session save/restore.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "backend/concepts.h"
#include "model/decoder_spec.h"

namespace inlay {

class SequenceState {
public:
    virtual ~SequenceState() = default;
    // Tokens whose K/V are in the cache (the next token goes at this position).
    [[nodiscard]] virtual int64_t n_cached() const = 0;
    // Forgets cached tokens beyond n (n <= n_cached()).
    virtual void truncate(int64_t n) = 0;
    // Bytes of KV memory held.
    [[nodiscard]] virtual size_t kv_bytes() const = 0;
};

// Preallocated KV blocks on one device, shared by any executor whose kv_device() and
// geometry match (several models can use one store). Block ids are [0, n_blocks()).
class KvStore {
public:
    virtual ~KvStore() = default;
    [[nodiscard]] virtual const KvGeometry& geometry() const = 0;
    [[nodiscard]] virtual int64_t n_blocks() const = 0;
    // Bytes of one block, also the size of its canonical-layout image (read/write_block).
    [[nodiscard]] virtual size_t block_bytes() const = 0;
    // The device the memory lives on ("cpu", "cuda:0", ...).
    [[nodiscard]] virtual const std::string& device() const = 0;
};

// Scratch of one caller of step() (activations for up to max_tokens tokens).
class StepWorkspace {
public:
    virtual ~StepWorkspace() = default;
    [[nodiscard]] virtual int64_t max_tokens() const = 0;
    [[nodiscard]] virtual int64_t max_logit_rows() const = 0;
};

class Executor {
public:
    virtual ~Executor() = default;
    [[nodiscard]] virtual const DecoderSpec& spec() const = 0;
    // What the backend promises about its numbers (batch invariance or a tolerance).
    [[nodiscard]] virtual BackendContract contract() const = 0;
    // The device's free and total memory now.
    [[nodiscard]] virtual DeviceMemory memory_info() const = 0;
    // A new, empty sequence that can hold up to max_tokens tokens.
    [[nodiscard]] virtual std::unique_ptr<SequenceState> new_sequence(int64_t max_tokens) const = 0;
    // Appends `tokens` at positions n_cached()..; writes the logits predicting the token
    // after tokens[i] for every i in logit_rows (ascending indices into `tokens`) into
    // logits[k * n_vocab ...]. `cancelled` is polled between chunks of a long prompt:
    // when it returns true, evaluation stops with INLAY_ERR_CANCELLED and the sequence
    // keeps the chunks already done. Thread-safe for different sequences.
    virtual void eval(SequenceState& seq, std::span<const int32_t> tokens, std::span<const int32_t> logit_rows,
                      float* logits, const std::function<bool()>& cancelled) const = 0;

    // --- batched steps over a shared block store -------------------------------------

    // Where this executor computes and keeps KV ("cpu", "cuda:0", ...): stores from
    // kv_device-equal executors are interchangeable when their geometry matches too.
    [[nodiscard]] virtual const std::string& kv_device() const = 0;
    // The geometry of this model's KV blocks.
    [[nodiscard]] virtual KvGeometry kv_geometry(int64_t block_size, DType dtype) const = 0;
    // Device bytes one block of `geometry` takes in a store (no store is made).
    [[nodiscard]] virtual size_t kv_block_bytes(const KvGeometry& geometry) const = 0;
    // A store of n_blocks blocks (memory is reserved now; throws INLAY_ERR_KV_FULL or
    // INLAY_ERR_OUT_OF_MEMORY when it cannot be).
    [[nodiscard]] virtual std::shared_ptr<KvStore> new_kv_store(const KvGeometry& geometry, int64_t n_blocks) const = 0;
    [[nodiscard]] virtual std::unique_ptr<StepWorkspace> new_workspace(int64_t max_tokens,
                                                                       int64_t max_logit_rows) const = 0;
    // One forward pass over the batch: K/V written to and read from `kv` through its
    // block tables (the caller guarantees each written slot's block is exclusively the
    // writer's). Writes the logits of its logit rows to logits (n_logit_rows * n_vocab
    // floats). The batch is validated once (validate_batch: INLAY_ERR_INVALID_TOKEN for
    // token ids, INLAY_ERR_INTERNAL for the rest). One caller per workspace at a time;
    // concurrent steps on one store must write disjoint blocks.
    virtual void step(KvStore& kv, StepWorkspace& ws, const BatchDesc& batch, float* logits) const = 0;
    // The same pass for greedy sampling: writes each logit row's argmax to ids
    // (n_logit_rows of them: the first index of the largest logit, NaN never, -1 when a
    // row is all NaN) instead of its logits, so that a device hands back only ids.
    virtual void step_argmax(KvStore& kv, StepWorkspace& ws, const BatchDesc& batch, int32_t* ids) const = 0;
    // The same pass for sampling where the logits are: writes the token drawn from each
    // logit row by rows.rows[r] (Backend::sample_rows: the Sampler's rule with the draw the
    // host made; -1 when a row is all NaN) to ids.
    virtual void step_sample(KvStore& kv, StepWorkspace& ws, const BatchDesc& batch, const SampleRows& rows,
                             int32_t* ids) const = 0;
    // Pipelined steps, for a caller that plans step N+1 while step N runs. launch_step
    // queues the same pass as step_argmax (rows null) or step_sample and returns without
    // waiting for its ids; finish_step waits for the oldest launched step of `ws` not yet
    // finished and writes its n_logit_rows ids. Up to two launched steps of a workspace
    // may be unfinished. A batch's fed tokens (BatchDesc::fed_rows) are the ids of the
    // step launched or run just before on `ws`, which the host need not have read: a
    // decoding sequence's next token goes in without a round trip through the host.
    virtual void launch_step(KvStore& kv, StepWorkspace& ws, const BatchDesc& batch, const SampleRows* rows) const = 0;
    virtual void finish_step(StepWorkspace& ws, int64_t n_logit_rows, int32_t* ids) const = 0;
    // Whether launch_step returns before the device has done the pass (a GPU's stream), so
    // that planning the next step meanwhile gains time; false: it returns when done.
    [[nodiscard]] virtual bool queues_steps() const = 0;
    // Whole blocks, in the canonical layout [layer][k|v][kv_head][slot][head_dim]. They
    // may run concurrently with step() on blocks that step does not write.
    virtual void copy_block(KvStore& kv, int32_t src, int32_t dst) const = 0;
    virtual void read_block(const KvStore& kv, int32_t block, std::span<std::byte> out) const = 0;
    virtual void write_block(KvStore& kv, int32_t block, std::span<const std::byte> in) const = 0;
};

}  // namespace inlay
