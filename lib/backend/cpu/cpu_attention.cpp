// CpuBackend's paged KV cache writes and causal grouped-query attention.
//
// Attention is a flash-attention tile: one work item is (a run of up to T consecutive
// query tokens of one sequence, one KV head, the query heads of its group), so each K/V
// row is converted once per chunk of positions for all the item's query rows (items of
// up to three rows, as in decoding, read f16 rows in place), and an online softmax per
// row means no score array of the context length.
//
// Batch invariance: every query row's arithmetic is a fixed sequence of lane-wise vector
// ops over absolute position chunks (attention_simd.h), so its result does not depend on
// which tokens, heads or sequences share its tile, on causal masking of its neighbours,
// or on the thread count; grouping only decides how often K/V are converted.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "backend/common/op_checks.h"
#include "backend/cpu/attention_simd.h"
#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "core/half.h"
#include "quant/vec_dot.h"

namespace inlay {
namespace {

using namespace attn_simd;
constexpr int64_t kChunk = CpuBackend::kAttnChunk;
constexpr int64_t kMaxRows = CpuBackend::kAttnMaxRows;
static_assert(kChunk % kWidth == 0);

void require_batch_fits(const CpuBackend::KvStorage& kv, const CpuBackend::Batch& batch, const char* op) {
    inlay::require_batch_fits(batch.block_size, batch.n_blocks, kv.geometry(), kv.n_blocks(), op);
}

// Scores q . k over hdp (a multiple of kWidth) elements: dots8, 8 lanes, one accumulator,
// then halves, quarters, pairs (attention_simd.h). That order, not a 16-lane one, is the
// one that keeps f16-cache logits within 1e-3 of llama.cpp's refs: the f16 V accumulator
// turns a score's last-bit difference into occasional different roundings.


// f(i) over the vectors of a head (hdp floats) as f.template operator()<NV>(i) with NV
// vectors from element i: groups of four, then the rest (head_dim 48: three) in one
// call, so that the rest's dependency chains overlap instead of running one per vector.
template <class F>
inline void for_vector_groups(int64_t hdp, F&& f) {
    int64_t i = 0;
    for (; i + 4 * kWidth <= hdp; i += 4 * kWidth) f.template operator()<4>(i);
    switch ((hdp - i) / kWidth) {
        case 3: f.template operator()<3>(i); break;
        case 2: f.template operator()<2>(i); break;
        case 1: f.template operator()<1>(i); break;
        default: break;
    }
}

// n rows of hd elements (f16 or f32) into f32 rows of hdp, zero padded.
void load_rows(const std::byte* src, bool f16, int64_t n, int64_t hd, int64_t hdp, float* dst) {
    for (int64_t s = 0; s < n; ++s) {
        float* d = dst + s * hdp;
        if (f16) {
            const auto* h = reinterpret_cast<const uint16_t*>(src) + s * hd;
            int64_t i = 0;
            for (; i + kWidth <= hd; i += kWidth) vstore(d + i, vload_f16(h + i));
            for (; i < hd; ++i) d[i] = f16_to_f32(h[i]);
        } else {
            std::memcpy(d, reinterpret_cast<const float*>(src) + s * hd, static_cast<size_t>(hd) * sizeof(float));
        }
        std::fill(d + hd, d + hdp, 0.0f);
    }
}

// A query row into its f32 slot of hdp, zero padded; for the f16 cache rounded to f16
// first, as llama.cpp rounds q (vround_f16 and f32_to_f16 both round to nearest even).
void load_query(const float* q, bool f16, int64_t hd, int64_t hdp, float* dst) {
    int64_t i = 0;
    if (f16) {
        for (; i + kWidth <= hd; i += kWidth) vstore(dst + i, vround_f16(vload(q + i)));
        for (; i < hd; ++i) dst[i] = f16_to_f32(f32_to_f16(q[i]));
    } else {
        std::memcpy(dst, q, static_cast<size_t>(hd) * sizeof(float));
    }
    std::fill(dst + hd, dst + hdp, 0.0f);
}

// One query row's running state.
struct Row {
    const float* q;   // in the batch's q buffer
    float* out;
    int64_t n_visible;  // positions [0, n_visible) (causal)
    float max, sum;
};

// A chunk's softmax weights for the item's rows of the f16 model (below): e(s, r) is row
// r's exp(old max - score) where position s's score raised its running max (grew(s, r)
// = 1), else exp(score - max); it holds the raw dots in between (scores_f16, then
// softmax_f16). Items of many rows (prompts) keep them position-major, so that the
// softmax runs the rows' chains side by side in vector lanes; items of a few rows
// (decoding: one GQA group) row-major, each row's positions contiguous.
struct ChunkWeights {
    alignas(64) float e_[kChunk * kMaxRows];
    alignas(64) float grew_[kChunk * kMaxRows];
    int64_t n[kMaxRows];  // positions of the chunk each row sees
    bool by_position = false;

