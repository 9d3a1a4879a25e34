#include "backend/common/batch.h"

#include "core/error.h"

namespace inlay {

void BatchBuilder::clear() {
    tokens_.clear();
    positions_.clear();
    seq_of_token_.clear();
    kv_indptr_.assign(1, 0);
    kv_indices_.clear();
    kv_len_.clear();
    logit_rows_.clear();
    fed_rows_.clear();
    fed_ = false;
}

int32_t BatchBuilder::add_sequence(std::span<const int32_t> block_table, int64_t kv_len) {
    kv_indices_.insert(kv_indices_.end(), block_table.begin(), block_table.end());
    kv_indptr_.push_back(static_cast<int32_t>(kv_indices_.size()));
    kv_len_.push_back(static_cast<int32_t>(kv_len));
    return static_cast<int32_t>(kv_len_.size() - 1);
}

void BatchBuilder::add_token(int32_t token, int32_t position, int32_t seq, bool want_logits) {
    if (want_logits) logit_rows_.push_back(static_cast<int32_t>(tokens_.size()));
    tokens_.push_back(token);
    positions_.push_back(position);
    seq_of_token_.push_back(seq);
    if (fed_) fed_rows_.push_back(-1);
}

void BatchBuilder::add_fed_token(int32_t prev_row, int32_t position, int32_t seq, bool want_logits) {
    if (!fed_) fed_rows_.assign(tokens_.size(), -1);
    fed_ = true;
    add_token(0, position, seq, want_logits);  // a valid placeholder id; the device writes the real one
    fed_rows_.back() = prev_row;
}

void BatchBuilder::add_tokens(int32_t seq, std::span<const int32_t> tokens, int64_t first_position,
                              int64_t n_logit_rows) {
    const auto n = static_cast<int64_t>(tokens.size());
    for (int64_t i = 0; i < n; ++i)
        add_token(tokens[static_cast<size_t>(i)], static_cast<int32_t>(first_position + i), seq, i >= n - n_logit_rows);
}

BatchDesc BatchBuilder::desc() const {
    return BatchDesc{tokens_, positions_, seq_of_token_, kv_indptr_, kv_indices_, kv_len_, logit_rows_, fed_rows_};
}

void validate_batch(const BatchDesc& b, const BatchLimits& lim) {
    const int64_t n = b.n_tokens();
    const int64_t n_seqs = b.n_seqs();
    if (static_cast<int64_t>(b.positions.size()) != n || static_cast<int64_t>(b.seq_of_token.size()) != n)
        fail(INLAY_ERR_INTERNAL, "batch: {} tokens but {} positions and {} sequence indices", n, b.positions.size(),
             b.seq_of_token.size());
    if (n > lim.max_tokens || b.n_logit_rows() > lim.max_logit_rows)
        fail(INLAY_ERR_INTERNAL, "batch: {} tokens / {} logit rows exceed the workspace ({} / {})", n,
             b.n_logit_rows(), lim.max_tokens, lim.max_logit_rows);
    if (static_cast<int64_t>(b.kv_indptr.size()) != n_seqs + 1 || b.kv_indptr[0] != 0 ||
        b.kv_indptr[static_cast<size_t>(n_seqs)] != static_cast<int64_t>(b.kv_indices.size()))
        fail(INLAY_ERR_INTERNAL, "batch: kv_indptr of {} entries does not delimit {} sequences' {} blocks",
             b.kv_indptr.size(), n_seqs, b.kv_indices.size());
    for (int64_t s = 0; s < n_seqs; ++s) {
        const int32_t lo = b.kv_indptr[static_cast<size_t>(s)], hi = b.kv_indptr[static_cast<size_t>(s) + 1];
        if (hi < lo) fail(INLAY_ERR_INTERNAL, "batch: kv_indptr decreases at sequence {}", s);
        const int32_t len = b.kv_len[static_cast<size_t>(s)];
        if (len < 0 || (static_cast<int64_t>(len) + lim.block_size - 1) / lim.block_size > hi - lo)
            fail(INLAY_ERR_INTERNAL, "batch: sequence {} holds {} tokens in {} blocks of {}", s, len, hi - lo,
                 lim.block_size);
    }
    for (const int32_t block : b.kv_indices)
        if (block < 0 || block >= lim.n_blocks)
            fail(INLAY_ERR_INTERNAL, "batch: block {} outside the store of {} blocks", block, lim.n_blocks);
    for (int64_t t = 0; t < n; ++t) {
        const auto i = static_cast<size_t>(t);
        if (b.tokens[i] < 0 || b.tokens[i] >= lim.n_vocab)
            fail(INLAY_ERR_INVALID_TOKEN, "token id {} is outside the vocabulary [0, {})", b.tokens[i], lim.n_vocab);
        const int32_t s = b.seq_of_token[i];
        if (s < 0 || s >= n_seqs) fail(INLAY_ERR_INTERNAL, "batch: token {} names sequence {} of {}", t, s, n_seqs);
        if (b.positions[i] < 0 || b.positions[i] >= b.kv_len[static_cast<size_t>(s)])
            fail(INLAY_ERR_INTERNAL, "batch: token {} at position {} outside its sequence's {} tokens", t,
                 b.positions[i], b.kv_len[static_cast<size_t>(s)]);
    }
    for (size_t r = 0; r < b.logit_rows.size(); ++r)
        if (b.logit_rows[r] < 0 || b.logit_rows[r] >= n || (r > 0 && b.logit_rows[r] <= b.logit_rows[r - 1]))
            fail(INLAY_ERR_INTERNAL, "batch: logit rows must be ascending indices into the {} tokens", n);
    if (!b.fed_rows.empty()) {
        if (static_cast<int64_t>(b.fed_rows.size()) != n)
            fail(INLAY_ERR_INTERNAL, "batch: {} fed-row entries for {} tokens", b.fed_rows.size(), n);
        for (const int32_t r : b.fed_rows)
            if (r < -1 || r >= lim.fed_rows)
                fail(INLAY_ERR_INTERNAL, "batch: a token fed from row {} of a previous step with {} id rows", r,
                     lim.fed_rows);
    }
}

}  // namespace inlay
