// sample_rows: the host sampler's chain (penalties, top_k, top_p, min_p, temperature, the
// draw) on the device, so that only token ids cross to the host. The rule, to the bit, is
// in inlay_cuda_kernels.h; lib/sampling/sample_chain.cpp is the host's side of it.
//
// One CTA per row. top_k is an exact radix select over order-preserving 32-bit keys (three
// passes of 11, 11 and 10 bits, histograms in shared memory), then the values above the
// k-th key and the first of the ties at it (index order) are gathered and sorted best
// first (bitonic, in shared memory). What follows is over at most kSampleMaxTopK values:
// weights in parallel, every sum by one thread in the host's order.
#include "block_argmax.cuh"
#include "inlay_cuda_kernels.h"
#include "launch_util.h"

namespace inlay::cuda {
namespace {

constexpr int kThreads = 512;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxBins = 1 << 11;
constexpr int kIdNone = 0x7fffffff;  // sorts after every real index

__device__ __forceinline__ bool is_nan(float v) {
    return v != v;
}

// Order-preserving key of a non-NaN float; -0 takes +0's key (they compare equal).
__device__ __forceinline__ unsigned order_key(float v) {
    const unsigned b = __float_as_uint(v == 0.0f ? 0.0f : v);
    return (b & 0x80000000u) != 0u ? ~b : (b | 0x80000000u);
}

// The host's candidate order: larger value first, then lower index.
__device__ __forceinline__ bool better(float av, int ai, float bv, int bi) {
    return av > bv || (av == bv && ai < bi);
}

// The host's unnormalised weight (sample_chain.cpp's weight()).
__device__ __forceinline__ double chain_weight(float v, float max_v, double inv_temp) {
    if (v == max_v) return 1.0;
    return exp(__dmul_rn(__dsub_rn(static_cast<double>(v), static_cast<double>(max_v)), inv_temp));
}

// The host's penalised logit (penalties.cpp's penalized_logit), one rounding at a time.
__device__ __forceinline__ float penalized(float v, int count, const SampleRowParams& p) {
    v = v > 0.0f ? __fdiv_rn(v, p.repeat_penalty) : __fmul_rn(v, p.repeat_penalty);
    return __fsub_rn(v, __fadd_rn(__fmul_rn(static_cast<float>(count), p.frequency_penalty), p.presence_penalty));
}

// Exclusive count of `flag` over the CTA in thread order (every thread calls); `total`
// gets the CTA's count.
__device__ int block_rank(bool flag, int* warp_counts, int& total) {
    const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
    const unsigned ballot = __ballot_sync(dev::kFullMask, flag);
    if (lane == 0) warp_counts[warp] = __popc(ballot);
    __syncthreads();
    int before = 0;
    total = 0;
    for (int w = 0; w < kWarps; ++w) {
        const int c = warp_counts[w];
        before += w < warp ? c : 0;
        total += c;
    }
    __syncthreads();  // warp_counts is written again by the next call
    return before + __popc(ballot & ((1u << lane) - 1u));
}

// Warp 0: the digit (bin) holding the rank-th largest (1-based) counted key, where lane l
// owns the bins [bins - (l + 1) * per, bins - l * per). Writes the digit and the count in
// the bins above it; with `first`, clamps rank to the keys counted (all non-NaN values)
// and writes it, or digit -1 when there are none.
__device__ void find_digit(const int* hist, int bins, int rank, bool first, int* digit, int* above, int* rank_out) {
    const int lane = static_cast<int>(threadIdx.x) & 31;
    const int per = bins / 32;
    const int hi = bins - lane * per, lo = hi - per;
    int own = 0;
    for (int b = lo; b < hi; ++b) own += hist[b];
    int incl = own;
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
        const int t = __shfl_up_sync(dev::kFullMask, incl, off);
        if (lane >= off) incl += t;
    }
    const int total = __shfl_sync(dev::kFullMask, incl, 31);
    if (first) {
        rank = rank < total ? rank : total;
        if (lane == 0) {
            *rank_out = rank;
            if (total == 0) *digit = -1;
        }
        if (total == 0) return;
    }
    const unsigned hit = __ballot_sync(dev::kFullMask, incl >= rank);
    if (hit == 0u) return;  // cannot happen: the bins hold at least rank keys
    if (lane == __ffs(static_cast<int>(hit)) - 1) {
        int acc = incl - own;
        for (int b = hi - 1; b >= lo; --b) {
            if (acc + hist[b] >= rank) {
                *digit = b;
                *above = acc;
                break;
            }
            acc += hist[b];
        }
    }
}

// Sorts v/id[0, n) (n a power of two) best first (by_id false) or by index (true).
template <bool by_id>
__device__ void bitonic_sort(float* v, int* id, int n) {
    for (int size = 2; size <= n; size <<= 1) {
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            for (int i = static_cast<int>(threadIdx.x); i < n; i += kThreads) {
                const int j = i ^ stride;
                if (j <= i) continue;
                const bool j_first = by_id ? id[j] < id[i] : better(v[j], id[j], v[i], id[i]);
                if (j_first == ((i & size) == 0)) {
                    const float tv = v[i];
                    v[i] = v[j];
                    v[j] = tv;
                    const int ti = id[i];
                    id[i] = id[j];
                    id[j] = ti;
                }
            }
            __syncthreads();
        }
    }
}

