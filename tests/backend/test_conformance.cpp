// The backend conformance suite: every op of the Backend concept against a float64
// computation written out here, for every backend of the build (INLAY_TEST_BACKENDS).
// Inputs go in through write() and results come out through read(), as a device
// backend needs. Tolerances are stated per op and type with their reasons.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>

#include "backend_test_util.h"
#include "core/half.h"
#include "quant/vec_dot.h"
#include "sampling/penalties.h"
#include "sampling/sampler.h"
#include "support/random_logits.h"

using namespace inlay;
using namespace inlay::test;

namespace {

double rms_scale(const float* x, int64_t dim, double eps) {
    double ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += static_cast<double>(x[i]) * x[i];
    return 1.0 / std::sqrt(ss / static_cast<double>(dim) + eps);
}

// The bound on |W x - ref| from rounding x to the weight's partner format (as llama.cpp
// does): per element half a quantization step of its block (Q8: amax/127/2) or 2^-9
// relative for f16/bf16 halves, times |w|, plus float accumulation.
double matmul_bound(DType weight, const float* x, const double* w_row, int64_t n_in, double* ref) {
    const DType act = quant::vec_dot_type(weight);
    const int64_t block = act == DType::Q8_K ? 256 : 32;
    double bound = 0, mag = 0;
    *ref = 0;
    for (int64_t i0 = 0; i0 < n_in; i0 += block) {
        double amax = 0;
        for (int64_t i = i0; i < i0 + block; ++i) amax = std::max(amax, std::fabs(static_cast<double>(x[i])));
        for (int64_t i = i0; i < i0 + block; ++i) {
            const double wv = w_row[i];
            *ref += wv * x[i];
            mag += std::fabs(wv * x[i]);
            if (act == DType::Q8_0 || act == DType::Q8_K || act == DType::Q8_1) bound += std::fabs(wv) * amax / 127.0 * 0.5;
            else if (act == DType::F16) bound += std::fabs(wv * x[i]) * std::ldexp(1.0, -11);
            else if (act == DType::BF16) bound += std::fabs(wv * x[i]) * std::ldexp(1.0, -8);
        }
    }
    return bound + mag * 1e-6 + 1e-6;
}

constexpr DType kMatmulTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q8_0, DType::Q4_0,
                                  DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q1_0};

}  // namespace

TEMPLATE_TEST_CASE("write and read move floats in and out of buffers", "[backend]", INLAY_TEST_BACKENDS) {
    auto b = BackendFactory<TestType>::make();
    const auto v = random_floats(1000, 1);
    auto buf = b->alloc(1000);
    b->write(buf, 0, v.data(), 600);
    b->write(buf, 600, v.data() + 600, 400);
    b->synchronize();
    REQUIRE(download(*b, buf, 1000) == v);
    std::vector<float> part(10);
    b->read(buf, 990, 10, part.data());
    REQUIRE(std::equal(part.begin(), part.end(), v.begin() + 990));
    REQUIRE(status_of([&] { b->write(buf, 995, v.data(), 10); }) == INLAY_ERR_INTERNAL);
    REQUIRE(status_of([&] { b->read(buf, -1, 2, part.data()); }) == INLAY_ERR_INTERNAL);
    const DeviceMemory m = b->memory_info();
    REQUIRE(m.total_bytes > 0);
    REQUIRE(m.free_bytes <= m.total_bytes);
}

TEMPLATE_TEST_CASE("rms_norm and add_rms_norm match float64", "[backend]", INLAY_TEST_BACKENDS) {
    auto b = BackendFactory<TestType>::make();
    for (const int64_t rows : {int64_t{1}, int64_t{5}, int64_t{70}}) {
        const int64_t dim = 300;
        const auto x = random_floats(static_cast<size_t>(rows * dim), 1, 3.0f);
        const auto y = random_floats(static_cast<size_t>(rows * dim), 3, 2.0f);
        auto wt = make_tensor(DType::F32, dim, 1, 2);
        auto w = b->upload_vector(wt.view);
        auto xb = upload(*b, x), yb = upload(*b, y);
        auto out = b->alloc(rows * dim);
        b->rms_norm(xb, w, 1e-5f, rows, dim, out);
        const auto normed = download(*b, out, rows * dim);
        b->add_rms_norm(xb, yb, w, 1e-5f, rows, dim, out);
        const auto sum = download(*b, xb, rows * dim), fused = download(*b, out, rows * dim);
        for (int64_t r = 0; r < rows; ++r) {
            std::vector<float> xy(static_cast<size_t>(dim));
            for (int64_t i = 0; i < dim; ++i) xy[static_cast<size_t>(i)] = x[static_cast<size_t>(r * dim + i)] + y[static_cast<size_t>(r * dim + i)];
            const double s1 = rms_scale(x.data() + r * dim, dim, 1e-5), s2 = rms_scale(xy.data(), dim, 1e-5);
            for (int64_t i = 0; i < dim; ++i) {
                const auto k = static_cast<size_t>(r * dim + i);
                const double ref1 = x[k] * s1 * wt.dequantized[static_cast<size_t>(i)];
                const double ref2 = xy[static_cast<size_t>(i)] * s2 * wt.dequantized[static_cast<size_t>(i)];
                // float arithmetic over 300 elements: a few ulp of the result
                REQUIRE(std::fabs(normed[k] - ref1) <= 1e-5 * (1 + std::fabs(ref1)));
                REQUIRE(sum[k] == xy[static_cast<size_t>(i)]);  // one float add, exactly
                REQUIRE(std::fabs(fused[k] - ref2) <= 1e-5 * (1 + std::fabs(ref2)));
            }
        }
        // out may be x (in place): the same result.
        auto x2 = upload(*b, x), y2 = upload(*b, y);
        b->add_rms_norm(x2, y2, w, 1e-5f, rows, dim, x2);
        REQUIRE(download(*b, x2, rows * dim) == fused);
    }
}