    void set_layout(int64_t n_rows) { by_position = n_rows >= kWidth / 2; }
    // Distance between positions s and s + 1 of one row.
    [[nodiscard]] int64_t step() const { return by_position ? kMaxRows : 1; }
    [[nodiscard]] int64_t at(int64_t s, int64_t r) const { return by_position ? s * kMaxRows + r : r * kChunk + s; }
    float* e(int64_t s, int64_t r) { return e_ + at(s, r); }
    float* grew(int64_t s, int64_t r) { return grew_ + at(s, r); }
    [[nodiscard]] const float* e(int64_t s, int64_t r) const { return e_ + at(s, r); }
    [[nodiscard]] const float* grew(int64_t s, int64_t r) const { return grew_ + at(s, r); }
};
static_assert(kMaxRows % kWidth == 0);

// Decoding reads K/V from memory with little arithmetic per byte, so the K and V of the
// block two ahead are prefetched a few lines at a time, one step per position of the V
// update, instead of all at once at the block's start: a burst of 128 prefetches filled
// the core's miss buffers and stalled the arithmetic until they drained, so reading and
// computing took turns. Spread, they overlap: Qwen3-0.6B's attention at depth 512-640
// 130 -> 70-75 us a layer, 2 threads, Zen 5 (2, 6 or 8 lines a step: 75-90 us; a block
// one or three ahead: the same or slower).
class PrefetchWalk {
public:
    static constexpr int kLinesPerStep = 4;
    // Ranges to fetch next, once whatever is left of the last ones has been issued.
    void start(const std::byte* k, const std::byte* v, size_t bytes) {
        finish();
        next_[0] = k, end_[0] = k + bytes;
        next_[1] = v, end_[1] = v + bytes;
    }
    void step() { issue(kLinesPerStep); }
    void finish() { issue(std::numeric_limits<int>::max()); }

private:
    void issue(int lines) {
        for (int r = 0; r < 2; ++r)
            for (; lines > 0 && next_[r] < end_[r]; next_[r] += 64, --lines) __builtin_prefetch(next_[r]);
    }
    const std::byte* next_[2] = {nullptr, nullptr};
    const std::byte* end_[2] = {nullptr, nullptr};
};

// NV vectors of the f16-rounded V accumulators of NR rows (r0...), held in registers.
// Rows advance together so that their rounding chains overlap; NR and NV only decide
// which lanes run side by side, never a lane's arithmetic. Each step of a chain is a
// fused multiply-add and a round trip through f16 (about 14 cycles of latency), so a
// core needs a dozen chains in flight to keep its converters busy. With StreamV the V
// vectors are read by every row's multiply-add from the converted chunk (L1) instead of
// being held, which leaves the registers to accumulators: 16 vector registers then hold
// 12 chains (with V held: 8, and latency bound).
template <int NR, int NV, bool StreamV, class T>
inline void update_f16(float* acc, const T* vs, const ChunkWeights& w, int64_t r0, int64_t hdp, int64_t i,
                       PrefetchWalk* walk = nullptr) {
    vf a[NR][NV];
    const float* e[NR];
    const float* grew[NR];
    const int64_t step = w.step();
    int64_t n = 0;
    for (int k = 0; k < NR; ++k) {
        n = std::max(n, w.n[r0 + k]);
        e[k] = w.e(0, r0 + k);
        grew[k] = w.grew(0, r0 + k);
        for (int j = 0; j < NV; ++j) a[k][j] = vload(acc + (r0 + k) * hdp + i + j * kWidth);
    }
    for (int64_t s = 0; s < n; ++s) {
        if (walk) walk->step();
        vf v[StreamV ? 1 : NV];
        if constexpr (!StreamV)
            for (int j = 0; j < NV; ++j) v[j] = vload_kv(vs + s * hdp + i + j * kWidth);
#pragma GCC unroll 16  // a[k][j] in registers: GCC 12 left the six-row loop rolled, with a[] on the stack
        for (int k = 0; k < NR; ++k) {
            if (s >= w.n[r0 + k]) continue;
            const T* vk = vs + s * hdp + i;
            if constexpr (StreamV) asm("" : "+r"(vk));  // one load per use: not merged across rows into registers
            auto vj = [&](int j) { return StreamV ? vload_kv(vk + j * kWidth) : v[j]; };
            const vf ek = vset1(e[k][s * step]);
            // grew is 1.0f or 0.0f, its bits tested as an integer: a float compare held a zero
            // in a vector register, and with twelve accumulators GCC 12 then kept one of
            // them on the stack, a store and a reload in its rounding chain at every
            // position (AVX2). Zen 5, bench_attention stories15M shape 512-token prompt, one
            // thread, x86-64-v3: 5.70-5.90 -> 5.30-5.53 ms; stories15M F16 pp512 +4%.
            if (std::bit_cast<uint32_t>(grew[k][s * step]) != 0) {  // a new running max: rescale, then add v with weight 1
                for (int j = 0; j < NV; ++j) a[k][j] = vround_f16(vfma(vj(j), vset1(1.0f), vround_f16(vmul(a[k][j], ek))));
            } else {
                for (int j = 0; j < NV; ++j) a[k][j] = vround_f16(vfma(vj(j), ek, a[k][j]));
            }
        }
    }
    for (int k = 0; k < NR; ++k)
        for (int j = 0; j < NV; ++j) vstore(acc + (r0 + k) * hdp + i + j * kWidth, a[k][j]);
}

// Decoding items of up to this many rows read f16 K/V in place, each K and V vector
// converted once for all the rows (with AVX-512 three rows of four vectors, the four V
// vectors and the weights fit the 32 registers; SmolLM2's GQA groups are three heads).
#if INLAY_ATTN_AVX512
constexpr int64_t kStreamedRows = 3;
#else
constexpr int64_t kStreamedRows = 2;
#endif

template <int NV, class T>
void update_rows_f16(float* acc, const T* vs, const ChunkWeights& w, int64_t n_rows, int64_t hdp, int64_t i,
                     PrefetchWalk* walk) {
    int64_t r = 0;
#if INLAY_ATTN_AVX512  // 32 vector registers: 4 rows x 4 vectors stay in them
    for (; r + 4 <= n_rows; r += 4) update_f16<4, NV, false>(acc, vs, w, r, hdp, i);
    if (n_rows - r == 3) {  // a decoding group of three: one pass over V, not two
        update_f16<3, NV, false>(acc, vs, w, r, hdp, i, walk);
        r += 3;
    }
#elif INLAY_ATTN_AVX2
    if constexpr (std::is_same_v<T, float>) {  // a converted chunk: 12 chains
        constexpr int kRows = 12 / NV;
        for (; r + kRows <= n_rows; r += kRows) update_f16<kRows, NV, true>(acc, vs, w, r, hdp, i);
    }
#endif
    for (; r + 2 <= n_rows; r += 2) update_f16<2, NV, false>(acc, vs, w, r, hdp, i, walk);
    for (; r < n_rows; ++r) update_f16<1, NV, false>(acc, vs, w, r, hdp, i, walk);
}

// The f16 cache follows llama.cpp's CPU flash attention, which rounds where it does so
// that logits agree to ~1e-4 rather than ~3e-3: q rounded to f16, exact f16 products
// summed in f32, one position at a time (the running max updated per position), and the
// V accumulator rounded to f16 after every scale and every add (update_f16).
template <class T>
void scores_f16(ChunkWeights& w, int64_t r, const float* qs, const T* ks, int64_t n, int64_t hdp) {
    w.n[r] = n;
    if (!w.by_position) {  // the raw dots, until softmax_f16 turns them into weights
        dots8(qs, ks, hdp, n, hdp, w.e(0, r));
        return;
    }
    alignas(64) float dots[kChunk];
    dots8(qs, ks, hdp, n, hdp, dots);
    for (int64_t s = 0; s < n; ++s) *w.e(s, r) = dots[s];
}

// Prompt items (position-major weights): kScoreRows rows at a time share each K load
// (dots8_rows); each row's dots are dots8's, so its weights are scores_f16's. Where rows
// of a group see different numbers of the chunk's positions (the causal diagonal), dots
// up to the group's largest are computed and only each row's own kept: the chunk holds
// all of them.
// Two rows: Zen 5, bench_attention 512-token prompt, one thread, SmolLM2 / Qwen3 shapes:
// one row at a time 6.7-7.7 / 23.2-24.2 ms, two 5.0-5.5 / 15.8-16.1, three 4.9 / 15.5,
// four 6.1 / 19.5-19.8 (sixteen accumulators and four queries crowd the registers). End
// to end pp512, 2 threads: SmolLM2 Q4_K_M +10-17%, Qwen3 Q4_K_M +11-15%, F16 +5-9%.
constexpr int kScoreRows = 2;
template <class T>
void scores_f16_rows(ChunkWeights& w, const float* qs, const T* ks, const int64_t* n, int64_t n_rows, int64_t hdp) {
    int64_t r = 0;
    for (; r + kScoreRows <= n_rows; r += kScoreRows) {
        int64_t reach = 0;
        for (int k = 0; k < kScoreRows; ++k) reach = std::max(reach, n[r + k]), w.n[r + k] = n[r + k];
        if (reach == 0) continue;
        alignas(64) float dots[kScoreRows][kChunk];
        const float* q[kScoreRows];
        float* out[kScoreRows];
        for (int k = 0; k < kScoreRows; ++k) q[k] = qs + (r + k) * hdp, out[k] = dots[k];
        dots8_rows<kScoreRows>(q, ks, hdp, reach, hdp, out);
        for (int k = 0; k < kScoreRows; ++k)
            for (int64_t s = 0; s < n[r + k]; ++s) *w.e(s, r + k) = dots[k][s];
    }
    for (; r < n_rows; ++r) {
        w.n[r] = 0;
        if (n[r] > 0) scores_f16(w, r, qs + r * hdp, ks, n[r], hdp);
    }
}

// R rows of a decoding item (a GQA group's heads) that see the same positions: one
// pass over K for all R rows' dots (dots8_rows), each row's values those of scores_f16.
template <int R, class T>
void scores_f16_same(ChunkWeights& w, const float* qs, const T* ks, int64_t n, int64_t hdp) {
    const float* q[R];
    float* out[R];
    for (int k = 0; k < R; ++k) q[k] = qs + k * hdp, out[k] = w.e(0, k), w.n[k] = n;
    dots8_rows<R>(q, ks, hdp, n, hdp, out);
}

// The softmax of R row-major rows that see the same n positions: each row's running max
// and sum, one position after another (the rows' chains side by side, each row's
// operations in its own order), and its positions' exponentials in one vector (vexp:
// the same value in any lane).
template <int R>
void softmax_rows_f16(Row* rows, ChunkWeights& w, int64_t r0, float scale) {
    const int64_t n = w.n[r0];
    if (n == 0) return;
    float* e[R];
    float* grew[R];
    float m[R], sum[R];
    for (int k = 0; k < R; ++k) e[k] = w.e(0, r0 + k), grew[k] = w.grew(0, r0 + k), m[k] = rows[r0 + k].max;
    for (int64_t s = 0; s < n; ++s) {
        for (int k = 0; k < R; ++k) {
            const float score = e[k][s] * scale;
            const bool g = score > m[k];
            grew[k][s] = g ? 1.0f : 0.0f;
            e[k][s] = g ? m[k] - score : score - m[k];  // the one exponent this position needs
            m[k] = g ? score : m[k];
        }
    }
    for (int k = 0; k < R; ++k) {
        std::fill(e[k] + n, e[k] + kChunk, -std::numeric_limits<float>::infinity());
        exp_n(e[k], e[k], kChunk);
        sum[k] = rows[r0 + k].sum;
    }
    for (int64_t s = 0; s < n; ++s)
        for (int k = 0; k < R; ++k) sum[k] = grew[k][s] != 0.0f ? std::fma(sum[k], e[k][s], 1.0f) : sum[k] + e[k][s];
    for (int k = 0; k < R; ++k) rows[r0 + k].max = m[k], rows[r0 + k].sum = sum[k];
}

// P vectors of position-major rows from r0 side by side: each vector's chains are its
// own, but P of them in flight instead of one (two: bench_attention 512-token prompt,
// one thread, stories15M shape, medians of 5: AVX2 build 5.06 -> 4.70 ms, AVX-512 2.84
// -> 2.77). Positions past a vector's own n get -inf weights, which nothing reads.
template <int P>
void softmax_vectors_f16(Row* rows, ChunkWeights& w, int64_t r0, int64_t n_rows, float scale) {
    constexpr float kInf = std::numeric_limits<float>::infinity();
    alignas(64) float max0[P][kWidth], sum0[P][kWidth], seen[P][kWidth];
    int64_t n = 0;
    for (int p = 0; p < P; ++p)
        for (int k = 0; k < kWidth; ++k) {
            const int64_t r = r0 + p * kWidth + k;
            const bool live = r < n_rows;
            max0[p][k] = live ? rows[r].max : -kInf;
            sum0[p][k] = live ? rows[r].sum : 0.0f;
            seen[p][k] = live ? static_cast<float>(w.n[r]) : 0.0f;
            if (live) n = std::max(n, w.n[r]);
        }
    vf positions[P], m[P], sum[P];
    for (int p = 0; p < P; ++p) positions[p] = vload(seen[p]), m[p] = vload(max0[p]), sum[p] = vload(sum0[p]);
    for (int64_t s = 0; s < n; ++s) {
        for (int p = 0; p < P; ++p) {
            const int64_t rp = r0 + p * kWidth;
            const vmask valid = vless(vset1(static_cast<float>(s)), positions[p]);
            const vf score = vmul(vload_where(valid, w.e(s, rp)), vset1(scale));  // 0 in the other lanes
            const vmask grew = vand(valid, vgreater(score, m[p]));
            // The one exponent this position needs; -inf (a weight of 0) past the row's n.
            const vf x = vblend(grew, vsub(score, m[p]), vsub(m[p], score));
            vstore(w.e(s, rp), vblend(valid, vset1(-kInf), x));
            vstore(w.grew(s, rp), vblend(grew, vzero(), vset1(1.0f)));
            m[p] = vblend(grew, m[p], score);
        }
    }
    for (int64_t s = 0; s < n; ++s)
        for (int p = 0; p < P; ++p) vstore(w.e(s, r0 + p * kWidth), vexp(vload(w.e(s, r0 + p * kWidth))));
    for (int64_t s = 0; s < n; ++s) {
        for (int p = 0; p < P; ++p) {
            const int64_t rp = r0 + p * kWidth;
            const vmask valid = vless(vset1(static_cast<float>(s)), positions[p]);
            const vf e = vload(w.e(s, rp));
            const vmask grew = vgreater(vload(w.grew(s, rp)), vzero());
            const vf next = vblend(grew, vadd(sum[p], e), vfma(sum[p], e, vset1(1.0f)));
            sum[p] = vblend(valid, sum[p], next);
        }
    }
    for (int p = 0; p < P; ++p) {
        vstore(max0[p], m[p]);
        vstore(sum0[p], sum[p]);
        for (int k = 0; k < kWidth && r0 + p * kWidth + k < n_rows; ++k) {
            rows[r0 + p * kWidth + k].max = max0[p][k];
            rows[r0 + p * kWidth + k].sum = sum0[p][k];
        }
    }
}

// The rows' softmax weights and denominators for a chunk, from their scores
// (scores_f16). Each row's running max and sum are chains of dependent operations, one
// position after another. Position-major rows run them side by side, one row per vector
// lane, each lane with softmax_row_f16's operations (positions past a row's n leave it
// unchanged, and their scores, never written, are not read).
void softmax_f16(Row* rows, ChunkWeights& w, int64_t n_rows, float scale) {
    if (!w.by_position) {
        if (n_rows == 2 && w.n[0] == w.n[1]) return softmax_rows_f16<2>(rows, w, 0, scale);
        if (n_rows == 3 && w.n[0] == w.n[1] && w.n[1] == w.n[2]) return softmax_rows_f16<3>(rows, w, 0, scale);
        for (int64_t r = 0; r < n_rows; ++r) softmax_rows_f16<1>(rows, w, r, scale);
        return;
    }
    int64_t r0 = 0;
    for (; r0 + 2 * kWidth <= n_rows; r0 += 2 * kWidth) softmax_vectors_f16<2>(rows, w, r0, n_rows, scale);
    for (; r0 < n_rows; r0 += kWidth) softmax_vectors_f16<1>(rows, w, r0, n_rows, scale);
}

template <int NV, class T>
inline void update_f32(float* acc, const T* vs, const float* e, float rescale, int64_t n, int64_t hdp) {
    vf a[NV];
    for (int j = 0; j < NV; ++j) a[j] = vmul(vload(acc + j * kWidth), vset1(rescale));
    for (int64_t s = 0; s < n; ++s) {
        const vf w = vset1(e[s]);
        for (int j = 0; j < NV; ++j) a[j] = vfma(vload_kv(vs + s * hdp + j * kWidth), w, a[j]);
    }
    for (int j = 0; j < NV; ++j) vstore(acc + j * kWidth, a[j]);
}

// The f32 cache: full precision, softmax chunk by chunk (one rescale per chunk).
template <class T>
void row_chunk_f32(Row& row, float* acc, const float* qs, const T* ks, const T* vs, int64_t n, int64_t hdp,
                   float scale) {
    alignas(64) float x[kChunk], e[kChunk];
    dots8(qs, ks, hdp, n, hdp, x);
    float m = row.max;
    for (int64_t s = 0; s < n; ++s) {
        x[s] *= scale;
        m = std::max(m, x[s]);
    }
    for (int64_t s = 0; s < n; ++s) x[s] -= m;
    for (int64_t s = n; s < kChunk; ++s) x[s] = -std::numeric_limits<float>::infinity();
    exp_n(x, e, kChunk);
    alignas(64) float rx[kWidth], re[kWidth];
    std::fill(rx, rx + kWidth, row.max - m);  // -inf on the first chunk: rescale 0
    exp_n(rx, re, kWidth);
    const float rescale = re[0];
    float sum = row.sum * rescale;
    for (int64_t s = 0; s < n; ++s) sum += e[s];
    row.sum = sum;
    row.max = m;
    for_vector_groups(hdp, [&]<int NV>(int64_t i) { update_f32<NV>(acc + i, vs + i, e, rescale, n, hdp); });
}

}  // namespace

void CpuBackend::kv_store(KvStorage& kv, int64_t layer, const Buffer& k, const Buffer& v, const Batch& batch) {
    const KvGeometry& g = kv.geometry();
    const int64_t n_tokens = batch.n_tokens();
    const int64_t row = g.n_kv_heads * g.head_dim;
    require_batch_fits(kv, batch, "kv_store");
    if (layer < 0 || layer >= g.n_layers) fail(INLAY_ERR_INTERNAL, "kv_store: layer {} of {}", layer, g.n_layers);
    if (k.size() < static_cast<size_t>(n_tokens * row) || v.size() < static_cast<size_t>(n_tokens * row))
        fail(INLAY_ERR_INTERNAL, "kv_store: K/V buffers too small");
    const bool f16 = g.dtype == DType::F16;
    const size_t elem = f16 ? 2 : 4;
    auto store = [&](size_t begin, size_t end) {
        for (size_t t = begin; t < end; ++t) {
            // Slots were resolved (and validated) once for the step by prepare_batch.
            const int64_t block = batch.slot_block[t];
            const size_t slot_offset = static_cast<size_t>(batch.slot_index[t] * g.head_dim) * elem;
            for (int which = 0; which < 2; ++which) {
                const float* src = (which == 0 ? k : v).ptr() + t * static_cast<size_t>(row);
                for (int64_t h = 0; h < g.n_kv_heads; ++h) {
                    std::byte* dst = kv.slab(block, layer, which, h) + slot_offset;
                    const float* s = src + h * g.head_dim;
                    // f16 rounded to nearest even, by vectors where the CPU converts them
                    if (f16) quant::quantize_activations(DType::F16, s, dst, g.head_dim);
                    else std::memcpy(dst, s, static_cast<size_t>(g.head_dim) * sizeof(float));
                }
            }
        }
    };
    // A prompt's tokens write distinct slots: spread over the pool (a decode step's K and V
    // are a few hundred values, stored in place).
    if (n_tokens * row < kInPlaceFloats) store(0, static_cast<size_t>(n_tokens));
    else pool_.parallel_for(static_cast<size_t>(n_tokens), store);
}

void CpuBackend::rope_kv_append(Buffer& q, Buffer& k, const Buffer& v, const Weight* q_norm, const Weight* k_norm,
                                float eps, const RopeParams& rope_params, const Weight* freq_factors, KvStorage& kv,
                                int64_t layer, int64_t n_heads, const Batch& batch) {
    const KvGeometry& g = kv.geometry();
    const int64_t n = batch.n_tokens();
    // The parts in order, each the same arithmetic as alone: on the CPU the fusion buys
    // nothing worth a second implementation of each part (a GPU saves launches and
    // round trips through memory).
    if (q_norm) rms_norm(q, *q_norm, eps, n * n_heads, g.head_dim, q);
    if (k_norm) rms_norm(k, *k_norm, eps, n * g.n_kv_heads, g.head_dim, k);
    rope(q, n_heads, g.head_dim, batch, rope_params, freq_factors);
    rope(k, g.n_kv_heads, g.head_dim, batch, rope_params, freq_factors);
    kv_store(kv, layer, k, v, batch);
}

int64_t CpuBackend::attention_slot_floats(int64_t head_dim) {
    const int64_t hdp = (head_dim + kWidth - 1) / kWidth * kWidth;
    return 2 * kMaxRows * hdp + 2 * kChunk * hdp;  // q and accumulator rows, a K and a V chunk
}

void CpuBackend::attention(const Buffer& q, const KvStorage& kv, int64_t layer, const Batch& batch, int64_t n_heads,
                           float scale, Buffer& out, Scratch& scratch) {
    const KvGeometry& g = kv.geometry();
    const int64_t n_tokens = batch.n_tokens();
    const int64_t hd = g.head_dim;
    require_batch_fits(kv, batch, "attention");
    if (layer < 0 || layer >= g.n_layers) fail(INLAY_ERR_INTERNAL, "attention: layer {} of {}", layer, g.n_layers);
    if (n_heads % g.n_kv_heads != 0) fail(INLAY_ERR_INTERNAL, "attention: {} heads over {} KV heads", n_heads, g.n_kv_heads);
    if (q.size() < static_cast<size_t>(n_tokens * n_heads * hd) || out.size() < static_cast<size_t>(n_tokens * n_heads * hd))
        fail(INLAY_ERR_INTERNAL, "attention: buffers too small");
    if (hd > scratch.attn_head_dim || scratch.attn_slots == 0 ||
        scratch.attn_tiles.size() < static_cast<size_t>(n_tokens) + 1)
        fail(INLAY_ERR_INTERNAL, "attention: scratch made for head_dim {} and {} tokens, not {} and {}",
             scratch.attn_head_dim, static_cast<int64_t>(scratch.attn_tiles.size()) - 1, hd, n_tokens);
    if (n_tokens == 0) return;
    const int64_t group = n_heads / g.n_kv_heads;
    const bool f16 = g.dtype == DType::F16;
    const int64_t hdp = (hd + kWidth - 1) / kWidth * kWidth;
    // Items of this many rows read the f16 K/V rows in place (kStreamedRows).
    auto reads_in_place = [&](int64_t n_rows) { return f16 && hd == hdp && n_rows <= kStreamedRows; };

    // Split each group's heads into n_sub parts of at most kMaxRows heads, more parts
    // while there are fewer than two items per thread (decoding one sequence),
    // and tile each sequence's consecutive tokens so that an item has <= kMaxRows rows.
    // None of this changes a row's arithmetic, only how its K/V loads are shared.
    const int64_t want_items = pool_.size() > 1 ? int64_t{2} * pool_.size() : 1;
    int64_t n_sub = (group + kMaxRows - 1) / kMaxRows, per_tile = 1, n_tiles = 0;
    int32_t* tiles = scratch.attn_tiles.data();
    for (;; ++n_sub) {
        const int64_t heads = (group + n_sub - 1) / n_sub;
        per_tile = std::max<int64_t>(1, kMaxRows / heads);
        n_tiles = 0;
        for (int64_t t = 0; t < n_tokens; ++t)
            if (t == 0 || batch.seq_of_token[static_cast<size_t>(t)] != batch.seq_of_token[static_cast<size_t>(t - 1)] ||
                t - tiles[n_tiles - 1] == per_tile)
                tiles[n_tiles++] = static_cast<int32_t>(t);
        if (n_sub >= group || n_tiles * g.n_kv_heads * n_sub >= want_items) break;
        // A decoding group that one streamed item holds whole stays whole, even with
        // fewer items than want_items: each part would convert the group's K and V
        // again. bench_attention, SmolLM2 shape at depth 512, 2 threads: three items of
        // three rows 18.0-18.8 us a layer, six of one or two rows 20.8-23.1.
        if (n_sub == 1 && n_tiles == n_tokens && reads_in_place(group)) break;
    }
    tiles[n_tiles] = static_cast<int32_t>(n_tokens);
    const int64_t n_items = n_tiles * g.n_kv_heads * n_sub;
    const auto n_chunks = static_cast<size_t>(std::min<int64_t>(n_items, scratch.attn_slots));
    const int64_t slot_floats = attention_slot_floats(scratch.attn_head_dim);

    const size_t elem = f16 ? 2 : 4;
    const size_t slab_bytes = kv.slab_bytes();

    pool_.run(n_chunks, [&](size_t chunk) {
        float* slot = scratch.attn.data() + chunk * static_cast<size_t>(slot_floats);
        float* qs = slot;
        float* acc = qs + kMaxRows * hdp;
        float* ks = acc + kMaxRows * hdp;
        float* vs = ks + kChunk * hdp;
        Row rows[kMaxRows];
        ChunkWeights weights;
        PrefetchWalk walk;
        // Items strided over the chunks, so every chunk gets early and late tiles alike.
        for (auto item = static_cast<int64_t>(chunk); item < n_items; item += static_cast<int64_t>(n_chunks)) {
            const int64_t sub = item % n_sub;
            const int64_t kvh = item / n_sub % g.n_kv_heads;
            const int64_t tile = item / (n_sub * g.n_kv_heads);
            const int64_t h0 = kvh * group + group * sub / n_sub, h1 = kvh * group + group * (sub + 1) / n_sub;
            const int64_t t0 = tiles[tile], t1 = tiles[tile + 1];
            const int32_t* table = batch.block_table(batch.seq_of_token[static_cast<size_t>(t0)]);
            int64_t n_rows = 0, reach = 0;
            for (int64_t t = t0; t < t1; ++t) {
                const int64_t n_visible = batch.positions[static_cast<size_t>(t)] + 1;
                reach = std::max(reach, n_visible);
                for (int64_t h = h0; h < h1; ++h, ++n_rows) {
                    const auto off = static_cast<size_t>((t * n_heads + h) * hd);
                    rows[n_rows] = Row{q.ptr() + off, out.ptr() + off, n_visible, -std::numeric_limits<float>::infinity(), 0.0f};
                    load_query(rows[n_rows].q, f16, hd, hdp, qs + n_rows * hdp);
                    std::fill(acc + n_rows * hdp, acc + (n_rows + 1) * hdp, 0.0f);
                }
            }
            weights.set_layout(n_rows);
            // Decoding (one GQA group's rows) reads f16 rows in place and spreads its
            // prefetches over the V updates; other items convert chunks of K/V for many
            // rows and fetch a block's K/V at once.
            const bool streamed = reads_in_place(n_rows);
            const int64_t n_blocks = (reach + g.block_size - 1) / g.block_size;
            // Chunks of kChunk positions at fixed offsets in each block.
            for (int64_t p0 = 0; p0 < reach; p0 += g.block_size) {
                const int64_t block = table[p0 / g.block_size];
                const std::byte* kb = kv.slab(block, layer, 0, kvh);
                const std::byte* vb = kv.slab(block, layer, 1, kvh);
                // The block two ahead, early (a sequence's blocks can be anywhere).
                const int64_t ahead = p0 / g.block_size + 2;
                if (streamed && ahead < n_blocks) {
                    walk.start(kv.slab(table[ahead], layer, 0, kvh), kv.slab(table[ahead], layer, 1, kvh), slab_bytes);
                } else if (ahead < n_blocks) {
                    for (int which = 0; which < 2; ++which) {
                        const std::byte* nb = kv.slab(table[ahead], layer, which, kvh);
                        for (size_t off = 0; off < slab_bytes; off += 64) __builtin_prefetch(nb + off);
                    }
                }
                for (int64_t c0 = p0; c0 < std::min(p0 + g.block_size, reach); c0 += kChunk) {
                    const int64_t n = std::min({kChunk, p0 + g.block_size - c0, reach - c0});
                    const auto src = static_cast<size_t>((c0 - p0) * hd) * elem;
                    auto process = [&](const auto* kp, const auto* vp) {
                        auto visible = [&](int64_t r) { return std::max<int64_t>(0, std::min(n, rows[r].n_visible - c0)); };
                        if (streamed && n_rows == 2 && visible(0) == visible(1)) {
                            scores_f16_same<2>(weights, qs, kp, visible(0), hdp);
                        } else if (streamed && n_rows == 3 && visible(0) == visible(1) && visible(1) == visible(2)) {
                            scores_f16_same<3>(weights, qs, kp, visible(0), hdp);
                        } else if (f16 && weights.by_position) {
                            int64_t nv[kMaxRows];
                            for (int64_t r = 0; r < n_rows; ++r) nv[r] = visible(r);
                            scores_f16_rows(weights, qs, kp, nv, n_rows, hdp);
                        } else {
                            for (int64_t r = 0; r < n_rows; ++r) {
                                const int64_t nr = visible(r);
                                weights.n[r] = 0;
                                if (nr == 0) continue;
                                if (f16) scores_f16(weights, r, qs + r * hdp, kp, nr, hdp);
                                else row_chunk_f32(rows[r], acc + r * hdp, qs + r * hdp, kp, vp, nr, hdp, scale);
                            }
                        }
                        if (f16) {
                            softmax_f16(rows, weights, n_rows, scale);
                            for_vector_groups(hdp, [&]<int NV>(int64_t i) {
                                update_rows_f16<NV>(acc, vp, weights, n_rows, hdp, i, streamed ? &walk : nullptr);
                            });
                        }
                    };
                    if (hd == hdp && !f16) {  // f32 rows as stored
                        process(reinterpret_cast<const float*>(kb + src), reinterpret_cast<const float*>(vb + src));
                    } else if (streamed) {  // f16 rows converted where used
                        process(reinterpret_cast<const uint16_t*>(kb + src), reinterpret_cast<const uint16_t*>(vb + src));
                    } else {  // converted once for all rows
                        load_rows(kb + src, f16, n, hd, hdp, ks);
                        load_rows(vb + src, f16, n, hd, hdp, vs);
                        process(static_cast<const float*>(ks), static_cast<const float*>(vs));
                    }
                }
            }
            for (int64_t r = 0; r < n_rows; ++r) {
                const float inv = 1.0f / rows[r].sum;
                const float* a = acc + r * hdp;
                for (int64_t i = 0; i < hd; ++i) rows[r].out[i] = a[i] * inv;
            }
        }
    });
}

}  // namespace inlay
