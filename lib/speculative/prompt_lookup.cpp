#include "speculative/prompt_lookup.h"

#include <algorithm>

namespace inlay {

size_t propose_by_lookup(std::span<const int32_t> context, int32_t max_tokens, const LookupOptions& options,
                         std::vector<int32_t>& out) {
    out.clear();
    const auto len = static_cast<int64_t>(context.size());
    if (max_tokens <= 0 || options.ngram_min < 1) return 0;
    for (int64_t n = std::min<int64_t>(options.ngram_max, len - 1); n >= options.ngram_min; --n) {
        const auto suffix = context.subspan(static_cast<size_t>(len - n));
        // Occurrences ending at `end` (exclusive), most recent first; one that ends at
        // len is the suffix itself, and one must leave at least one token after it.
        for (int64_t end = len - 1; end >= n; --end) {
            if (!std::equal(suffix.begin(), suffix.end(), context.begin() + (end - n))) continue;
            const int64_t take = std::min<int64_t>(max_tokens, len - end);
            out.assign(context.begin() + end, context.begin() + end + take);
            return out.size();
        }
    }
    return 0;
}

}  // namespace inlay