TEMPLATE_TEST_CASE("embed returns the dequantized rows of every table type", "[backend]", INLAY_TEST_BACKENDS) {
    auto b = BackendFactory<TestType>::make();
    auto kv = b->alloc_kv(KvGeometry{1, 1, 8, 4, DType::F16}, 1);
    for (DType type : kMatmulTypes) {
        INFO("type " << dtype_name(type));
        auto table = make_tensor(type, 256, 10, 4);
        auto w = b->upload_matrix(table.view);
        BatchBuilder bb;
        const int32_t s = bb.add_sequence(std::vector<int32_t>{0}, 4);
        for (const int32_t id : {3, 0, 9, 3}) bb.add_token(id, static_cast<int32_t>(bb.n_tokens()), s);
        auto batch = prepare(*b, bb, kv);
        auto out = b->alloc(4 * 256);
        b->embed(w, batch, out);
        const auto got = download(*b, out, 4 * 256);
        const int32_t ids[] = {3, 0, 9, 3};
        for (size_t t = 0; t < 4; ++t)
            for (size_t i = 0; i < 256; ++i)  // dequantization is exact in f32
                REQUIRE(static_cast<double>(got[t * 256 + i]) == table.dequantized[static_cast<size_t>(ids[t]) * 256 + i]);
    }
}

TEMPLATE_TEST_CASE("matmul, matmul_swiglu and matmul_qkv match float64 for every weight type", "[backend]",
                   INLAY_TEST_BACKENDS) {
    auto b = BackendFactory<TestType>::make();
    const int64_t n_in = 512, n_out = 37;
    // 40 tokens: past a GEMV's few, the GEMM paths (a GPU's tensor cores round x to f16 or
    // bf16 and dequantized weights to f16, each within the bound's share for those types).
    const ScratchShape shape{40, n_in, n_out, 1, 1};
    auto scratch = b->alloc_scratch(shape);
    for (const int64_t n_tok : {int64_t{1}, int64_t{3}, int64_t{8}, int64_t{40}}) {
        const auto x = random_floats(static_cast<size_t>(n_in * n_tok), 5);
        for (DType type : kMatmulTypes) {
            INFO("type " << dtype_name(type) << ", " << n_tok << " tokens");
            auto gt = make_tensor(type, n_in, n_out, 6), ut = make_tensor(type, n_in, n_out, 7);
            auto g = b->upload_matrix(gt.view), u = b->upload_matrix(ut.view);
            auto xb = upload(*b, x);
            auto y = b->alloc(n_tok * n_out), z = b->alloc(n_tok * n_out);
            b->matmul(g, xb, n_tok, y, scratch);
            b->matmul_swiglu(g, u, xb, n_tok, z, scratch);
            // q and v from g, k from u: each output against its own product's bound
            auto q = b->alloc(n_tok * n_out), kb = b->alloc(n_tok * n_out), v = b->alloc(n_tok * n_out);
            b->matmul_qkv(g, u, g, xb, n_tok, q, kb, v, scratch);
            const auto got = download(*b, y, n_tok * n_out), fused = download(*b, z, n_tok * n_out);
            const auto got_q = download(*b, q, n_tok * n_out), got_k = download(*b, kb, n_tok * n_out),
                       got_v = download(*b, v, n_tok * n_out);
            for (int64_t tk = 0; tk < n_tok; ++tk)
                for (int64_t r = 0; r < n_out; ++r) {
                    double rg = 0, ru = 0;
                    const double bg = matmul_bound(type, x.data() + tk * n_in, gt.dequantized.data() + r * n_in, n_in, &rg);
                    const double bu = matmul_bound(type, x.data() + tk * n_in, ut.dequantized.data() + r * n_in, n_in, &ru);
                    const auto k = static_cast<size_t>(tk * n_out + r);
                    REQUIRE(std::fabs(got[k] - rg) <= bg);
                    REQUIRE(std::fabs(got_q[k] - rg) <= bg);
                    REQUIRE(std::fabs(got_k[k] - ru) <= bu);
                    REQUIRE(std::fabs(got_v[k] - rg) <= bg);
                    // silu(g) * u: the bound of each product carried through (|silu'| <= 1.1).
                    const double silu = rg / (1 + std::exp(-rg));
                    const double ref = silu * ru;
                    const double bound = 1.1 * bg * (std::fabs(ru) + bu) + std::fabs(silu) * bu + 1e-6 * (1 + std::fabs(ref));
                    REQUIRE(std::fabs(fused[k] - ref) <= bound);
                }
        }
    }
}

