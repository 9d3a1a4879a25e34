// Executor: the backend-independent face of a loaded decoder. Sessions talk to it;
// behind it sits Decoder<B> on one backend (CpuExecutor today, a CUDA one later).
//
// A SequenceState is one sequence's KV cache and scratch. Here every sequence owns a
// private, growable set of KV blocks (block table 0, 1, 2, ...); the runtime's shared
// block pool replaces that allocation without changing the decoder or the backends,
// which already address the cache through block tables.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>

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

class Executor {
public:
    virtual ~Executor() = default;
    [[nodiscard]] virtual const DecoderSpec& spec() const = 0;
    // A new, empty sequence that can hold up to max_tokens tokens.
    [[nodiscard]] virtual std::unique_ptr<SequenceState> new_sequence(int64_t max_tokens) const = 0;
    // Appends `tokens` at positions n_cached()..; writes the logits predicting the token
    // after tokens[i] for every i in logit_rows (ascending indices into `tokens`) into
    // logits[k * n_vocab ...]. `cancelled` is polled between chunks of a long prompt:
    // when it returns true, evaluation stops with INLAY_ERR_CANCELLED and the sequence
    // keeps the chunks already done. Thread-safe for different sequences.
    virtual void eval(SequenceState& seq, std::span<const int32_t> tokens, std::span<const int32_t> logit_rows,
                      float* logits, const std::function<bool()>& cancelled) const = 0;
};

}  // namespace inlay
