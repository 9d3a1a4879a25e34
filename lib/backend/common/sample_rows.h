// The sampling of a step's logit rows where the logits are (Backend::sample_rows): per row
// the chain's parameters, the host's uniform draw and the row's penalised tokens, so that
// only token ids come back. The rule is the Sampler's (lib/sampling/sampler.h); rows a
// device cannot take (top_k off or above kMaxSampleTopK, which sort much of the
// vocabulary) stay with the host sampler.
#pragma once

#include <cstdint>
#include <span>

namespace inlay {

// The largest top_k a backend samples.
inline constexpr int32_t kMaxSampleTopK = 1024;
// The most penalised tokens (distinct tokens of the rows' windows) one step carries.
inline constexpr int64_t kMaxSamplePenalties = int64_t{1} << 16;

// A penalised token of a row: its logit becomes
//   logit > 0 ? logit / repeat_penalty : logit * repeat_penalty, then
//   minus (count * frequency_penalty + presence_penalty), each operation rounded to float.
struct PenaltyEntry {
    int32_t token = 0;
    int32_t count = 0;  // occurrences in the window, >= 1
};

struct RowSampling {
    // <= 0: greedy (the argmax after the penalties; the fields below up to u unused).
    float temperature = 0.0f;
    int32_t top_k = 0;              // 1..min(kMaxSampleTopK, n_vocab - 1) when not greedy
    float top_p = 1.0f;             // in (0, 1]; 1: off
    float min_p = 0.0f;             // <= 0: off
    double inv_temperature = 1.0;   // the host's 1.0 / double(temperature)
    double log_min_p = 0.0;         // the host's log(double(min_p))
    double u = 0.0;                 // the draw, in [0, 1)
    float repeat_penalty = 1.0f;
    float frequency_penalty = 0.0f;
    float presence_penalty = 0.0f;
    int32_t penalty_begin = 0;      // this row's entries: penalties[begin, begin + count)
    int32_t penalty_count = 0;
};

// One step's rows (host memory, owned by the caller): rows[r] samples logit row r.
struct SampleRows {
    std::span<const RowSampling> rows;
    std::span<const PenaltyEntry> penalties;
};

// Throws INLAY_ERR_INTERNAL (a caller's bug) unless there are n_rows rows, each row's
// penalty slice lies inside `penalties` with distinct tokens in [0, n_vocab) and counts
// >= 1, the slices total at most kMaxSamplePenalties, and each non-greedy row has top_k in
// [1, min(kMaxSampleTopK, n_vocab - 1)], top_p in (0, 1], u in [0, 1) and finite scalars.
void validate_sample_rows(const SampleRows& rows, int64_t n_rows, int64_t n_vocab);

}  // namespace inlay