TEMPLATE_TEST_CASE("rope_kv_append: q/k norm, RoPE (normal, neox, factors) and the K/V it appends", "[backend]",
                   INLAY_TEST_BACKENDS) {
    auto b = BackendFactory<TestType>::make();
    const int64_t n_heads = 4, n_kv = 2, hd = 16, n_tok = 4;
    const std::vector<int32_t> positions{0, 1, 7, 300};
    const std::vector<float> factors{1.0f, 1.0f, 2.0f, 8.0f, 1.0f, 4.0f, 3.0f, 0.5f};  // n_rot/2 for n_rot 16
    const KvGeometry g{2, n_kv, hd, 4, DType::F32};
    std::vector<int32_t> table(76);  // 301 positions in blocks of 4, the token blocks spread out
    std::iota(table.begin(), table.end(), 0);
    auto kv = b->alloc_kv(g, 76);
    BatchBuilder bb;
    const int32_t s = bb.add_sequence(table, 301);
    for (size_t t = 0; t < positions.size(); ++t) bb.add_token(7, positions[t], s);
    auto batch = prepare(*b, bb, kv);
    auto qn = vector_tensor(random_floats(hd, 40, 1.0f)), kn = vector_tensor(random_floats(hd, 41, 1.0f));
    auto freq = vector_tensor(factors);
    auto qnw = b->upload_vector(qn.view), knw = b->upload_vector(kn.view), fw = b->upload_vector(freq.view);
    for (RopeStyle style : {RopeStyle::normal, RopeStyle::neox})
        for (int64_t n_rot : {int64_t{16}, int64_t{12}})
            for (bool use_factors : {false, true})
                for (bool qk_norm : {false, true}) {
                    if (use_factors && n_rot != 16) continue;
                    INFO("style " << static_cast<int>(style) << " n_rot " << n_rot << " factors " << use_factors
                                  << " qk_norm " << qk_norm);
                    const auto q = random_floats(static_cast<size_t>(n_tok * n_heads * hd), 7, 2.0f);
                    const auto k = random_floats(static_cast<size_t>(n_tok * n_kv * hd), 8, 2.0f);
                    const auto v = random_floats(static_cast<size_t>(n_tok * n_kv * hd), 9);
                    auto qb = upload(*b, q), kb = upload(*b, k), vb = upload(*b, v);
                    const RopeParams rp{style, n_rot, 10000.0f, 0.5f};
                    b->rope_kv_append(qb, kb, vb, qk_norm ? &qnw : nullptr, qk_norm ? &knw : nullptr, 1e-6f, rp,
                                      use_factors ? &fw : nullptr, kv, 1, n_heads, batch);
                    const auto qgot = download(*b, qb, n_tok * n_heads * hd);
                    // The reference for one head vector (norm, then rotation).
                    auto expect = [&](const float* x, const std::vector<double>& nw, int64_t pos) {
                        std::vector<double> r(x, x + hd);
                        if (qk_norm) {
                            const double sc = rms_scale(x, hd, 1e-6);
                            for (int64_t i = 0; i < hd; ++i) r[static_cast<size_t>(i)] *= sc * nw[static_cast<size_t>(i)];
                        }
                        const std::vector<double> in = r;
                        for (int64_t i = 0; i < n_rot / 2; ++i) {
                            double theta = pos * 0.5 * std::pow(10000.0, -2.0 * i / n_rot);
                            if (use_factors) theta /= factors[static_cast<size_t>(i)];
                            const int64_t a = style == RopeStyle::normal ? 2 * i : i;
                            const int64_t c = style == RopeStyle::normal ? 2 * i + 1 : i + n_rot / 2;
                            r[static_cast<size_t>(a)] = in[static_cast<size_t>(a)] * std::cos(theta) - in[static_cast<size_t>(c)] * std::sin(theta);
                            r[static_cast<size_t>(c)] = in[static_cast<size_t>(a)] * std::sin(theta) + in[static_cast<size_t>(c)] * std::cos(theta);
                        }
                        return r;
                    };
                    // Angles in float as ggml computes them (theta by repeated products):
                    // at position 300 their error reaches ~1e-5 rad, so 3e-5 of |x| ~ 8.
                    const double tol = 3e-5 * 8;
                    for (int64_t t = 0; t < n_tok; ++t) {
                        for (int64_t h = 0; h < n_heads; ++h) {
                            const auto base = static_cast<size_t>((t * n_heads + h) * hd);
                            const auto want = expect(q.data() + base, qn.dequantized, positions[static_cast<size_t>(t)]);
                            for (int64_t i = 0; i < hd; ++i)
                                REQUIRE(std::fabs(qgot[base + static_cast<size_t>(i)] - want[static_cast<size_t>(i)]) <= tol);
                        }
                        // K and V at the token's slot, through the canonical image of its block.
                        const int64_t pos = positions[static_cast<size_t>(t)];
                        std::vector<std::byte> image(kv_canonical_block_bytes(g));
                        b->kv_read_block(kv, table[static_cast<size_t>(pos / 4)], image);
                        const auto* f = reinterpret_cast<const float*>(image.data());
                        for (int64_t h = 0; h < n_kv; ++h) {
                            const auto base = static_cast<size_t>((t * n_kv + h) * hd);
                            const auto want = expect(k.data() + base, kn.dequantized, pos);
                            for (int64_t i = 0; i < hd; ++i) {
                                const size_t kidx = static_cast<size_t>((((1 * 2 + 0) * n_kv + h) * 4 + pos % 4) * hd + i);
                                const size_t vidx = static_cast<size_t>((((1 * 2 + 1) * n_kv + h) * 4 + pos % 4) * hd + i);
                                REQUIRE(std::fabs(f[kidx] - want[static_cast<size_t>(i)]) <= tol);
                                REQUIRE(f[vidx] == v[base + static_cast<size_t>(i)]);  // f32 cache: stored exactly
                            }
                        }
                    }
                }
}

