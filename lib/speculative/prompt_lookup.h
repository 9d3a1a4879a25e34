// Prompt lookup: draft tokens copied from the conversation itself. When the text repeats
// (code being edited, a document being quoted, a list), the tokens that followed an
// earlier occurrence of the current ending are a good guess for what comes next.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace inlay {

struct LookupOptions {
    int32_t ngram_max = 3;  // longest ending searched for
    int32_t ngram_min = 2;  // shortest ending that may propose (1 matches almost anything)
};

// Finds the longest ending of `context` (ngram_max down to ngram_min tokens) that also
// occurs earlier, takes its most recent earlier occurrence, and writes the up to
// `max_tokens` tokens that followed it into `out` (cleared first). Returns how many.
// O(context length x ngram_max) per call, no allocation beyond `out`.
size_t propose_by_lookup(std::span<const int32_t> context, int32_t max_tokens, const LookupOptions& options,
                         std::vector<int32_t>& out);

}  // namespace inlay
