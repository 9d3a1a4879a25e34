// CPU attention's tiling (cpu_attention.cpp): a query row's result is bitwise the same
// whichever tokens, sequences and heads share its tile, whatever the thread count; the
// vectorised exponential it uses is within its stated error; and the results agree with
// float64 softmax attention on long ragged sequences.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "backend/common/batch.h"
#include "backend/cpu/attention_simd.h"
#include "backend_test_util.h"
#include "core/half.h"

using namespace inlay;
using namespace inlay::test;

namespace {

// A sequence of the test batch: kv_len positions stored, the batch's queries at
// positions [first, kv_len).
struct Seq {
    int64_t kv_len, first;
};

struct Case {
    KvGeometry g;
    int64_t n_heads;
    std::vector<Seq> seqs;
    bool interleave;  // tokens of the sequences alternate in the batch (one-token tiles)
};

struct Fixture {
    std::vector<std::vector<int32_t>> tables;
    CpuBackend::KvStorage kv;
    std::vector<float> k, v;  // what was stored, [seq][pos][kv_head][dim]
    std::vector<int64_t> seq_base;
};

// Stores random K/V for every position of every sequence; block ids shuffled.
Fixture fill(CpuBackend& b, const Case& c) {
    Fixture f;
    int64_t n_blocks = 0;
    for (const Seq& s : c.seqs) n_blocks += (s.kv_len + c.g.block_size - 1) / c.g.block_size;
    f.kv = b.alloc_kv(c.g, n_blocks);
    std::vector<int32_t> ids(static_cast<size_t>(n_blocks));
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 7 + 3) % ids.size());
    BatchBuilder bb;
    size_t next = 0;
    int64_t total = 0;
    for (const Seq& s : c.seqs) {
        const auto nb = static_cast<size_t>((s.kv_len + c.g.block_size - 1) / c.g.block_size);
        f.tables.emplace_back(ids.begin() + static_cast<std::ptrdiff_t>(next), ids.begin() + static_cast<std::ptrdiff_t>(next + nb));
        next += nb;
        const int32_t id = bb.add_sequence(f.tables.back(), s.kv_len);
        f.seq_base.push_back(total);
        for (int64_t p = 0; p < s.kv_len; ++p) bb.add_token(0, static_cast<int32_t>(p), id);
        total += s.kv_len;
    }
    const auto row = static_cast<size_t>(c.g.n_kv_heads * c.g.head_dim);
    f.k = random_floats(static_cast<size_t>(total) * row, 21, 1.5f);
    f.v = random_floats(static_cast<size_t>(total) * row, 22);
    auto batch = prepare(b, bb, f.kv);
    auto kb = upload(b, f.k), vb = upload(b, f.v);
    b.kv_store(f.kv, 0, kb, vb, batch);
    return f;
}

struct Token {
    int32_t seq, pos;
};

std::vector<Token> batch_tokens(const Case& c) {
    std::vector<Token> out;
    if (!c.interleave) {
        for (size_t s = 0; s < c.seqs.size(); ++s)
            for (int64_t p = c.seqs[s].first; p < c.seqs[s].kv_len; ++p)
                out.push_back({static_cast<int32_t>(s), static_cast<int32_t>(p)});
        return out;
    }
    for (int64_t i = 0;; ++i) {
        bool any = false;
        for (size_t s = 0; s < c.seqs.size(); ++s)
            if (c.seqs[s].first + i < c.seqs[s].kv_len) {
                out.push_back({static_cast<int32_t>(s), static_cast<int32_t>(c.seqs[s].first + i)});
                any = true;
            }
        if (!any) return out;
    }
}

// Attention of `tokens` (queries q, n_heads rows each) on backend b.
std::vector<float> run(CpuBackend& b, const Case& c, Fixture& f, const std::vector<Token>& tokens,
                       const std::vector<float>& q) {
    BatchBuilder bb;
    std::vector<int32_t> id(c.seqs.size(), -1);
    for (const Token& t : tokens) {
        auto& i = id[static_cast<size_t>(t.seq)];
        if (i < 0) i = bb.add_sequence(f.tables[static_cast<size_t>(t.seq)], c.seqs[static_cast<size_t>(t.seq)].kv_len);
        bb.add_token(0, t.pos, i);
    }
    auto batch = prepare(b, bb, f.kv);
    const auto n = static_cast<int64_t>(tokens.size());
    auto qb = upload(b, q);
    auto out = b.alloc(n * c.n_heads * c.g.head_dim);
    auto scratch = b.alloc_scratch(ScratchShape{n, 1, 0, c.n_heads, c.g.head_dim});
    b.attention(qb, f.kv, 0, batch, c.n_heads, 1.0f / std::sqrt(static_cast<float>(c.g.head_dim)), out, scratch);
    return download(b, out, n * c.n_heads * c.g.head_dim);
}