TEMPLATE_TEST_CASE("rope_kv_append on one batch follows new parameters and new positions", "[backend]",
                   INLAY_TEST_BACKENDS) {
    // A backend may keep a step's angles with its batch (the CPU makes them once for every
    // layer): other parameters on the same batch, and the batch prepared again for other
    // positions, must each rotate by their own angles.
    auto b = BackendFactory<TestType>::make();
    const int64_t n_heads = 2, n_kv = 1, hd = 8, n_tok = 3;
    const KvGeometry g{1, n_kv, hd, 4, DType::F32};
    std::vector<int32_t> table(64);
    std::iota(table.begin(), table.end(), 0);
    auto kv = b->alloc_kv(g, 64);
    const std::vector<float> factors_a{1.0f, 2.0f, 4.0f, 8.0f}, factors_b{3.0f, 1.0f, 0.5f, 2.0f};
    auto fa_t = vector_tensor(factors_a), fb_t = vector_tensor(factors_b);
    auto fa = b->upload_vector(fa_t.view), fb = b->upload_vector(fb_t.view);
    typename TestType::Batch batch;
    auto prepare_at = [&](const std::vector<int32_t>& positions) {
        BatchBuilder bb;
        const int32_t s = bb.add_sequence(table, 256);
        for (const int32_t p : positions) bb.add_token(1, p, s);
        b->prepare_batch(bb.desc(), BatchLimits{int64_t{1} << 20, g.block_size, kv.n_blocks(), n_tok, 0}, batch);
    };
    struct Case {
        std::vector<int32_t> positions;
        RopeParams rope;
        const std::vector<float>* factors;
    };
    const std::vector<int32_t> first{3, 50, 200}, second{7, 0, 121};
    const Case cases[] = {
        {first, {RopeStyle::normal, 8, 10000.0f, 1.0f}, nullptr},
        {first, {RopeStyle::normal, 8, 500000.0f, 1.0f}, nullptr},  // another base
        {first, {RopeStyle::normal, 8, 500000.0f, 0.25f}, nullptr},  // another scale
        {first, {RopeStyle::normal, 8, 500000.0f, 0.25f}, &factors_a},
        {first, {RopeStyle::normal, 8, 500000.0f, 0.25f}, &factors_b},  // other factors
        {first, {RopeStyle::normal, 8, 500000.0f, 0.25f}, nullptr},     // none again
        {first, {RopeStyle::normal, 4, 500000.0f, 0.25f}, nullptr},     // fewer rotated pairs
        {second, {RopeStyle::normal, 4, 500000.0f, 0.25f}, nullptr},    // prepared again
        {second, {RopeStyle::normal, 8, 10000.0f, 1.0f}, nullptr},
    };
    std::vector<int32_t> prepared;  // the batch is prepared again only for other positions
    for (size_t c = 0; c < std::size(cases); ++c) {
        const Case& cs = cases[c];
        INFO("case " << c);
        if (prepared != cs.positions) {
            prepare_at(cs.positions);
            prepared = cs.positions;
        }
        const auto q = random_floats(static_cast<size_t>(n_tok * n_heads * hd), 60 + c, 2.0f);
        const auto k = random_floats(static_cast<size_t>(n_tok * n_kv * hd), 80 + c, 2.0f);
        auto qb = upload(*b, q), kb = upload(*b, k), vb = upload(*b, k);
        const auto* fw = cs.factors == &factors_a ? &fa : cs.factors == &factors_b ? &fb : nullptr;
        b->rope_kv_append(qb, kb, vb, nullptr, nullptr, 1e-6f, cs.rope, fw, kv, 0, n_heads, batch);
        const auto got = download(*b, qb, n_tok * n_heads * hd);
        for (int64_t t = 0; t < n_tok; ++t)
            for (int64_t h = 0; h < n_heads; ++h) {
                const auto base = static_cast<size_t>((t * n_heads + h) * hd);
                const int64_t pos = cs.positions[static_cast<size_t>(t)];
                for (int64_t i = 0; i < hd / 2; ++i) {
                    const auto a = base + static_cast<size_t>(2 * i), z = a + 1;
                    double want_a = q[a], want_z = q[z];
                    if (i < cs.rope.n_rot / 2) {
                        double theta = pos * static_cast<double>(cs.rope.freq_scale) *
                                       std::pow(static_cast<double>(cs.rope.freq_base), -2.0 * i / cs.rope.n_rot);
                        if (cs.factors) theta /= (*cs.factors)[static_cast<size_t>(i)];
                        want_a = q[a] * std::cos(theta) - q[z] * std::sin(theta);
                        want_z = q[a] * std::sin(theta) + q[z] * std::cos(theta);
                    }
                    // float angles by repeated products (as ggml): ~1e-5 rad at these positions
                    REQUIRE(std::fabs(got[a] - want_a) <= 3e-5 * 8);
                    REQUIRE(std::fabs(got[z] - want_z) <= 3e-5 * 8);
                }
            }
    }
}

