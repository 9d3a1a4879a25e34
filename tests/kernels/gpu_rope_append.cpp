// qk_norm_rope_kv_append against float64: q rotated in place, k and v at their cache
// slots, every other slot of the (NaN-poisoned) arenas untouched.
// UNVERIFIED until run on a GPU (see gpu_main.cpp).
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <tuple>
#include <vector>

#include "gpu_util.h"
#include "inlay_cuda_kernels.h"
#include "reference.h"

using namespace inlay::cuda;
using namespace inlay::cuda::test;

namespace {

struct Case {
    int head_dim, n_rot;
    RopeStyle style;
    bool norm, factors;
    KvType type;
    int block_size;
    float freq_base, freq_scale;
    bool big_positions, bad_token;
};

struct Token {
    int seq, pos;
};

// x / sqrt(mean(x^2) + eps) * w, then RoPE at pos (double throughout).
std::vector<double> reference_head(const float* x, int hd, const std::vector<float>* w, float eps, const Case& c,
                                   const std::vector<float>& ff, int pos, std::vector<double>& theta) {
    std::vector<double> v(x, x + hd);
    if (w) {
        double ss = 0.0;
        for (double e : v) ss += e * e;
        const double s = 1.0 / std::sqrt(ss / hd + eps);
        for (int d = 0; d < hd; ++d) v[static_cast<size_t>(d)] *= s * (*w)[static_cast<size_t>(d)];
    }
    const int half = c.n_rot / 2;
    theta.assign(static_cast<size_t>(half), 0.0);
    std::vector<double> out = v;
    for (int i = 0; i < half; ++i) {
        double th =
            pos * static_cast<double>(c.freq_scale) * std::pow(static_cast<double>(c.freq_base), -2.0 * i / c.n_rot);
        if (c.factors) th /= ff[static_cast<size_t>(i)];
        theta[static_cast<size_t>(i)] = th;
        const int lo = c.style == RopeStyle::normal ? 2 * i : i;
        const int hi = c.style == RopeStyle::normal ? 2 * i + 1 : i + half;
        const double x0 = v[static_cast<size_t>(lo)], x1 = v[static_cast<size_t>(hi)];
        out[static_cast<size_t>(lo)] = x0 * std::cos(th) - x1 * std::sin(th);
        out[static_cast<size_t>(hi)] = x0 * std::sin(th) + x1 * std::cos(th);
    }
    // Stash |x0| + |x1| of each dim's pair for the tolerance (in theta's tail).
    for (int d = 0; d < hd; ++d) {
        double mag = std::fabs(v[static_cast<size_t>(d)]);
        if (d < c.n_rot) {
            const int i = c.style == RopeStyle::normal ? d / 2 : (d < half ? d : d - half);
            const int lo = c.style == RopeStyle::normal ? 2 * i : i;
            const int hi = c.style == RopeStyle::normal ? 2 * i + 1 : i + half;
            mag = std::fabs(v[static_cast<size_t>(lo)]) + std::fabs(v[static_cast<size_t>(hi)]);
        }
        theta.push_back(mag);
    }
    return out;
}

// Tolerance of dim d: the angle is computed in f32 (float(pos) * scale * powf(base, e) /
// factor: powf within 4 ulp plus three roundings, so within 10 * 2^-24 * |theta| rad),
// sincosf within 2 ulp, the rotation's two products and sum a few 2^-24 of |x0| + |x1|;
// the per-head RMSNorm adds 1e-5 relative (its f32 sum of squares, see the norm test);
// an f16 cache adds the rounding to f16 (half an ulp: 2^-11 relative, 2^-25 absolute
// below the normal range).
double tolerance(const Case& c, const std::vector<double>& theta, int d, double ref, bool f16) {
    const int half = c.n_rot / 2;
    const double mag = theta[static_cast<size_t>(half + d)];
    double rel = c.norm ? 1e-5 : 0.0;
    if (d < c.n_rot) {
        const int i = c.style == RopeStyle::normal ? d / 2 : (d < half ? d : d - half);
        rel += 10 * std::ldexp(std::fabs(theta[static_cast<size_t>(i)]), -24) + 8 * std::ldexp(1.0, -24);
    }
    double tol = mag * rel;
    if (f16) tol += std::ldexp(std::fabs(ref), -11) + std::ldexp(1.0, -25);
    return tol;
}

}  // namespace

