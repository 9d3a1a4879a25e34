#include "tokenizer/unicode_nfc.h"

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "core/utf8.h"

namespace inlay::unicode {

namespace {

struct CccRange {
    uint32_t first;
    uint32_t last;
    uint8_t ccc;
};

// One level of a canonical decomposition: cp -> d0 (d1 == 0) or d0 d1. `composes`
// marks primary composites (two code points, not excluded from composition).
struct Decomposition {
    uint32_t cp;
    uint32_t d0;
    uint32_t d1;
    bool composes;
};

#include "tokenizer/unicode_nfc_tables.inc"

// Hangul syllables (Unicode chapter 3.12).
constexpr uint32_t s_base = 0xAC00, l_base = 0x1100, v_base = 0x1161, t_base = 0x11A7;
constexpr uint32_t l_count = 19, v_count = 21, t_count = 28, n_count = v_count * t_count, s_count = l_count * n_count;

uint8_t combining_class(uint32_t cp) noexcept {
    if (cp < 0x300) return 0;
    const auto* end = std::end(k_ccc_ranges);
    const auto* it =
        std::upper_bound(std::begin(k_ccc_ranges), end, cp, [](uint32_t c, const CccRange& r) { return c < r.first; });
    if (it == std::begin(k_ccc_ranges)) return 0;
    --it;
    return cp <= it->last ? it->ccc : 0;
}

const Decomposition* find_decomposition(uint32_t cp) noexcept {
    const auto* end = std::end(k_decompositions);
    const auto* it = std::lower_bound(std::begin(k_decompositions), end, cp,
                                      [](const Decomposition& d, uint32_t c) { return d.cp < c; });
    return it != end && it->cp == cp ? it : nullptr;
}

uint64_t pair_key(uint32_t a, uint32_t b) {
    return (static_cast<uint64_t>(a) << 21) | b;
}

const std::unordered_map<uint64_t, uint32_t>& compositions() {
    static const auto table = [] {
        std::unordered_map<uint64_t, uint32_t> m;
        for (const Decomposition& d : k_decompositions)
            if (d.composes) m.emplace(pair_key(d.d0, d.d1), d.cp);
        return m;
    }();
    return table;
}

void decompose(uint32_t cp, std::vector<uint32_t>& out) {
    if (cp >= s_base && cp < s_base + s_count) {
        const uint32_t s = cp - s_base;
        out.push_back(l_base + s / n_count);
        out.push_back(v_base + (s % n_count) / t_count);
        if (s % t_count != 0) out.push_back(t_base + s % t_count);
        return;
    }
    const Decomposition* d = cp < 0xC0 ? nullptr : find_decomposition(cp);
    if (!d) {
        out.push_back(cp);
        return;
    }
    decompose(d->d0, out);  // depth is bounded by the data (at most 4 levels)
    if (d->d1) decompose(d->d1, out);
}

// The primary composite of a + b, or 0.
uint32_t compose(uint32_t a, uint32_t b) {
    if (a >= l_base && a < l_base + l_count && b >= v_base && b < v_base + v_count)
        return s_base + ((a - l_base) * v_count + (b - v_base)) * t_count;
    if (a >= s_base && a < s_base + s_count && (a - s_base) % t_count == 0 && b > t_base && b < t_base + t_count)
        return a + (b - t_base);
    const auto& m = compositions();
    const auto it = m.find(pair_key(a, b));
    return it == m.end() ? 0 : it->second;
}

}  // namespace

bool is_nfc_quick(std::string_view text) noexcept {
    // U+0300 is encoded as CC 80; every lead byte below 0xCC starts a code point < U+0300.
    return std::all_of(text.begin(), text.end(), [](char c) { return static_cast<uint8_t>(c) < 0xCC; });
}

std::string nfc(std::string_view text) {
    std::vector<uint32_t> cps;
    cps.reserve(text.size());
    for (size_t pos = 0; pos < text.size();) decompose(utf8::decode_valid(text, pos), cps);

    // Canonical ordering: a stable sort of every run of non-starters by class.
    for (size_t i = 0; i < cps.size();) {
        if (combining_class(cps[i]) == 0) {
            ++i;
            continue;
        }
        size_t j = i;
        while (j < cps.size() && combining_class(cps[j]) != 0) ++j;
        std::stable_sort(cps.begin() + static_cast<std::ptrdiff_t>(i), cps.begin() + static_cast<std::ptrdiff_t>(j),
                         [](uint32_t a, uint32_t b) { return combining_class(a) < combining_class(b); });
        i = j;
    }

    // Canonical composition (UAX #15's algorithm): a character combines with the last
    // starter unless a character of the same or a higher class stands between them.
    if (!cps.empty()) {
        size_t starter = 0;
        int last_class = combining_class(cps[0]) == 0 ? 0 : 256;
        size_t kept = 1;
        for (size_t i = 1; i < cps.size(); ++i) {
            const uint32_t cp = cps[i];
            const int cls = combining_class(cp);
            const uint32_t composite = last_class < cls || last_class == 0 ? compose(cps[starter], cp) : 0;
            if (composite != 0 && (last_class < cls || last_class == 0)) {
                cps[starter] = composite;
                continue;
            }
            if (cls == 0) starter = kept;
            last_class = cls;
            cps[kept++] = cp;
        }
        cps.resize(kept);
    }

    std::string out;
    out.reserve(text.size());
    for (const uint32_t cp : cps) utf8::append_codepoint(out, cp);
    return out;
}

const char* unicode_version() noexcept {
    return k_unicode_version;
}

}  // namespace inlay::unicode
