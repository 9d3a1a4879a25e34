// Sequence: one conversation's tokens and KV block table inside an Engine.
//
// A sequence is either idle (no request: its state is guarded by the engine's mutex,
// and the engine may release its KV blocks under memory pressure, keeping the tokens)
// or active (a request runs: its state belongs to the scheduler thread alone). Its
// owner (a Session) reads tokens() only while it is idle; the engine never changes the
// tokens of an idle sequence.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/kv_block_pool.h"
#include "runtime/speculation.h"
#include "speculative/draft_policy.h"

namespace inlay {

class Engine;

class Sequence {
public:
    Sequence(const Sequence&) = delete;
    Sequence& operator=(const Sequence&) = delete;

    // The conversation so far (prompt and sampled tokens). Read only while idle.
    [[nodiscard]] const std::vector<int32_t>& tokens() const { return tokens_; }
    [[nodiscard]] int64_t context_length() const { return context_length_; }
    [[nodiscard]] uint64_t id() const { return id_; }

private:
    friend class Engine;
    Sequence(uint64_t id, int64_t context_length) : id_(id), context_length_(context_length) {}

    // Blocks that hold positions [0, n).
    [[nodiscard]] static int64_t blocks_for(int64_t n, int64_t block_size) { return (n + block_size - 1) / block_size; }

    uint64_t id_;
    int64_t context_length_;
    std::vector<int32_t> tokens_;
    std::vector<BlockId> blocks_;  // at rest: exactly blocks_for(n_cached_) entries
    int64_t n_cached_ = 0;         // tokens whose K/V are in blocks_
    bool active_ = false;          // a request owns it (scheduler thread only)
    uint64_t last_used_ = 0;       // engine clock at the end of its last request (LRU release)

    // Speculative decoding (Engine::set_speculation). With a draft model, the draft's KV of
    // this conversation lives in its context's pool: draft_cached_ tokens of tokens_, in
    // blocks_for(draft_cached_) blocks at rest (more while a step drafts). Never shared.
    SpeculationOptions spec_;
    // What speculation has learnt about this conversation (acceptance, the draft's unsure
    // tokens, whether it pays): kept across its requests, new when the options change.
    std::unique_ptr<DraftPolicy> policy_;
    DraftContext* draft_ = nullptr;
    std::vector<BlockId> draft_blocks_;
    int64_t draft_cached_ = 0;
};

}  // namespace inlay