TEMPLATE_TEST_CASE("paged causal GQA attention matches float64 softmax attention", "[backend]", INLAY_TEST_BACKENDS) {
    auto b = BackendFactory<TestType>::make();
    // 2 layers, 2 KV heads, 6 query heads (groups of 3). head_dim 16 in blocks of 4 slots
    // (CUDA: the generic kernel), head_dim 64 in blocks of 16 (CUDA: compiled by NVRTC);
    // two sequences of 10 and 6 tokens in one ragged batch, blocks deliberately out of
    // order; and a 100-token prompt of one sequence (CUDA: the tensor-core prefill kernel).
    struct Seq {
        std::vector<int32_t> blocks;
        int64_t n_tokens;
    };
    struct Case {
        int64_t head_dim, block_size;
        DType kv_type;
        std::vector<Seq> seqs;
    };
    const std::vector<Seq> two = {{{5, 2, 7}, 10}, {{0, 3}, 6}};
    const std::vector<Seq> prompt = {{{6, 1, 4, 0, 7, 2, 5}, 100}};
    for (const Case& c : {Case{16, 4, DType::F32, two}, Case{16, 4, DType::F16, two}, Case{64, 16, DType::F32, two},
                          Case{64, 16, DType::F16, two}, Case{64, 16, DType::F16, prompt}}) {
        const DType kv_type = c.kv_type;
        INFO("kv " << dtype_name(kv_type) << ", head_dim " << c.head_dim << ", blocks of " << c.block_size << ", "
                   << c.seqs.size() << " sequences");
        const KvGeometry g{2, 2, c.head_dim, c.block_size, kv_type};
        const int64_t n_heads = 6, layer = 1;
        const float scale = 0.3f;  // not 1/sqrt(head_dim): the parameter is what counts
        BatchBuilder bb;
        std::vector<int64_t> first_of_token;  // batch index of each token's sequence's position 0
        for (const Seq& sq : c.seqs) {
            const int32_t id = bb.add_sequence(sq.blocks, static_cast<int32_t>(sq.n_tokens));
            const auto first = static_cast<int64_t>(first_of_token.size());
            for (int64_t p = 0; p < sq.n_tokens; ++p) {
                bb.add_token(1, static_cast<int32_t>(p), id);
                first_of_token.push_back(first);
            }
        }
        const auto n_tok = static_cast<int64_t>(first_of_token.size());
        auto kv = b->alloc_kv(g, 8);
        auto batch = prepare(*b, bb, kv);
        const auto k = random_floats(static_cast<size_t>(n_tok * g.n_kv_heads * g.head_dim), 8);
        const auto v = random_floats(static_cast<size_t>(n_tok * g.n_kv_heads * g.head_dim), 9);
        const auto q = random_floats(static_cast<size_t>(n_tok * n_heads * g.head_dim), 10);
        auto kb = upload(*b, k), vb = upload(*b, v), qb = upload(*b, q), qk = upload(*b, q);
        b->rope_kv_append(qk, kb, vb, nullptr, nullptr, 1e-6f, RopeParams{RopeStyle::normal, 0}, nullptr, kv, layer,
                          n_heads, batch);  // n_rot 0: K/V stored as given
        auto scratch = b->alloc_scratch(ScratchShape{n_tok, 16, 0, n_heads, g.head_dim});
        auto out = b->alloc(n_tok * n_heads * g.head_dim);
        b->attention(qb, kv, layer, batch, n_heads, scale, out, scratch);
        const auto got = download(*b, out, n_tok * n_heads * g.head_dim);
        auto stored = [&](float f) {
            return kv_type == DType::F16 ? static_cast<double>(f16_to_f32_portable(f32_to_f16_portable(f))) : static_cast<double>(f);
        };
        for (int64_t t = 0; t < n_tok; ++t) {
            const int64_t first = first_of_token[static_cast<size_t>(t)];
            const int64_t pos = t - first;
            for (int64_t h = 0; h < n_heads; ++h) {
                const int64_t kvh = h / (n_heads / g.n_kv_heads);
                const float* qv = q.data() + (t * n_heads + h) * g.head_dim;
                std::vector<double> sc;
                double sabs = 0;  // the largest scale * sum |q k| over the keys
                for (int64_t p = 0; p <= pos; ++p) {
                    double d = 0, mag = 0;
                    for (int64_t i = 0; i < g.head_dim; ++i) {
                        const double x = qv[i] * stored(k[static_cast<size_t>(((first + p) * g.n_kv_heads + kvh) * g.head_dim + i)]);
                        d += x;
                        mag += std::fabs(x);
                    }
                    sc.push_back(d * scale);
                    sabs = std::max(sabs, mag * scale);
                }
                double m = -1e300;
                for (const double e : sc) m = std::max(m, e);
                double z = 0;
                for (auto& e : sc) z += (e = std::exp(e - m));
                // f16 caches on the CPU accumulate V in f16 like llama.cpp (one rounding of
                // 2^-11 relative per position, on |v| < 5); CUDA keeps the accumulator in f32
                // and its prefill kernel rounds q and the weights to f16 (a score moves by
                // 2^-11 sabs, a weight by 2^-11); f32 caches are exact math.
                double tol = 2e-6;
                if (kv_type == DType::F16)
                    tol = std::is_same_v<TestType, CpuBackend> ? static_cast<double>(pos + 1) * 5 * std::ldexp(1.0, -11)
                                                               : 5 * (2 * sabs + 4) * std::ldexp(1.0, -11) + 1e-5;
                for (int64_t i = 0; i < g.head_dim; ++i) {
                    double ref = 0;
                    for (size_t p = 0; p < sc.size(); ++p)
                        ref += sc[p] / z * stored(v[static_cast<size_t>(((first + static_cast<int64_t>(p)) * g.n_kv_heads + kvh) * g.head_dim + i)]);
                    REQUIRE(std::fabs(got[static_cast<size_t>((t * n_heads + h) * g.head_dim + i)] - ref) <= tol);
                }
            }
        }
#ifdef INLAY_TEST_CUDA
        if constexpr (std::is_same_v<TestType, CudaBackend>) {
            // The shape nvcc did not build ran the variant NVRTC compiled for this device
            // (a failed compile or load would have fallen back to the generic kernel).
            const auto kernel = b->attention_kernel(c.head_dim, n_heads / g.n_kv_heads, c.block_size, kv_type);
            CHECK(kernel.source == (c.head_dim == 64 ? cuda_backend::AttentionKernelSource::nvrtc
                                                     : cuda_backend::AttentionKernelSource::generic));
            CHECK(cuda_backend::use_flash_prefill(n_tok, static_cast<int64_t>(c.seqs.size()), c.head_dim,
                                                  n_heads / g.n_kv_heads, kv_type) == (n_tok == 100));
        }
#endif
    }
}

TEMPLATE_TEST_CASE("gather_logit_rows and add", "[backend]", INLAY_TEST_BACKENDS) {
    auto b = BackendFactory<TestType>::make();
    const auto u = random_floats(500, 12), w = random_floats(500, 13);
    auto ub = upload(*b, u), wb = upload(*b, w);
    b->add(ub, wb, 500);
    const auto sum = download(*b, ub, 500);
    for (size_t i = 0; i < 500; ++i) REQUIRE(sum[i] == u[i] + w[i]);
    auto kv = b->alloc_kv(KvGeometry{1, 1, 8, 4, DType::F16}, 2);
    BatchBuilder bb;
    const int32_t s = bb.add_sequence(std::vector<int32_t>{1, 0}, 5);
    for (int p = 0; p < 5; ++p) bb.add_token(2, p, s, p == 0 || p == 3);
    auto batch = prepare(*b, bb, kv);
    auto out = b->alloc(2 * 100);
    b->gather_logit_rows(ub, batch, 100, out);
    const auto got = download(*b, out, 200);
    for (size_t i = 0; i < 100; ++i) {
        REQUIRE(got[i] == sum[i]);
        REQUIRE(got[100 + i] == sum[300 + i]);
    }
}

