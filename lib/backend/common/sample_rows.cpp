#include "backend/common/sample_rows.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"

namespace inlay {

void validate_sample_rows(const SampleRows& s, int64_t n_rows, int64_t n_vocab) {
    if (static_cast<int64_t>(s.rows.size()) != n_rows)
        fail(INLAY_ERR_INTERNAL, "sample_rows: {} row descriptions for {} logit rows", s.rows.size(), n_rows);
    if (static_cast<int64_t>(s.penalties.size()) > kMaxSamplePenalties)
        fail(INLAY_ERR_INTERNAL, "sample_rows: {} penalised tokens, at most {} a step", s.penalties.size(),
             kMaxSamplePenalties);
    const int64_t max_k = std::min<int64_t>(kMaxSampleTopK, n_vocab - 1);
    std::vector<int32_t> tokens;
    for (size_t r = 0; r < s.rows.size(); ++r) {
        const RowSampling& row = s.rows[r];
        const auto begin = static_cast<int64_t>(row.penalty_begin);
        const auto count = static_cast<int64_t>(row.penalty_count);
        if (begin < 0 || count < 0 || begin + count > static_cast<int64_t>(s.penalties.size()))
            fail(INLAY_ERR_INTERNAL, "sample_rows: row {}'s penalties [{}, {}) outside the {} entries", r, begin,
                 begin + count, s.penalties.size());
        if (!std::isfinite(row.repeat_penalty) || row.repeat_penalty <= 0.0f || !std::isfinite(row.frequency_penalty) ||
            !std::isfinite(row.presence_penalty))
            fail(INLAY_ERR_INTERNAL, "sample_rows: row {} has invalid penalties", r);
        tokens.clear();
        for (int64_t i = begin; i < begin + count; ++i) {
            const PenaltyEntry& e = s.penalties[static_cast<size_t>(i)];
            if (e.token < 0 || e.token >= n_vocab || e.count < 1)
                fail(INLAY_ERR_INTERNAL, "sample_rows: row {} penalises token {} ({} times) in a vocabulary of {}", r,
                     e.token, e.count, n_vocab);
            tokens.push_back(e.token);
        }
        std::sort(tokens.begin(), tokens.end());
        if (std::adjacent_find(tokens.begin(), tokens.end()) != tokens.end())
            fail(INLAY_ERR_INTERNAL, "sample_rows: row {} penalises a token twice", r);
        if (!std::isfinite(row.temperature))
            fail(INLAY_ERR_INTERNAL, "sample_rows: row {} has temperature {}", r, row.temperature);
        if (row.temperature <= 0.0f) continue;  // greedy
        if (row.top_k < 1 || row.top_k > max_k)
            fail(INLAY_ERR_INTERNAL, "sample_rows: row {} has top_k {}; a backend samples 1..{} of {} tokens", r,
                 row.top_k, max_k, n_vocab);
        if (!(row.top_p > 0.0f && row.top_p <= 1.0f) || !std::isfinite(row.min_p) || row.min_p > 1.0f ||
            !std::isfinite(row.inv_temperature) || !(row.inv_temperature > 0.0) || !std::isfinite(row.log_min_p))
            fail(INLAY_ERR_INTERNAL, "sample_rows: row {} has invalid chain parameters", r);
        if (!(row.u >= 0.0 && row.u < 1.0)) fail(INLAY_ERR_INTERNAL, "sample_rows: row {} has the draw {}", r, row.u);
    }
}

}  // namespace inlay