// Fills v/id[n, p) with entries that sort after every candidate both ways (p the least
// power of two >= n) and returns p; every thread calls (it ends with a barrier).
__device__ int pad_to_pow2(float* v, int* id, int n) {
    int p = 1;
    while (p < n) p <<= 1;
    for (int i = n + static_cast<int>(threadIdx.x); i < p; i += kThreads) {
        v[i] = dev::neg_inf();
        id[i] = kIdNone;
    }
    __syncthreads();
    return p;
}

__global__ void __launch_bounds__(kThreads) sample_kernel(float* x, long long n_cols, long long x_stride,
                                                          const SampleRowParams* params, const PenaltyPair* pairs,
                                                          int* ids) {
    float* row = x + static_cast<long long>(blockIdx.x) * x_stride;
    const SampleRowParams p = params[blockIdx.x];
    const int tid = static_cast<int>(threadIdx.x);

    // 1. Penalties (distinct tokens: no two threads write one value).
    for (int i = tid; i < p.penalty_count; i += kThreads) {
        const PenaltyPair e = pairs[p.penalty_begin + i];
        if (e.token >= 0 && e.token < n_cols) row[e.token] = penalized(row[e.token], e.count, p);
    }
    __syncthreads();

    // 2. Greedy.
    if (p.temperature <= 0.0f) {
        const int at = dev::block_argmax<kThreads>(row, n_cols);
        if (tid == 0) ids[blockIdx.x] = at;
        return;
    }

    // 3. The k-th best key, one digit a pass.
    __shared__ int hist[kMaxBins];
    __shared__ int s_digit, s_above, s_k;
    __shared__ int warp_counts[kWarps];
    int rank = p.top_k < 1 ? 1 : (p.top_k > kSampleMaxTopK ? kSampleMaxTopK : p.top_k);
    unsigned prefix = 0u, mask = 0u;
    for (int pass = 0; pass < 3; ++pass) {
        const int shift = pass == 0 ? 21 : (pass == 1 ? 10 : 0);
        const int bins = pass == 2 ? 1 << 10 : 1 << 11;
        for (int b = tid; b < bins; b += kThreads) hist[b] = 0;
        __syncthreads();
#pragma unroll 4
        for (long long c = tid; c < n_cols; c += kThreads) {
            const float v = row[c];
            if (is_nan(v)) continue;
            const unsigned key = order_key(v);
            if ((key & mask) == prefix) atomicAdd(&hist[(key >> shift) & static_cast<unsigned>(bins - 1)], 1);
        }
        __syncthreads();
        if (tid < 32) find_digit(hist, bins, rank, pass == 0, &s_digit, &s_above, &s_k);
        __syncthreads();
        if (s_digit < 0) {  // every value is NaN
            if (tid == 0) ids[blockIdx.x] = -1;
            return;
        }
        if (pass == 0) rank = s_k;
        rank -= s_above;
        prefix |= static_cast<unsigned>(s_digit) << shift;
        mask |= static_cast<unsigned>(bins - 1) << shift;
        __syncthreads();  // s_* are written again by the next pass
    }
    const unsigned kth = prefix;
    const int k = s_k;          // candidates: min(top_k, non-NaN values)
    const int n_above = k - rank;  // values above the k-th key; `rank` ties at it follow

    // 4. Gather: values above kth in any order, then the first `rank` ties in index order.
    __shared__ float cand_v[kSampleMaxTopK];
    __shared__ int cand_id[kSampleMaxTopK];
    __shared__ double cand_w[kSampleMaxTopK];
    __shared__ int s_count;
    if (tid == 0) s_count = 0;
    __syncthreads();
#pragma unroll 4
    for (long long c = tid; c < n_cols; c += kThreads) {
        const float v = row[c];
        if (!is_nan(v) && order_key(v) > kth) {
            const int at = atomicAdd(&s_count, 1);
            if (at < n_above) {
                cand_v[at] = v;
                cand_id[at] = static_cast<int>(c);
            }
        }
    }
    int taken = 0;
    for (long long base = 0; base < n_cols && taken < rank; base += kThreads) {
        const long long c = base + tid;
        float v = 0.0f;
        bool tie = false;
        if (c < n_cols) {
            v = row[c];
            tie = !is_nan(v) && order_key(v) == kth;
        }
        int total = 0;
        const int r = block_rank(tie, warp_counts, total);
        if (tie && taken + r < rank) {
            cand_v[n_above + taken + r] = v;
            cand_id[n_above + taken + r] = static_cast<int>(c);
        }
        taken += total;
    }
    const int pk = pad_to_pow2(cand_v, cand_id, k);
    bitonic_sort<false>(cand_v, cand_id, pk);

    // 5. The chain over the candidates, best first.
    const float max_v = cand_v[0];
    if (max_v == dev::neg_inf()) {  // nothing is possible: the lowest index, as the host
        if (tid == 0) ids[blockIdx.x] = cand_id[0];
        return;
    }
    const bool use_top_p = p.top_p < 1.0f, use_min_p = p.min_p > 0.0f;
    if (use_top_p)
        for (int i = tid; i < k; i += kThreads) cand_w[i] = chain_weight(cand_v[i], max_v, 1.0);
    __syncthreads();
    __shared__ int s_n;
    if (tid == 0) {
        int n = k;
        double mass = 0.0;
        if (use_top_p)
            for (int i = 0; i < k; ++i) mass = __dadd_rn(mass, cand_w[i]);
        if (use_min_p) {
            int keep = 1;
            while (keep < n && (cand_v[keep] == max_v ||
                                __dsub_rn(static_cast<double>(cand_v[keep]), static_cast<double>(max_v)) >= p.log_min_p))
                ++keep;
            n = keep;
        }
        if (use_top_p) {
            const double target = __dmul_rn(static_cast<double>(p.top_p), mass);
            double sum = 0.0;
            for (int i = 0; i < n; ++i) {
                sum = __dadd_rn(sum, cand_w[i]);
                if (sum >= target) {
                    n = i + 1;
                    break;
                }
            }
        }
        s_n = n;
    }
    __syncthreads();
    const int n = s_n;

    // 6. The survivors by index, weighted at the temperature; the draw.
    const int pn = pad_to_pow2(cand_v, cand_id, n);
    bitonic_sort<true>(cand_v, cand_id, pn);
    for (int i = tid; i < n; i += kThreads) cand_w[i] = chain_weight(cand_v[i], max_v, p.inv_temperature);
    __syncthreads();
    if (tid == 0) {
        double total = 0.0;
        for (int i = 0; i < n; ++i) total = __dadd_rn(total, cand_w[i]);
        const double target = __dmul_rn(p.u, total);
        double sum = 0.0;
        int last_positive = 0, pick = -1;
        for (int i = 0; i < n; ++i) {
            sum = __dadd_rn(sum, cand_w[i]);
            if (cand_w[i] > 0.0) last_positive = i;
            if (sum > target) {
                pick = cand_id[i];
                break;
            }
        }
        ids[blockIdx.x] = pick >= 0 ? pick : cand_id[last_positive];  // rounding kept every sum at or below
    }
}

}  // namespace

cudaError_t sample_rows(float* x, int64_t n_rows, int64_t n_cols, int64_t x_stride, const SampleRowParams* params,
                        const PenaltyPair* pairs, int32_t* ids, cudaStream_t stream) {
    if (!x || !params || !ids || n_rows < 0 || n_cols < 0 || x_stride < n_cols || n_cols >= kIdNone ||
        n_rows > detail::kMaxGridX)
        return cudaErrorInvalidValue;
    if (n_rows == 0) return cudaSuccess;
    sample_kernel<<<static_cast<unsigned>(n_rows), kThreads, 0, stream>>>(x, n_cols, x_stride, params, pairs, ids);
    return detail::launch_status();
}

}  // namespace inlay::cuda