TEST_CASE("qk_norm_rope_kv_append", "[kernels][gpu][rope]") {
    const uint64_t seed = test_seed();
    INFO("seed " << seed);
    Rng rng(seed);
    const Case cases[] = {
        {128, 128, RopeStyle::neox, true, false, KvType::f16, 16, 1e6f, 1.0f, false, false},    // Qwen3
        {128, 128, RopeStyle::normal, false, true, KvType::f32, 16, 5e5f, 1.0f, false, false},  // Llama 3
        {64, 64, RopeStyle::normal, false, false, KvType::f16, 16, 1e4f, 1.0f, false, true},    // Llama, bad token
        {64, 32, RopeStyle::neox, true, true, KvType::f32, 8, 1e4f, 1.0f, false, false},        // partial rotary
        {128, 96, RopeStyle::normal, true, false, KvType::f16, 16, 1e4f, 0.25f, true, false},   // long context
        {96, 96, RopeStyle::neox, false, false, KvType::f32, 32, 1e4f, 1.0f, false, true},
        {256, 256, RopeStyle::neox, true, false, KvType::f16, 16, 1e6f, 1.0f, false, false},  // widest head
    };
    for (const Case& c : cases) {
        INFO("head_dim " << c.head_dim << " n_rot " << c.n_rot << (c.style == RopeStyle::neox ? " neox" : " normal")
                         << (c.norm ? " qk-norm" : "") << (c.factors ? " freq-factors" : "")
                         << (c.type == KvType::f16 ? " f16" : " f32") << " block " << c.block_size
                         << (c.big_positions ? " long" : "") << (c.bad_token ? " bad-token" : ""));
        const int hd = c.head_dim, n_q = 8, n_kv = 2, bs = c.block_size;
        const float eps = 1e-6f;
        std::vector<int> lens = {20, 1, 45};
        std::vector<Token> tokens = {{2, 30}, {0, 19}, {2, 31}, {1, 0}};
        for (int p = 32; p < 45; ++p) tokens.push_back({2, p});
        if (c.big_positions) {
            lens.push_back(30001);
            tokens.push_back({3, 30000});
            tokens.push_back({3, 29999});
        }
        if (c.bad_token) tokens.push_back({1, bs});  // block 1 of a 1-block table: not stored
        const int n_seqs = static_cast<int>(lens.size());
        const int n_tokens = static_cast<int>(tokens.size());

        // Block tables: distinct physical blocks, shuffled, three spare.
        std::vector<int32_t> indptr = {0};
        for (int len : lens) indptr.push_back(indptr.back() + (len + bs - 1) / bs);
        const int n_blocks = indptr.back() + 3;
        std::vector<int32_t> ids(static_cast<size_t>(n_blocks));
        std::iota(ids.begin(), ids.end(), 0);
        std::shuffle(ids.begin(), ids.end(), rng);
        const std::vector<int32_t> indices(ids.begin(), ids.begin() + indptr.back());

        std::vector<int32_t> positions, seq_of_token;
        for (const Token& t : tokens) {
            positions.push_back(t.pos);
            seq_of_token.push_back(t.seq);
        }
        const int64_t q_stride = n_q * hd + 3, k_stride = n_kv * hd + 5, v_stride = n_kv * hd + 7;
        std::vector<float> q = uniform(static_cast<size_t>(n_tokens * q_stride), -1.0f, 1.0f, rng);
        const std::vector<float> k = uniform(static_cast<size_t>(n_tokens * k_stride), -1.0f, 1.0f, rng);
        const std::vector<float> v = uniform(static_cast<size_t>(n_tokens * v_stride), -1.0f, 1.0f, rng);
        const std::vector<float> qw = uniform(static_cast<size_t>(hd), 0.5f, 1.5f, rng);
        const std::vector<float> kw = uniform(static_cast<size_t>(hd), 0.5f, 1.5f, rng);
        const std::vector<float> ff = uniform(static_cast<size_t>(c.n_rot / 2), 1.0f, 8.0f, rng);

        DeviceBytes d_q = upload(q), d_k = upload(k), d_v = upload(v), d_qw = upload(qw), d_kw = upload(kw),
                    d_ff = upload(ff);
        DeviceBytes d_pos = upload(positions), d_seq = upload(seq_of_token), d_indptr = upload(indptr),
                    d_indices = upload(indices), d_len = upload(lens), d_flag = upload(std::vector<int>{0});
        const size_t esize = c.type == KvType::f16 ? 2 : 4;
        const size_t arena_elems = static_cast<size_t>(n_blocks) * n_kv * bs * hd;
        DeviceBytes d_kc(arena_elems * esize), d_vc(arena_elems * esize);
        d_kc.poison();
        d_vc.poison();

        RopeConfig rope;
        rope.style = c.style;
        rope.n_rot = c.n_rot;
        rope.freq_base = c.freq_base;
        rope.freq_scale = c.freq_scale;
        rope.freq_factors = c.factors ? d_ff.as<float>() : nullptr;
        PagedKvLayer kv;
        kv.k = d_kc.get();
        kv.v = d_vc.get();
        kv.type = c.type;
        kv.n_kv_heads = n_kv;
        kv.head_dim = hd;
        kv.block_size = bs;
        TokenBatch batch;
        batch.positions = d_pos.as<int32_t>();
        batch.seq_of_token = d_seq.as<int32_t>();
        batch.kv_indptr = d_indptr.as<int32_t>();
        batch.kv_indices = d_indices.as<int32_t>();
        batch.kv_len = d_len.as<int32_t>();
        batch.n_tokens = n_tokens;
        batch.n_seqs = n_seqs;
        CUDA_REQUIRE(qk_norm_rope_kv_append(d_q.as<float>(), q_stride, n_q, d_k.as<float>(), k_stride, d_v.as<float>(),
                                            v_stride, c.norm ? d_qw.as<float>() : nullptr,
                                            c.norm ? d_kw.as<float>() : nullptr, eps, rope, kv, batch, d_flag.as<int>(),
                                            nullptr));
        sync_ok();
        CHECK(download<int>(d_flag)[0] == (c.bad_token ? 1 : 0));

        const std::vector<float> gq = download<float>(d_q);
        std::vector<double> kc, vc;  // the arenas, decoded (NaN where poisoned)
        if (c.type == KvType::f16) {
            for (uint16_t h : download<uint16_t>(d_kc)) kc.push_back(f16_to_double(h));
            for (uint16_t h : download<uint16_t>(d_vc)) vc.push_back(f16_to_double(h));
        } else {
            for (float f : download<float>(d_kc)) kc.push_back(f);
            for (float f : download<float>(d_vc)) vc.push_back(f);
        }
        std::vector<bool> written(arena_elems, false);
        int bad = 0;
        std::vector<double> theta;
        for (int t = 0; t < n_tokens; ++t) {
            const Token tok = tokens[static_cast<size_t>(t)];
            INFO("token " << t << " (seq " << tok.seq << ", pos " << tok.pos << ")");
            for (int h = 0; h < n_q; ++h) {
                const std::vector<double> ref = reference_head(q.data() + t * q_stride + h * hd, hd,
                                                               c.norm ? &qw : nullptr, eps, c, ff, tok.pos, theta);
                for (int d = 0; d < hd; ++d) {
                    const double g = gq[static_cast<size_t>(t * q_stride + h * hd + d)];
                    const double r = ref[static_cast<size_t>(d)];
                    if (!(std::fabs(g - r) <= tolerance(c, theta, d, r, false)) && bad++ < 5)
                        FAIL_CHECK("q head " << h << " dim " << d << ": " << g << " vs " << r);
                }
            }
            const int entry = tok.pos / bs;
            if (entry >= indptr[static_cast<size_t>(tok.seq) + 1] - indptr[static_cast<size_t>(tok.seq)]) continue;
            const int64_t blk = indices[static_cast<size_t>(indptr[static_cast<size_t>(tok.seq)] + entry)];
            for (int g = 0; g < n_kv; ++g) {
                const std::vector<double> kref = reference_head(k.data() + t * k_stride + g * hd, hd,
                                                                c.norm ? &kw : nullptr, eps, c, ff, tok.pos, theta);
                const size_t base = static_cast<size_t>(((blk * n_kv + g) * bs + tok.pos % bs) * hd);
                for (int d = 0; d < hd; ++d) {
                    const double kr = kref[static_cast<size_t>(d)];
                    const double vr = v[static_cast<size_t>(t * v_stride + g * hd + d)];
                    const double kg = kc[base + static_cast<size_t>(d)], vg = vc[base + static_cast<size_t>(d)];
                    written[base + static_cast<size_t>(d)] = true;
                    if (!(std::fabs(kg - kr) <= tolerance(c, theta, d, kr, c.type == KvType::f16)) && bad++ < 5)
                        FAIL_CHECK("K kv head " << g << " dim " << d << ": " << kg << " vs " << kr);
                    const double vtol =
                        c.type == KvType::f16 ? std::ldexp(std::fabs(vr), -11) + std::ldexp(1.0, -25) : 0.0;
                    if (!(std::fabs(vg - vr) <= vtol) && bad++ < 5)
                        FAIL_CHECK("V kv head " << g << " dim " << d << ": " << vg << " vs " << vr);
                }
            }
        }
        size_t touched = 0;
        for (size_t i = 0; i < arena_elems; ++i)
            if (!written[i] && (!std::isnan(kc[i]) || !std::isnan(vc[i]))) ++touched;
        CHECK(touched == 0);  // no slot but the batch's was written
        CHECK(bad == 0);
    }
}