TEMPLATE_TEST_CASE("prepare_batch validates the batch once", "[backend]", INLAY_TEST_BACKENDS) {
    auto b = BackendFactory<TestType>::make();
    auto kv = b->alloc_kv(KvGeometry{1, 1, 8, 4, DType::F16}, 3);
    typename TestType::Batch batch;
    auto try_batch = [&](const BatchBuilder& bb, int64_t n_vocab = 100) {
        return status_of([&] {
            b->prepare_batch(bb.desc(), BatchLimits{n_vocab, 4, kv.n_blocks(), 16, 16}, batch);
        });
    };
    BatchBuilder ok;
    ok.add_tokens(ok.add_sequence(std::vector<int32_t>{2, 0}, 6), std::vector<int32_t>{1, 2, 3}, 3, 1);
    REQUIRE(try_batch(ok) == INLAY_OK);
    REQUIRE(try_batch(ok, 3) == INLAY_ERR_INVALID_TOKEN);  // token 3 outside a vocabulary of 3
    BatchBuilder bad_block;
    bad_block.add_tokens(bad_block.add_sequence(std::vector<int32_t>{3}, 1), std::vector<int32_t>{1}, 0);
    REQUIRE(try_batch(bad_block) == INLAY_ERR_INTERNAL);  // block 3 of 3
    BatchBuilder short_table;
    short_table.add_tokens(short_table.add_sequence(std::vector<int32_t>{0}, 5), std::vector<int32_t>{1}, 4);
    REQUIRE(try_batch(short_table) == INLAY_ERR_INTERNAL);  // 5 tokens need 2 blocks of 4
    BatchBuilder past_end;
    past_end.add_tokens(past_end.add_sequence(std::vector<int32_t>{0}, 2), std::vector<int32_t>{1}, 2);
    REQUIRE(try_batch(past_end) == INLAY_ERR_INTERNAL);  // position 2 of a 2-token sequence
    BatchBuilder too_many;
    too_many.add_tokens(too_many.add_sequence(std::vector<int32_t>{0, 1, 2}, 12), std::vector<int32_t>(17, 1), 0);
    REQUIRE(status_of([&] {
                b->prepare_batch(too_many.desc(), BatchLimits{100, 4, 3, 16, 16}, batch);
            }) == INLAY_ERR_INTERNAL);  // 17 tokens for a workspace of 16
    // A batch prepared for another block size is refused by the ops.
    b->prepare_batch(ok.desc(), BatchLimits{100, 8, 3, 16, 16}, batch);
    auto scratch = b->alloc_scratch(ScratchShape{16, 8, 0, 1, 8});
    auto q = b->alloc(16 * 8), out = b->alloc(16 * 8);
    REQUIRE(status_of([&] { b->attention(q, kv, 0, batch, 1, 1.0f, out, scratch); }) == INLAY_ERR_INTERNAL);
}

TEMPLATE_TEST_CASE("argmax_rows: the first of the largest, NaN never, -1 for a row of NaN", "[backend]",
                   INLAY_TEST_BACKENDS) {
    auto b = BackendFactory<TestType>::make();
    const int64_t n_rows = 6, n_cols = 3001;
    auto scratch = b->alloc_scratch(ScratchShape{n_rows, 16, 16, 1, 16});
    std::vector<float> x = random_floats(static_cast<size_t>(n_rows * n_cols), 11, 10.0f);
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    auto at = [&](int64_t r, int64_t c) -> float& { return x[static_cast<size_t>(r * n_cols + c)]; };
    at(0, 2999) = 40.0f;  // row 0: a tie, the earlier column wins
    at(0, 1234) = 40.0f;
    for (int64_t c = 0; c < n_cols; ++c) at(1, c) = nan;  // row 1: NaN but one value
    at(1, 77) = -5.0f;
    for (int64_t c = 0; c < n_cols; ++c) at(2, c) = nan;  // row 2: all NaN
    for (int64_t c = 0; c < n_cols; ++c) at(3, c) = -inf;  // row 3: -inf after a NaN
    at(3, 0) = nan;
    at(4, 5) = inf;  // row 4: +inf
    auto xb = upload(*b, x);
    std::vector<int32_t> ids(static_cast<size_t>(n_rows), -7);
    b->argmax_rows(xb, n_rows, n_cols, scratch);
    b->read_ids(scratch, n_rows, ids.data());
    REQUIRE(ids[0] == 1234);
    REQUIRE(ids[1] == 77);
    REQUIRE(ids[2] == -1);
    REQUIRE(ids[3] == 1);
    REQUIRE(ids[4] == 5);
    // Row 5, random: the plain scan.
    const float* row = x.data() + 5 * n_cols;
    REQUIRE(ids[5] == static_cast<int32_t>(std::max_element(row, row + n_cols) - row));
    REQUIRE(status_of([&] { b->argmax_rows(xb, n_rows + 1, n_cols, scratch); }) == INLAY_ERR_INTERNAL);
}