std::vector<Case> cases() {
    std::vector<Case> out;
    // A prompt from 0 (many full tiles and a partial one), a later chunk whose positions
    // cross block borders, a one-token decode deep in its sequence, a short prompt.
    const std::vector<Seq> ragged{{45, 0}, {83, 61}, {34, 33}, {7, 0}};
    for (const DType dtype : {DType::F16, DType::F32})
        for (const int64_t hd : {int64_t{48}, int64_t{64}, int64_t{96}, int64_t{128}})  // 48, 96: a rest of 3 / 2 vectors
            for (const int64_t group : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{4}})
                for (const bool interleave : {false, true})
                    out.push_back(Case{KvGeometry{1, 2, hd, 16, dtype}, 2 * group, ragged, interleave});
    // Blocks that are not a multiple of the 16-position chunk, an odd head_dim.
    out.push_back(Case{KvGeometry{1, 1, 40, 24, DType::F16}, 3, {{50, 0}, {30, 29}}, false});
    out.push_back(Case{KvGeometry{1, 1, 40, 24, DType::F32}, 3, {{50, 0}, {30, 29}}, false});
    return out;
}

std::string describe(const Case& c) {
    return std::string(dtype_name(c.g.dtype)) + " head_dim " + std::to_string(c.g.head_dim) + " group " +
           std::to_string(c.n_heads / c.g.n_kv_heads) + " block " + std::to_string(c.g.block_size) +
           (c.interleave ? " interleaved" : "");
}

}  // namespace

TEST_CASE("attention rows are bitwise the same alone, in a ragged batch, on 1 or 2 threads", "[attention]") {
    CpuBackend one(1), two(2);
    for (const Case& c : cases()) {
        INFO(describe(c));
        Fixture f = fill(two, c);
        const auto tokens = batch_tokens(c);
        const auto row = static_cast<size_t>(c.n_heads * c.g.head_dim);
        const auto q = random_floats(tokens.size() * row, 23, 1.5f);
        const auto together = run(two, c, f, tokens, q);
        REQUIRE(run(one, c, f, tokens, q) == together);
        for (size_t t = 0; t < tokens.size(); ++t) {
            INFO("token " << t << " (sequence " << tokens[t].seq << ", position " << tokens[t].pos << ")");
            const std::vector<float> qt(q.begin() + static_cast<std::ptrdiff_t>(t * row),
                                        q.begin() + static_cast<std::ptrdiff_t>((t + 1) * row));
            const auto alone = run(two, c, f, {tokens[t]}, qt);
            REQUIRE(std::memcmp(alone.data(), together.data() + t * row, row * sizeof(float)) == 0);
        }
    }
}

TEST_CASE("tiled attention matches float64 softmax attention on long ragged sequences", "[attention]") {
    CpuBackend b(2);
    for (const Case& c : cases()) {
        if (c.interleave) continue;
        INFO(describe(c));
        Fixture f = fill(b, c);
        const auto tokens = batch_tokens(c);
        const int64_t hd = c.g.head_dim, n_kv = c.g.n_kv_heads, group = c.n_heads / n_kv;
        const auto q = random_floats(tokens.size() * static_cast<size_t>(c.n_heads * hd), 23, 1.5f);
        const auto got = run(b, c, f, tokens, q);
        const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
        auto stored = [&](float x) {
            return c.g.dtype == DType::F16 ? static_cast<double>(f16_to_f32_portable(f32_to_f16_portable(x))) : static_cast<double>(x);
        };
        double vmax = 0;
        for (const float x : f.v) vmax = std::max(vmax, std::fabs(stored(x)));
        for (size_t t = 0; t < tokens.size(); ++t) {
            const auto seq = static_cast<size_t>(tokens[t].seq);
            const int64_t n_vis = tokens[t].pos + 1;
            // f32: exact math up to f32 rounding of scores and sums (~1e-6 here); f16:
            // llama.cpp's model rounds the V accumulator to f16 (2^-11 relative) at every
            // position, so up to n_vis roundings of a value below max|v|.
            const double tol = c.g.dtype == DType::F16 ? static_cast<double>(n_vis) * vmax * std::ldexp(1.0, -11) : 1e-5;
            for (int64_t h = 0; h < c.n_heads; ++h) {
                const int64_t kvh = h / group;
                const float* qv = q.data() + (static_cast<int64_t>(t) * c.n_heads + h) * hd;
                auto at = [&](const std::vector<float>& x, int64_t p, int64_t i) {
                    return stored(x[static_cast<size_t>(((f.seq_base[seq] + p) * n_kv + kvh) * hd + i)]);
                };
                std::vector<double> w(static_cast<size_t>(n_vis));
                double m = -1e300, z = 0;
                for (int64_t p = 0; p < n_vis; ++p) {
                    double d = 0;
                    for (int64_t i = 0; i < hd; ++i) d += static_cast<double>(qv[i]) * at(f.k, p, i);
                    m = std::max(m, w[static_cast<size_t>(p)] = d * scale);
                }
                for (auto& e : w) z += (e = std::exp(e - m));
                double worst = 0;
                for (int64_t i = 0; i < hd; ++i) {
                    double ref = 0;
                    for (int64_t p = 0; p < n_vis; ++p) ref += w[static_cast<size_t>(p)] / z * at(f.v, p, i);
                    const double g = got[(t * static_cast<size_t>(c.n_heads) + static_cast<size_t>(h)) * static_cast<size_t>(hd) +
                                         static_cast<size_t>(i)];
                    worst = std::max(worst, std::fabs(g - ref));
                }
                INFO("token " << t << " head " << h << " error " << worst << " tolerance " << tol);
                REQUIRE(worst <= tol);
            }
        }
    }
}

