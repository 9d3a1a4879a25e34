// Every CpuBackend op against a float64 computation written out here, independently.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "core/half.h"
#include "quant/quantize.h"
#include "quant/vec_dot.h"

using namespace inlay;

namespace {

std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, scale);
    std::vector<float> v(n);
    for (auto& x : v) x = d(rng);
    return v;
}

CpuBackend::Buffer buffer_from(CpuBackend& b, const std::vector<float>& v) {
    auto buf = b.alloc(static_cast<int64_t>(v.size()));
    std::copy(v.begin(), v.end(), buf.data.begin());
    return buf;
}

// A weight tensor in `type` made from f32 values (rows of n_cols).
struct OwnedTensor {
    std::vector<std::byte> bytes;
    TensorView view;
    std::vector<double> dequantized;  // what the stored weights mean, per the format
};

OwnedTensor make_tensor(DType type, int64_t n_cols, int64_t n_rows, uint32_t seed) {
    OwnedTensor t;
    const auto values = random_floats(static_cast<size_t>(n_cols * n_rows), seed, 0.5f);
    const size_t stride = *row_bytes(type, n_cols);
    t.bytes.resize(stride * static_cast<size_t>(n_rows));
    std::vector<float> back(static_cast<size_t>(n_cols));
    for (int64_t r = 0; r < n_rows; ++r) {
        quant::quantize_row(type, values.data() + r * n_cols, t.bytes.data() + static_cast<size_t>(r) * stride, n_cols);
        quant::dequantize_row(type, t.bytes.data() + static_cast<size_t>(r) * stride, back.data(), n_cols);
        t.dequantized.insert(t.dequantized.end(), back.begin(), back.end());
    }
    t.view.name = "w";
    t.view.type = type;
    t.view.n_dims = 2;
    t.view.ne = {n_cols, n_rows, 1, 1};
    t.view.data = t.bytes.data();
    t.view.nbytes = t.bytes.size();
    return t;
}

}  // namespace

TEST_CASE("rms_norm matches float64", "[cpu_ops]") {
    CpuBackend b(2);
    const int64_t rows = 5, dim = 300;
    const auto x = random_floats(static_cast<size_t>(rows * dim), 1, 3.0f);
    auto w = make_tensor(DType::F32, dim, 1, 2);
    auto weight = b.upload_vector(w.view);
    auto xb = buffer_from(b, x);
    auto out = b.alloc(rows * dim);
    b.rms_norm(xb, weight, 1e-5f, rows, dim, out);
    for (int64_t r = 0; r < rows; ++r) {
        double ss = 0;
        for (int64_t i = 0; i < dim; ++i) ss += static_cast<double>(x[static_cast<size_t>(r * dim + i)]) * x[static_cast<size_t>(r * dim + i)];
        const double scale = 1.0 / std::sqrt(ss / dim + 1e-5);
        for (int64_t i = 0; i < dim; ++i) {
            const double ref = x[static_cast<size_t>(r * dim + i)] * scale * w.dequantized[static_cast<size_t>(i)];
            REQUIRE(std::fabs(out.data[static_cast<size_t>(r * dim + i)] - ref) <= 1e-5 * (1 + std::fabs(ref)));
        }
    }
}

TEST_CASE("upload_vector converts f16 and bf16 norm weights", "[cpu_ops]") {
    CpuBackend b(1);
    for (DType type : {DType::F16, DType::BF16}) {
        auto w = make_tensor(type, 64, 1, 3);
        auto weight = b.upload_vector(w.view);
        REQUIRE(weight.type == DType::F32);
        const auto* f = reinterpret_cast<const float*>(weight.data);
        for (int i = 0; i < 64; ++i) REQUIRE(static_cast<double>(f[i]) == w.dequantized[static_cast<size_t>(i)]);
    }
}