// Pipelined steps: the ids of two passes may wait unread (read oldest first), and a
// batch's fed tokens take the latest ids on the device before the embedding reads them.
TEMPLATE_TEST_CASE("ids wait in a ring of two; fed tokens take the latest ids", "[backend][pipeline]",
                   INLAY_TEST_BACKENDS) {
    auto b = BackendFactory<TestType>::make();
    const int64_t n_cols = 10;
    auto scratch = b->alloc_scratch(ScratchShape{4, 16, 16, 1, 16});
    auto logits_with = [&](std::vector<int32_t> best) {  // rows whose argmax is best[r] (-1: all NaN)
        std::vector<float> x(best.size() * static_cast<size_t>(n_cols), 0.0f);
        for (size_t r = 0; r < best.size(); ++r) {
            if (best[r] < 0) std::fill_n(x.begin() + static_cast<std::ptrdiff_t>(r * n_cols), n_cols, NAN);
            else x[r * static_cast<size_t>(n_cols) + static_cast<size_t>(best[r])] = 1.0f;
        }
        return upload(*b, x);
    };
    auto first = logits_with({7, 2, 5});
    auto second = logits_with({4, -1});
    b->argmax_rows(first, 3, n_cols, scratch);
    b->argmax_rows(second, 2, n_cols, scratch);
    // A third pass before a read is refused: the ring holds two.
    REQUIRE(status_of([&] { b->argmax_rows(first, 3, n_cols, scratch); }) == INLAY_ERR_INTERNAL);

    // The latest ids (the second pass's) feed a batch: tokens fed from rows 0 and 1, one given.
    auto table = make_tensor(DType::F32, 8, n_cols, 3);
    auto w = b->upload_matrix(table.view);
    auto kv = b->alloc_kv(KvGeometry{1, 1, 8, 4, DType::F16}, 1);
    BatchBuilder bb;
    const int32_t s = bb.add_sequence(std::vector<int32_t>{0}, 3);
    bb.add_fed_token(1, 0, s, false);
    bb.add_token(9, 1, s);
    bb.add_fed_token(0, 2, s, true);
    typename TestType::Batch batch;
    const BatchLimits limits{n_cols, 4, 1, 3, 1, 2};
    b->prepare_batch(bb.desc(), limits, batch);
    b->feed_tokens(batch, scratch);
    auto out = b->alloc(3 * 8);
    b->embed(w, batch, out);
    const auto got = download(*b, out, 3 * 8);
    const int32_t want[] = {0, 9, 4};  // row 1 was all NaN (-1): fed as token 0
    for (size_t t = 0; t < 3; ++t)
        for (size_t i = 0; i < 8; ++i)
            REQUIRE(static_cast<double>(got[t * 8 + i]) == table.dequantized[static_cast<size_t>(want[t]) * 8 + i]);
    // A fed row outside the latest ids' count is refused before anything runs.
    BatchBuilder far;
    const int32_t s2 = far.add_sequence(std::vector<int32_t>{0}, 1);
    far.add_fed_token(2, 0, s2, true);
    REQUIRE(status_of([&] { b->prepare_batch(far.desc(), limits, batch); }) == INLAY_ERR_INTERNAL);

    // Reads come oldest first, each with its own row count.
    std::vector<int32_t> ids(3, -7);
    b->read_ids(scratch, 3, ids.data());
    REQUIRE(ids == std::vector<int32_t>{7, 2, 5});
    b->argmax_rows(first, 3, n_cols, scratch);  // a slot is free again
    ids.assign(3, -7);
    b->read_ids(scratch, 2, ids.data());
    REQUIRE(ids[0] == 4);
    REQUIRE(ids[1] == -1);
    // A read of the wrong size is refused, and frees its slot all the same.
    REQUIRE(status_of([&] { b->read_ids(scratch, 2, ids.data()); }) == INLAY_ERR_INTERNAL);  // the oldest has 3
    REQUIRE(status_of([&] { b->read_ids(scratch, 3, ids.data()); }) == INLAY_ERR_INTERNAL);  // nothing waits
}

