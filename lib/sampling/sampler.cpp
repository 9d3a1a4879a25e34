#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/argmax.h"
#include "core/block_scan.h"
#include "sampling/penalties.h"

namespace inlay {

using scan_detail::any_above_block;
using scan_detail::kScanBlock;
using scan_detail::max_block;

namespace {

// No logit is a number: the model's computation is broken (not the sampler's input
// handling), so the status says the weights are at fault.
[[noreturn]] void fail_all_nan() {
    fail(INLAY_ERR_BAD_WEIGHTS, "every logit is NaN: the model's weights (or their quantization) compute no numbers");
}

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Strict total order over candidates: higher logit first, lower id on ties. Candidates are
// never NaN, so every selection and sort with it gives the same set on every platform.
template <class C>
bool better(const C& a, const C& b) noexcept {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// Uniform in [0, 1) from the top 53 bits: std::uniform_real_distribution is not specified
// bit-for-bit, this is.
double uniform53(std::mt19937_64& rng) {
    return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

// Unnormalised softmax weight relative to the largest logit. The equality test keeps a
// +inf maximum finite (inf - inf would be NaN): +inf logits share all of the mass.
double weight(float logit, float max_logit, double inv_temp) noexcept {
    if (logit == max_logit) return 1.0;
    return std::exp((static_cast<double>(logit) - static_cast<double>(max_logit)) * inv_temp);
}

float max_value(std::span<const float> values) noexcept {
    float best = kNegInf;
    size_t i = 0;
    for (; i + kScanBlock <= values.size(); i += kScanBlock) best = std::max(best, max_block(values.data() + i));
    for (; i < values.size(); ++i) best = values[i] > best ? values[i] : best;
    return best;
}

}  // namespace

Sampler::Sampler(const SamplingParams& params, int32_t n_vocab) : params_(params), n_vocab_(n_vocab), rng_(params.seed) {
    validate(params);
    if (n_vocab <= 0) fail(INLAY_ERR_INVALID_ARGUMENT, "sampling: n_vocab must be positive (got {})", n_vocab);
}

double TokenDistribution::prob(int32_t id) const noexcept {
    const auto it = std::lower_bound(ids.begin(), ids.end(), id);
    return it != ids.end() && *it == id ? probs[static_cast<size_t>(it - ids.begin())] : 0.0;
}

std::span<const float> Sampler::penalized(std::span<const float> logits, std::span<const int32_t> history) {
    if (logits.size() != static_cast<size_t>(n_vocab_))
        fail(INLAY_ERR_INVALID_ARGUMENT, "sampling: got {} logits for a vocabulary of {}", logits.size(), n_vocab_);
    if (!penalties_active(params_)) return logits;
    penalized_.assign(logits.begin(), logits.end());
    apply_penalties(penalized_, history, params_, counts_);
    return penalized_;
}

double Sampler::uniform() { return uniform53(rng_); }

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> history) {
    const std::span<const float> src = penalized(logits, history);
    if (greedy()) {
        const int32_t token = argmax(src);
        if (token < 0) fail_all_nan();
        return token;
    }
    const double u = uniform53(rng_);  // drawn first so each sample consumes exactly one
    if (const int32_t only = survivors(src); only >= 0) return only;
    double total = 0.0;
    for (const Candidate& c : cands_) total += c.weight;
    const double target = u * total;
    double sum = 0.0;
    size_t last_positive = 0;
    for (size_t i = 0; i < cands_.size(); ++i) {
        sum += cands_[i].weight;
        if (cands_[i].weight > 0.0) last_positive = i;
        if (sum > target) return cands_[i].id;
    }
    return cands_[last_positive].id;  // rounding kept the sum from exceeding the target
}

int32_t Sampler::from_argmax(int32_t id) const {
    if (!plain_argmax()) fail(INLAY_ERR_INTERNAL, "from_argmax: this sampler is not a plain argmax");
    if (id < 0) fail_all_nan();
    if (id >= n_vocab_) fail(INLAY_ERR_INTERNAL, "from_argmax: id {} outside the vocabulary of {}", id, n_vocab_);
    return id;
}

void Sampler::distribution(std::span<const float> logits, std::span<const int32_t> history, TokenDistribution& out) {
    const std::span<const float> src = penalized(logits, history);
    if (greedy()) {
        const int32_t token = argmax(src);
        if (token < 0) fail_all_nan();
        out.set_point(token);
        return;
    }
    if (const int32_t only = survivors(src); only >= 0) {
        out.set_point(only);
        return;
    }
    double total = 0.0;
    for (const Candidate& c : cands_) total += c.weight;
    out.ids.clear();
    out.probs.clear();
    for (const Candidate& c : cands_) {
        if (c.weight <= 0.0) continue;
        out.ids.push_back(c.id);
        out.probs.push_back(c.weight / total);
    }
}

int32_t Sampler::survivors(std::span<const float> src) {
    const bool use_top_p = params_.top_p < 1.0f;
    const bool use_min_p = params_.min_p > 0.0f;
    const double log_min_p = use_min_p ? std::log(static_cast<double>(params_.min_p)) : 0.0;
    // min_p keeps p >= min_p * p_max, i.e. logit - max >= log(min_p); compared in double.
    auto passes_min_p = [&](float logit, float max_logit) {
        return logit == max_logit || static_cast<double>(logit) - static_cast<double>(max_logit) >= log_min_p;
    };

    // top_p normalises over what top_k left (at temperature 1), so that mass is summed
    // before min_p narrows the set. top_p and min_p both keep a prefix of the same order,
    // so applying min_p first and then cutting at top_p's point gives llama.cpp's
    // top_p -> min_p set while sorting only min_p's (usually few) survivors.
    double top_p_mass = 0.0;
    float max_logit = kNegInf;
    bool in_id_order = false;
    if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < src.size()) {
        select_top_k(src, static_cast<size_t>(params_.top_k));
        if (cands_.empty()) fail_all_nan();
        max_logit = cands_.front().logit;
        if (max_logit == kNegInf) return cands_.front().id;  // nothing is possible: lowest id, as greedy
        if (use_top_p) {
            for (Candidate& c : cands_) top_p_mass += c.weight = weight(c.logit, max_logit, 1.0);
        }
        if (use_min_p) {
            size_t keep = 1;
            while (keep < cands_.size() && passes_min_p(cands_[keep].logit, max_logit)) ++keep;
            cands_.resize(keep);
        }
    } else {
        max_logit = max_value(src);
        if (max_logit == kNegInf) {
            const int32_t token = argmax(src);
            if (token < 0) fail_all_nan();
            return token;
        }
        cands_.clear();
        in_id_order = true;
        for (size_t i = 0; i < src.size(); ++i) {
            const float v = src[i];
            if (std::isnan(v)) continue;
            double mass = 0.0;
            if (use_top_p) top_p_mass += mass = weight(v, max_logit, 1.0);
            if (use_min_p && !passes_min_p(v, max_logit)) continue;
            cands_.push_back({v, static_cast<int32_t>(i), mass});
        }
    }