TEST_CASE("attention's vectorised exp is within 2 ulp, exact at 0, 0 below the normal range", "[attention]") {
    using namespace attn_simd;
    std::vector<float> x;
    for (float v = -87.3f; v <= 88.0f; v += 0.0137f) x.push_back(v);
    for (float v = -1.0f; v <= 1.0f; v += 1.0f / 4096) x.push_back(v);
    x.resize((x.size() + kWidth - 1) / kWidth * kWidth, 0.5f);
    std::vector<float> y(x.size());
    exp_n(x.data(), y.data(), static_cast<int64_t>(x.size()));
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        const double ref = std::exp(static_cast<double>(x[i]));
        const double ulp = std::ldexp(1.0, std::ilogb(ref) - 23);
        worst = std::max(worst, std::fabs(y[i] - ref) / ulp);
    }
    INFO("worst error " << worst << " ulp");
    REQUIRE(worst <= 2.0);
    auto exp_of = [](float v) {
        std::vector<float> in(kWidth, v), o(kWidth);
        exp_n(in.data(), o.data(), kWidth);
        return o[0];
    };
    CHECK(exp_of(0.0f) == 1.0f);
    CHECK(exp_of(-std::numeric_limits<float>::infinity()) == 0.0f);
    CHECK(exp_of(-88.0f) == 0.0f);
    CHECK(std::isnan(exp_of(std::numeric_limits<float>::quiet_NaN())));
}

TEST_CASE("attention's batched scores equal dot8 per row, f32 and f16 keys", "[attention]") {
    using namespace attn_simd;
    std::mt19937 rng(31);
    std::uniform_real_distribution<float> u(-3.0f, 3.0f);
    for (int64_t n : {int64_t{64}, int64_t{128}, int64_t{80}}) {
        for (int64_t n_k : {int64_t{1}, int64_t{3}, int64_t{4}, int64_t{7}, int64_t{8}, int64_t{13}, int64_t{16}}) {
            const int64_t stride = n + 8;  // padded rows
            std::vector<float> q(static_cast<size_t>(n)), k(static_cast<size_t>(stride * n_k));
            std::vector<uint16_t> kh(k.size());
            for (auto& v : q) v = u(rng);
            for (size_t i = 0; i < k.size(); ++i) {
                k[i] = u(rng);
                kh[i] = f32_to_f16(k[i]);
            }
            std::vector<float> got(static_cast<size_t>(n_k)), got_h(got.size());
            dots8(q.data(), k.data(), stride, n_k, n, got.data());
            dots8(q.data(), kh.data(), stride, n_k, n, got_h.data());
            for (int64_t s = 0; s < n_k; ++s) {
                INFO("n " << n << " rows " << n_k << " row " << s);
                REQUIRE(got[static_cast<size_t>(s)] == dot8(q.data(), k.data() + s * stride, n));
                REQUIRE(got_h[static_cast<size_t>(s)] == dot8(q.data(), kh.data() + s * stride, n));
            }
        }
    }
}