TEST_CASE("embed returns the dequantized rows and rejects bad ids", "[cpu_ops]") {
    CpuBackend b(2);
    for (DType type : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_K}) {
        auto table = make_tensor(type, 256, 10, 4);
        auto w = b.upload_matrix(table.view);
        const std::vector<int32_t> ids{3, 0, 9, 3};
        auto out = b.alloc(4 * 256);
        b.embed(w, ids, out);
        for (size_t t = 0; t < ids.size(); ++t)
            for (size_t i = 0; i < 256; ++i)
                REQUIRE(static_cast<double>(out.data[t * 256 + i]) == table.dequantized[static_cast<size_t>(ids[t]) * 256 + i]);
        const std::vector<int32_t> bad{10};
        REQUIRE_THROWS_AS(b.embed(w, bad, out), Error);
    }
}

TEST_CASE("matmul matches a float64 product for every weight type", "[cpu_ops]") {
    CpuBackend b(2);
    const int64_t n_in = 512, n_out = 37, n_tok = 3;
    const auto x = random_floats(static_cast<size_t>(n_in * n_tok), 5);
    for (DType type : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_K, DType::Q5_K,
                       DType::Q6_K, DType::Q1_0}) {
        INFO("type " << dtype_name(type));
        auto t = make_tensor(type, n_in, n_out, 6);
        auto w = b.upload_matrix(t.view);
        auto xb = buffer_from(b, x);
        auto y = b.alloc(n_tok * n_out);
        b.matmul(w, xb, n_tok, y);
        // The activations are converted to the kernel's partner format first (as in
        // llama.cpp); the reference multiplies the exact weights with the exact f32
        // activations, so the bound is the activation rounding: per element at most
        // half a quantization step of its block (Q8: amax/127/2) or 2^-9 relative for
        // f16/bf16 halves, times |w|, plus float accumulation.
        const DType act = quant::vec_dot_type(type);
        for (int64_t tk = 0; tk < n_tok; ++tk) {
            const float* xr = x.data() + tk * n_in;
            const int64_t block = act == DType::Q8_K ? 256 : 32;
            for (int64_t r = 0; r < n_out; ++r) {
                double ref = 0, bound = 0, mag = 0;
                for (int64_t i0 = 0; i0 < n_in; i0 += block) {
                    double amax = 0;
                    for (int64_t i = i0; i < i0 + block; ++i) amax = std::max(amax, std::fabs(static_cast<double>(xr[i])));
                    for (int64_t i = i0; i < i0 + block; ++i) {
                        const double wv = t.dequantized[static_cast<size_t>(r * n_in + i)];
                        ref += wv * xr[i];
                        mag += std::fabs(wv * xr[i]);
                        if (act == DType::Q8_0 || act == DType::Q8_K) bound += std::fabs(wv) * amax / 127.0 * 0.5;
                        else if (act == DType::F16) bound += std::fabs(wv * xr[i]) * std::ldexp(1.0, -11);
                        else if (act == DType::BF16) bound += std::fabs(wv * xr[i]) * std::ldexp(1.0, -8);
                    }
                }
                bound += mag * 1e-6 + 1e-6;
                REQUIRE(std::fabs(y.data[static_cast<size_t>(tk * n_out + r)] - ref) <= bound);
            }
        }
    }
}