    if (use_top_p) {
        cands_.resize(top_p_keep(static_cast<double>(params_.top_p) * top_p_mass));
        in_id_order = false;
    }
    if (!in_id_order) put_in_id_order(src);

    const double inv_temp = 1.0 / static_cast<double>(params_.temperature);
    for (Candidate& c : cands_) c.weight = weight(c.logit, max_logit, inv_temp);
    return -1;
}

// Reorders the survivors by id: a sort when there are few, else a pass over the
// vocabulary (top_p with top_k off can keep most of it, and sorting that is slow).
void Sampler::put_in_id_order(std::span<const float> logits) {
    if (cands_.size() <= 4096) {
        std::sort(cands_.begin(), cands_.end(), [](const Candidate& a, const Candidate& b) { return a.id < b.id; });
        return;
    }
    kept_.assign(logits.size(), 0);
    for (const Candidate& c : cands_) kept_[static_cast<size_t>(c.id)] = 1;
    size_t j = 0;
    for (size_t id = 0; id < kept_.size(); ++id) {
        if (kept_[id] != 0) cands_[j++] = {logits[id], static_cast<int32_t>(id), 0.0};
    }
}

// Keeps the k best (by `better`) in a heap whose front is the worst kept, scanning in id
// order so that a tie never displaces a lower id. Almost every block holds nothing above
// the current threshold, and that is tested a whole block at a time.
void Sampler::select_top_k(std::span<const float> logits, size_t k) {
    const auto cmp = [](const Candidate& a, const Candidate& b) { return better(a, b); };
    cands_.clear();
    const size_t n = logits.size();
    const float* p = logits.data();
    size_t i = 0;
    for (; i < n && cands_.size() < k; ++i) {
        if (!std::isnan(p[i])) cands_.push_back({p[i], static_cast<int32_t>(i), 0.0});
    }
    std::make_heap(cands_.begin(), cands_.end(), cmp);
    if (cands_.size() == k) {
        float threshold = cands_.front().logit;
        while (i < n) {
            if (i + kScanBlock <= n && !any_above_block(p + i, threshold)) {
                i += kScanBlock;
                continue;
            }
            const size_t end = std::min(i + kScanBlock, n);
            for (; i < end; ++i) {
                if (!(p[i] > threshold)) continue;  // also skips NaN
                std::pop_heap(cands_.begin(), cands_.end(), cmp);
                cands_.back() = {p[i], static_cast<int32_t>(i), 0.0};
                std::push_heap(cands_.begin(), cands_.end(), cmp);
                threshold = cands_.front().logit;
            }
        }
    }
    std::sort_heap(cands_.begin(), cands_.end(), cmp);
}

// How many candidates top_p keeps: the smallest number of the best (by `better`) whose
// mass reaches `target_mass` (all of them if it never does: min_p already cut shorter, or
// rounding), and moves those to the front in no particular order. A quickselect on mass
// finds the cut in expected linear time without sorting; the draw only needs the set.
size_t Sampler::top_p_keep(double target_mass) {
    const auto cmp = [](const Candidate& a, const Candidate& b) { return better(a, b); };
    size_t lo = 0;                // cands_[0, lo) are kept, all better than the rest
    size_t hi = cands_.size();    // the cut lies in [lo, hi]
    double mass_before = 0.0;     // mass of cands_[0, lo)
    int rounds_left = 64;         // bad pivots on adversarial input: fall back to sorting
    while (hi - lo > 32 && rounds_left-- > 0) {
        auto first = cands_.begin() + static_cast<std::ptrdiff_t>(lo);
        auto last = cands_.begin() + static_cast<std::ptrdiff_t>(hi);
        // Median of three as pivot, moved to the end while partitioning.
        auto mid = first + (last - first) / 2;
        if (cmp(*mid, *first)) std::iter_swap(mid, first);
        if (cmp(*(last - 1), *first)) std::iter_swap(last - 1, first);
        if (cmp(*(last - 1), *mid)) std::iter_swap(last - 1, mid);
        std::iter_swap(mid, last - 1);
        const Candidate pivot = *(last - 1);
        auto split = std::partition(first, last - 1, [&](const Candidate& c) { return cmp(c, pivot); });
        std::iter_swap(split, last - 1);  // the pivot now sits between the better and the worse
        double better_mass = 0.0;
        for (auto it = first; it != split; ++it) better_mass += it->weight;
        const auto pivot_pos = static_cast<size_t>(split - cands_.begin());
        if (mass_before + better_mass >= target_mass) {
            hi = pivot_pos;
        } else if (mass_before + better_mass + pivot.weight >= target_mass) {
            return pivot_pos + 1;
        } else {
            mass_before += better_mass + pivot.weight;
            lo = pivot_pos + 1;
        }
    }
    auto first = cands_.begin() + static_cast<std::ptrdiff_t>(lo);
    std::sort(first, cands_.begin() + static_cast<std::ptrdiff_t>(hi), cmp);
    double sum = mass_before;
    for (size_t i = lo; i < hi; ++i) {
        sum += cands_[i].weight;
        if (sum >= target_mass) return i + 1;
    }
    return hi;
}

}  // namespace inlay