// sample_rows against the Sampler itself: each row's sampler describes its next sample()
// (device_penalties, device_row) and a copy of it samples on the host from the same
// logits; the backend must draw the very same token, and leave the penalised values in
// the rows. Rows mix ties, NaN, -inf, +inf, greedy rows with penalties and the top_k range.
TEMPLATE_TEST_CASE("sample_rows draws the Sampler's tokens from the Sampler's draws", "[backend][sampling]",
                   INLAY_TEST_BACKENDS) {
    auto b = BackendFactory<TestType>::make();
    std::mt19937 gen(77);
    auto pick = [&](auto... values) {
        const std::vector<std::common_type_t<decltype(values)...>> v{values...};
        return v[gen() % v.size()];
    };
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    int compared = 0;
    for (const int64_t n_cols : {int64_t{2}, int64_t{37}, int64_t{3001}, int64_t{151936}}) {
        const int64_t n_rows = n_cols > 10000 ? 6 : 40;
        auto scratch = b->alloc_scratch(ScratchShape{n_rows, 16, 16, 1, 16});
        for (int round = 0; round < (n_cols > 10000 ? 2 : 6); ++round) {
            std::vector<float> x(static_cast<size_t>(n_rows * n_cols));
            for (int64_t r = 0; r < n_rows; ++r)
                fill_edge_logits(std::span<float>(x).subspan(static_cast<size_t>(r * n_cols), static_cast<size_t>(n_cols)),
                                 gen, round % 2 == 1);
            auto at = [&](int64_t r, int64_t c) -> float& { return x[static_cast<size_t>(r * n_cols + c)]; };
            for (int64_t c = 0; c < n_cols; ++c) at(0, c) = nan;  // row 0: all NaN
            for (int64_t c = 0; c < n_cols; ++c) at(1, c) = -inf;  // row 1: all -inf after a NaN
            at(1, 0) = nan;
            if (n_cols > 2) at(2, n_cols - 1) = -0.0f, at(2, 1) = 0.0f;  // -0 and +0 tie

            std::vector<Sampler> reference;
            std::vector<std::vector<int32_t>> histories;
            std::vector<RowSampling> rows;
            std::vector<PenaltyEntry> penalties;
            for (int64_t r = 0; r < n_rows; ++r) {
                SamplingParams p;
                p.temperature = pick(0.0f, 0.3f, 0.8f, 1.0f, 1.7f);
                const int32_t max_k = static_cast<int32_t>(std::min<int64_t>(kMaxSampleTopK, n_cols - 1));
                p.top_k = std::min(pick(1, 3, 40, 1024, 5000), max_k);
                if (r == 3) p.top_k = max_k;
                p.top_p = pick(1.0f, 0.5f, 0.9f, 0.95f);
                p.min_p = pick(0.0f, 0.05f, 0.2f);
                p.repeat_penalty = pick(1.0f, 1.1f, 1.5f);
                p.frequency_penalty = pick(0.0f, 0.3f);
                p.presence_penalty = pick(0.0f, 0.5f, -0.25f);
                p.penalty_last_n = pick(0, 4, 64, -1);
                p.seed = gen();
                Sampler device(p, static_cast<int32_t>(n_cols));
                REQUIRE(device.device_samplable());
                std::vector<int32_t> history(gen() % 100);
                for (int32_t& t : history) t = static_cast<int32_t>(gen() % static_cast<uint32_t>(n_cols));
                // Some draws first, so that the row's draw is not the seed's first.
                for (uint32_t i = gen() % 3; i > 0; --i) (void)device.uniform();
                reference.push_back(device);
                const auto begin = static_cast<int32_t>(penalties.size());
                device.device_penalties(history, penalties);
                rows.push_back(device.device_row(begin, static_cast<int32_t>(penalties.size()) - begin));
                histories.push_back(std::move(history));
            }
            auto xb = upload(*b, x);
            std::vector<int32_t> ids(static_cast<size_t>(n_rows), -7);
            b->sample_rows(xb, n_rows, n_cols, SampleRows{rows, penalties}, scratch);
            b->read_ids(scratch, n_rows, ids.data());
            const std::vector<float> after = download(*b, xb, n_rows * n_cols);
            for (int64_t r = 0; r < n_rows; ++r) {
                const auto rs = static_cast<size_t>(r);
                const std::span<const float> logits(x.data() + r * n_cols, static_cast<size_t>(n_cols));
                Sampler& host = reference[rs];
                INFO("vocabulary " << n_cols << " round " << round << " row " << r << ": T=" << rows[rs].temperature
                                   << " k=" << rows[rs].top_k << " p=" << rows[rs].top_p
                                   << " min_p=" << rows[rs].min_p);
                // The penalised row, bit for bit (NaN stays NaN).
                std::vector<float> penalised(logits.begin(), logits.end());
                std::vector<int32_t> counts;
                apply_penalties(penalised, histories[rs], host.params(), counts);
                for (int64_t c = 0; c < n_cols; ++c) {
                    const float want = penalised[static_cast<size_t>(c)];
                    const float got = after[static_cast<size_t>(r * n_cols + c)];
                    if (!(std::isnan(want) && std::isnan(got))) REQUIRE(std::memcmp(&want, &got, sizeof want) == 0);
                }
                if (r == 0) {
                    REQUIRE(ids[rs] == -1);
                    REQUIRE(status_of([&] { (void)host.sample(logits, histories[rs]); }) == INLAY_ERR_BAD_WEIGHTS);
                    continue;
                }
                REQUIRE(ids[rs] == host.sample(logits, histories[rs]));
                ++compared;
            }
        }
    }
    REQUIRE(compared > 400);
}

TEMPLATE_TEST_CASE("sample_rows refuses descriptions it cannot follow", "[backend][sampling]", INLAY_TEST_BACKENDS) {
    auto b = BackendFactory<TestType>::make();
    const int64_t n_rows = 2, n_cols = 100;
    auto scratch = b->alloc_scratch(ScratchShape{n_rows, 16, 16, 1, 16});
    auto xb = upload(*b, random_floats(static_cast<size_t>(n_rows * n_cols), 5));
    std::vector<int32_t> ids(static_cast<size_t>(n_rows) + 1);
    RowSampling ok;
    ok.temperature = 0.8f;
    ok.top_k = 40;
    ok.u = 0.5;
    auto status = [&](std::vector<RowSampling> rows, std::vector<PenaltyEntry> pens = {}) {
        const auto n = static_cast<int64_t>(rows.size());
        return status_of([&] {
            b->sample_rows(xb, n, n_cols, SampleRows{rows, pens}, scratch);
            b->read_ids(scratch, n, ids.data());
        });
    };
    REQUIRE(status({ok, ok}) == INLAY_OK);
    REQUIRE(status_of([&] {
                b->sample_rows(xb, n_rows, n_cols, SampleRows{std::vector<RowSampling>{ok}, {}}, scratch);
            }) == INLAY_ERR_INTERNAL);  // a row without a description
    RowSampling bad = ok;
    bad.top_k = 0;  // top_k off stays with the host sampler
    REQUIRE(status({ok, bad}) == INLAY_ERR_INTERNAL);
    bad.top_k = static_cast<int32_t>(n_cols);  // as much as the vocabulary: off, too
    REQUIRE(status({ok, bad}) == INLAY_ERR_INTERNAL);
    bad = ok;
    bad.u = 1.0;
    REQUIRE(status({ok, bad}) == INLAY_ERR_INTERNAL);
    bad = ok;
    bad.penalty_count = 1;  // past the entries
    REQUIRE(status({ok, bad}) == INLAY_ERR_INTERNAL);
    bad.repeat_penalty = 1.3f;
    REQUIRE(status({ok, bad}, {{100, 1}}) == INLAY_ERR_INTERNAL);  // a token outside the vocabulary
    REQUIRE(status({ok, bad}, {{7, 0}}) == INLAY_ERR_INTERNAL);    // a count of 0
    bad.penalty_count = 2;
    REQUIRE(status({ok, bad}, {{7, 1}, {7, 2}}) == INLAY_ERR_INTERNAL);  // a token twice
    REQUIRE(status({ok, ok, ok}) == INLAY_ERR_INTERNAL);  // more rows than the logits hold
}