TEST_CASE("rope rotates pairs like the float64 definition (normal and neox)", "[cpu_ops]") {
    CpuBackend b(2);
    const int64_t n_heads = 3, head_dim = 16, n_tok = 4;
    const std::vector<int32_t> positions{0, 1, 7, 300};
    const std::vector<int32_t> seq(4, 0);
    const BatchLayout layout{positions, seq, {}};
    const std::vector<float> factors{1.0f, 1.0f, 2.0f, 8.0f, 1.0f, 4.0f, 3.0f, 0.5f};  // n_rot/2 for n_rot 16
    for (RopeStyle style : {RopeStyle::normal, RopeStyle::neox}) {
        for (int64_t n_rot : {int64_t{16}, int64_t{12}}) {
            for (bool use_factors : {false, true}) {
                const auto x = random_floats(static_cast<size_t>(n_tok * n_heads * head_dim), 7);
                auto buf = buffer_from(b, x);
                RopeParams rp{style, n_rot, 10000.0f, 0.5f, use_factors ? factors.data() : nullptr};
                b.rope(buf, n_heads, head_dim, layout, rp);
                for (int64_t t = 0; t < n_tok; ++t)
                    for (int64_t h = 0; h < n_heads; ++h) {
                        const size_t base = static_cast<size_t>((t * n_heads + h) * head_dim);
                        std::vector<double> ref(x.begin() + static_cast<long>(base), x.begin() + static_cast<long>(base + head_dim));
                        for (int64_t i = 0; i < n_rot / 2; ++i) {
                            double theta = positions[static_cast<size_t>(t)] * 0.5 * std::pow(10000.0, -2.0 * i / n_rot);
                            if (use_factors) theta /= factors[static_cast<size_t>(i)];
                            const int64_t a = style == RopeStyle::normal ? 2 * i : i;
                            const int64_t c = style == RopeStyle::normal ? 2 * i + 1 : i + n_rot / 2;
                            const double x0 = x[base + static_cast<size_t>(a)], x1 = x[base + static_cast<size_t>(c)];
                            ref[static_cast<size_t>(a)] = x0 * std::cos(theta) - x1 * std::sin(theta);
                            ref[static_cast<size_t>(c)] = x0 * std::sin(theta) + x1 * std::cos(theta);
                        }
                        for (int64_t i = 0; i < head_dim; ++i)
                            REQUIRE(std::fabs(buf.data[base + static_cast<size_t>(i)] - ref[static_cast<size_t>(i)]) <= 1e-5);
                    }
            }
        }
    }
}

TEST_CASE("paged causal GQA attention matches float64 softmax attention", "[cpu_ops]") {
    CpuBackend b(2);
    for (DType kv_type : {DType::F32, DType::F16}) {
        INFO("kv " << dtype_name(kv_type));
        const KvGeometry g{2, 2, 16, 4, kv_type};  // 2 layers, 2 KV heads, head_dim 16, 4 slots per block
        const int64_t n_heads = 6, layer = 1;
        // Two sequences in one ragged batch; blocks deliberately out of order.
        const std::vector<int32_t> table0{5, 2, 7};        // 10 tokens
        const std::vector<int32_t> table1{0, 3};           // 6 tokens
        std::vector<BatchSequence> seqs{{table0, 10}, {table1, 6}};
        std::vector<int32_t> positions, seq_of;
        for (int p = 0; p < 10; ++p) { positions.push_back(p); seq_of.push_back(0); }
        for (int p = 0; p < 6; ++p) { positions.push_back(p); seq_of.push_back(1); }
        const BatchLayout layout{positions, seq_of, seqs};
        const int64_t n_tok = 16;
        auto kv = b.alloc_kv(g, 8);
        const auto k = random_floats(static_cast<size_t>(n_tok * g.n_kv_heads * g.head_dim), 8);
        const auto v = random_floats(static_cast<size_t>(n_tok * g.n_kv_heads * g.head_dim), 9);
        const auto q = random_floats(static_cast<size_t>(n_tok * n_heads * g.head_dim), 10);
        auto kb = buffer_from(b, k), vb = buffer_from(b, v), qb = buffer_from(b, q);
        b.kv_store(kv, layer, kb, vb, layout);
        auto out = b.alloc(n_tok * n_heads * g.head_dim);
        b.attention(qb, kv, layer, layout, n_heads, out);
        auto stored = [&](float f) {
            return kv_type == DType::F16 ? static_cast<double>(f16_to_f32_portable(f32_to_f16_portable(f))) : static_cast<double>(f);
        };
        for (int64_t t = 0; t < n_tok; ++t) {
            const int64_t first = seq_of[static_cast<size_t>(t)] == 0 ? 0 : 10;  // batch index of the sequence's pos 0
            for (int64_t h = 0; h < n_heads; ++h) {
                const int64_t kvh = h / (n_heads / g.n_kv_heads);
                const float* qv = q.data() + (t * n_heads + h) * g.head_dim;
                std::vector<double> s;
                for (int64_t p = 0; p <= positions[static_cast<size_t>(t)]; ++p) {
                    double d = 0;
                    for (int64_t i = 0; i < g.head_dim; ++i)
                        d += qv[i] * stored(k[static_cast<size_t>(((first + p) * g.n_kv_heads + kvh) * g.head_dim + i)]);
                    s.push_back(d / std::sqrt(16.0));
                }
                double m = -1e300;
                for (const double e : s) m = std::max(m, e);
                double z = 0;
                for (auto& e : s) z += (e = std::exp(e - m));
                for (int64_t i = 0; i < g.head_dim; ++i) {
                    double ref = 0;
                    for (size_t p = 0; p < s.size(); ++p)
                        ref += s[p] / z * stored(v[static_cast<size_t>(((first + static_cast<int64_t>(p)) * g.n_kv_heads + kvh) * g.head_dim + i)]);
                    // f16 caches accumulate V in f16 like llama.cpp (one rounding of 2^-11
                    // relative per position, at most 10 here, on |v| < 5); f32 is exact math.
                    const double tol = kv_type == DType::F16 ? 10 * 5 * std::ldexp(1.0, -11) : 2e-6;
                    REQUIRE(std::fabs(out.data[static_cast<size_t>((t * n_heads + h) * g.head_dim + i)] - ref) <= tol);
                }
            }
        }
    }
}

