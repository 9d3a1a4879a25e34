// The ragged batch of one forward pass, described flat (CSR style) so that a device
// backend can upload it in a few copies: per token its id, position and sequence; per
// sequence its KV length and its block table as a slice of one index array; and the
// tokens whose logits are wanted.
//
// BatchDesc is a view (host memory, owned by the caller); BatchBuilder owns the arrays
// and is how the runtime, the executor and the tests make one. validate_batch checks
// a description once per forward pass against the model and the KV store, so the ops
// that read it (every layer, several times) need not.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace inlay {

struct BatchDesc {
    std::span<const int32_t> tokens;        // [n_tokens] token ids
    std::span<const int32_t> positions;     // [n_tokens] position of each token in its sequence
    std::span<const int32_t> seq_of_token;  // [n_tokens] index of the token's sequence
    std::span<const int32_t> kv_indptr;     // [n_seqs + 1] sequence s's blocks: kv_indices[indptr[s], indptr[s+1])
    std::span<const int32_t> kv_indices;    // block ids, sequence by sequence, in position order
    std::span<const int32_t> kv_len;        // [n_seqs] KV length of each sequence after this step
    std::span<const int32_t> logit_rows;    // ascending token indices whose logits are wanted
    // Empty, or [n_tokens]: -1 where tokens[i] is the id, else the logit row of the step
    // run just before on the same workspace whose id (argmax or sampled, still on the
    // device) is token i: a pipelined step's decode token, not yet known to the host
    // (tokens[i] then holds a placeholder; an all-NaN row's -1 becomes token 0, in a step
    // whose result for that row the caller discards).
    std::span<const int32_t> fed_rows;

    [[nodiscard]] int64_t n_tokens() const { return static_cast<int64_t>(tokens.size()); }
    [[nodiscard]] int64_t n_seqs() const { return static_cast<int64_t>(kv_len.size()); }
    [[nodiscard]] int64_t n_logit_rows() const { return static_cast<int64_t>(logit_rows.size()); }
    [[nodiscard]] bool has_fed_tokens() const { return !fed_rows.empty(); }
    // Sequence s's block table (valid after validate_batch).
    [[nodiscard]] std::span<const int32_t> block_table(int64_t s) const {
        const auto b = static_cast<size_t>(kv_indptr[static_cast<size_t>(s)]);
        const auto e = static_cast<size_t>(kv_indptr[static_cast<size_t>(s) + 1]);
        return kv_indices.subspan(b, e - b);
    }
};

// Owns a BatchDesc's arrays. Sequences are added with their block tables, then tokens
// name them; clear() keeps the capacity, so a builder reused step after step stops
// allocating.
class BatchBuilder {
public:
    void clear();
    // A sequence whose K/V live in `block_table` and hold kv_len tokens after this step.
    // Returns its index for add_token / add_tokens.
    int32_t add_sequence(std::span<const int32_t> block_table, int64_t kv_len);
    void add_token(int32_t token, int32_t position, int32_t seq, bool want_logits = false);
    // A token that is the id of the previous step's logit row `prev_row` (BatchDesc::fed_rows).
    void add_fed_token(int32_t prev_row, int32_t position, int32_t seq, bool want_logits);
    // tokens[i] at position first_position + i of `seq`; the last n_logit_rows of them
    // want logits.
    void add_tokens(int32_t seq, std::span<const int32_t> tokens, int64_t first_position, int64_t n_logit_rows = 0);

    [[nodiscard]] BatchDesc desc() const;
    [[nodiscard]] int64_t n_tokens() const { return static_cast<int64_t>(tokens_.size()); }
    [[nodiscard]] int64_t n_logit_rows() const { return static_cast<int64_t>(logit_rows_.size()); }

private:
    std::vector<int32_t> tokens_, positions_, seq_of_token_, kv_indptr_{0}, kv_indices_, kv_len_, logit_rows_;
    std::vector<int32_t> fed_rows_;  // one per token once a fed token was added (fed_)
    bool fed_ = false;
};

// What a batch must fit.
struct BatchLimits {
    int64_t n_vocab = 0;         // token ids in [0, n_vocab)
    int64_t block_size = 0;      // token slots per KV block
    int64_t n_blocks = 0;        // block ids in [0, n_blocks)
    int64_t max_tokens = 0;      // the workspace's capacity
    int64_t max_logit_rows = 0;
    int64_t fed_rows = 0;        // logit rows of the previous step whose ids fed tokens may take
};

// Throws INLAY_ERR_INVALID_TOKEN for a token id outside the vocabulary and
// INLAY_ERR_INTERNAL (a caller's bug) for anything else: array lengths that disagree,
// a sequence index, position or block id out of range, a block table too short for
// its KV length, a position at or past its sequence's KV length, logit rows that are
// not ascending token indices, more tokens or logit rows than the workspace holds, or a
// fed token's row outside the previous step's ids.
void validate_batch(const BatchDesc& batch, const BatchLimits& limits);

}  // namespace inlay
