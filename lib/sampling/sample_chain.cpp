#include "sampling/sample_chain.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/argmax.h"
#include "core/block_scan.h"
#include "sampling/sampler.h"

namespace inlay {

using scan_detail::any_above_block;
using scan_detail::kScanBlock;
using scan_detail::max_block;

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Strict total order over candidates: higher logit first, lower id on ties. Candidates are
// never NaN, so every selection and sort with it gives the same set on every platform.
template <class C>
bool better(const C& a, const C& b) noexcept {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
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

ChainScalars chain_scalars(const SamplingParams& params) noexcept {
    ChainScalars s;
    s.inv_temperature = 1.0 / static_cast<double>(params.temperature);
    s.log_min_p = params.min_p > 0.0f ? std::log(static_cast<double>(params.min_p)) : 0.0;
    return s;
}

int32_t SampleChain::pick(std::span<const float> logits, const SamplingParams& params, double u) {
    if (const int32_t only = survivors(logits, params); only != kSurvivorsReady) return only == kAllNaN ? -1 : only;
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

bool SampleChain::distribution(std::span<const float> logits, const SamplingParams& params, TokenDistribution& out) {
    if (const int32_t only = survivors(logits, params); only != kSurvivorsReady) {
        if (only == kAllNaN) return false;
        out.set_point(only);
        return true;
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
    return true;
}

int32_t SampleChain::survivors(std::span<const float> src, const SamplingParams& params) {
    const bool use_top_p = params.top_p < 1.0f;
    const bool use_min_p = params.min_p > 0.0f;
    const ChainScalars scalars = chain_scalars(params);
    // min_p keeps p >= min_p * p_max, i.e. logit - max >= log(min_p); compared in double.
    auto passes_min_p = [&](float logit, float max_logit) {
        return logit == max_logit || static_cast<double>(logit) - static_cast<double>(max_logit) >= scalars.log_min_p;
    };

    // top_p normalises over what top_k left (at temperature 1), so that mass is summed
    // before min_p narrows the set. top_p and min_p both keep a prefix of the same order,
    // so applying min_p first and then cutting at top_p's point gives llama.cpp's
    // top_p -> min_p set while sorting only min_p's (usually few) survivors.
    double top_p_mass = 0.0;
    float max_logit = kNegInf;
    bool in_id_order = false;
    if (params.top_k > 0 && static_cast<size_t>(params.top_k) < src.size()) {
        // The top_k set comes sorted (best first): every sum below runs in that order, one
        // term after another, which a device reproduces to the bit (sample_rows).
        select_top_k(src, static_cast<size_t>(params.top_k));
        if (cands_.empty()) return kAllNaN;
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
        if (use_top_p) {
            const double target = static_cast<double>(params.top_p) * top_p_mass;
            double sum = 0.0;
            for (size_t i = 0; i < cands_.size(); ++i) {
                sum += cands_[i].weight;
                if (sum >= target) {
                    cands_.resize(i + 1);
                    break;
                }
            }
        }
    } else {
        max_logit = max_value(src);
        if (max_logit == kNegInf) {
            const int32_t token = argmax(src);
            return token < 0 ? kAllNaN : token;
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
        if (use_top_p) {
            cands_.resize(top_p_keep(static_cast<double>(params.top_p) * top_p_mass));
            in_id_order = false;
        }
    }

    if (!in_id_order) put_in_id_order(src);
    for (Candidate& c : cands_) c.weight = weight(c.logit, max_logit, scalars.inv_temperature);
    return kSurvivorsReady;
}

// Reorders the survivors by id: a sort when there are few, else a pass over the
// vocabulary (top_p with top_k off can keep most of it, and sorting that is slow).
void SampleChain::put_in_id_order(std::span<const float> logits) {
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
// the current threshold, and that is tested a whole block at a time. Leaves them sorted,
// best first.
void SampleChain::select_top_k(std::span<const float> logits, size_t k) {
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

// How many candidates top_p keeps when top_k is off (the candidates in id order): the
// smallest number of the best (by `better`) whose mass reaches `target_mass` (all of them
// if it never does: min_p already cut shorter, or rounding), and moves those to the front
// in no particular order. A quickselect on mass finds the cut in expected linear time
// without sorting; the draw only needs the set.
size_t SampleChain::top_p_keep(double target_mass) {
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