TEST_CASE("silu_mul, add and gather_rows", "[cpu_ops]") {
    CpuBackend b(2);
    const auto g = random_floats(40000, 11, 4.0f), u = random_floats(40000, 12);
    auto gb = buffer_from(b, g), ub = buffer_from(b, u);
    b.silu_mul(gb, ub, 40000);
    for (size_t i = 0; i < g.size(); ++i) {
        const double ref = g[i] / (1.0 + std::exp(-static_cast<double>(g[i]))) * u[i];
        REQUIRE(std::fabs(gb.data[i] - ref) <= 1e-6 * (1 + std::fabs(ref)));
    }
    // Extremes: exp(-g) overflowing or vanishing, zeros, values near the clamp.
    const std::vector<float> edge{0.0f, -0.0f, 1e-30f, -1e-30f, 87.0f, -87.0f, 88.5f, -88.5f, 100.0f, -100.0f,
                                  1e30f, -1e30f, 20.0f, -20.0f, 0.5f, -0.5f, 3.0f};
    const std::vector<float> ones(edge.size(), 1.0f);
    auto eb = buffer_from(b, edge), ob = buffer_from(b, ones);
    b.silu_mul(eb, ob, static_cast<int64_t>(edge.size()));
    for (size_t i = 0; i < edge.size(); ++i) {
        const double x = edge[i];
        const double ref = x / (1.0 + std::exp(-x));
        INFO("silu(" << x << ")");
        REQUIRE(std::isfinite(eb.data[i]));
        REQUIRE(std::fabs(eb.data[i] - ref) <= 1e-6 * (1 + std::fabs(ref)));
    }
    // The same value gives the same bits wherever it sits (tails included): batch invariance.
    for (int64_t len : {1, 5, 7, 9, 13}) {
        auto head = buffer_from(b, std::vector<float>(g.begin(), g.begin() + len));
        auto uh = buffer_from(b, std::vector<float>(u.begin(), u.begin() + len));
        b.silu_mul(head, uh, len);
        for (size_t i = 0; i < static_cast<size_t>(len); ++i) REQUIRE(head.data[i] == gb.data[i]);
    }
    auto ab = buffer_from(b, u);
    b.add(ab, ub, 40000);
    for (size_t i = 0; i < u.size(); ++i) REQUIRE(ab.data[i] == 2 * u[i]);
    const std::vector<int32_t> rows{3, 0};
    auto out = b.alloc(2 * 100);
    b.gather_rows(ub, rows, 100, out);
    for (size_t i = 0; i < 100; ++i) {
        REQUIRE(out.data[i] == u[300 + i]);
        REQUIRE(out.data[100 + i] == u[i]);
    }
}
