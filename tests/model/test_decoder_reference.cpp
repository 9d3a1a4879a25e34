// Decoder<CpuBackend> against an independent float64 forward pass of the same tiny
// random Llama (written out here from the architecture's definition), and the
// consistency of batched, incremental and multi-sequence evaluation.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "io/gguf_reader.h"
#include "model/decoder.h"
#include "model/families/family.h"
#include "quant/quantize.h"
#include "support/gguf_fixtures.h"

using namespace inlay;
using test::TinyLlamaOptions;
using test::TinyModel;

namespace {

using Mat = std::vector<double>;  // row-major [rows][cols]

// The weights as stored (decoded from the file bytes, so quantization is included).
std::vector<double> stored_values(const test::TinyTensor& t) {
    int64_t n = 1;
    for (auto d : t.ne) n *= d;
    std::vector<float> f(static_cast<size_t>(n));
    const int64_t row = t.ne[0];
    const size_t stride = *row_bytes(t.type, row);
    for (int64_t r = 0; r < n / row; ++r)
        quant::dequantize_row(t.type, t.data.data() + static_cast<size_t>(r) * stride, f.data() + r * row, row);
    return {f.begin(), f.end()};
}

struct Reference {
    const TinyModel& m;
    TinyLlamaOptions o;
    bool tied;
    std::vector<double> freq_factors = {};  // llama3 scaling: theta_i is divided by factor i

    std::vector<double> w(const std::string& name) const {
        for (const auto& t : m.tensors)
            if (t.name == name) return stored_values(t);
        FAIL("no tensor " << name);
        return {};
    }
    static std::vector<double> matvec(const std::vector<double>& W, const std::vector<double>& x, int64_t n_out) {
        const auto n_in = static_cast<int64_t>(x.size());
        std::vector<double> y(static_cast<size_t>(n_out), 0.0);
        for (int64_t r = 0; r < n_out; ++r)
            for (int64_t i = 0; i < n_in; ++i) y[static_cast<size_t>(r)] += W[static_cast<size_t>(r * n_in + i)] * x[static_cast<size_t>(i)];
        return y;
    }
    std::vector<double> rms(const std::vector<double>& x, const std::vector<double>& g) const {
        double ss = 0;
        for (double v : x) ss += v * v;
        const double s = 1.0 / std::sqrt(ss / static_cast<double>(x.size()) + o.rms_eps);
        std::vector<double> y(x.size());
        for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * s * g[i];
        return y;
    }
    void rope(std::vector<double>& v, int64_t n_heads, int64_t hd, int64_t pos) const {
        for (int64_t h = 0; h < n_heads; ++h)
            for (int64_t i = 0; i < hd / 2; ++i) {
                double theta = static_cast<double>(pos) * std::pow(static_cast<double>(o.rope_freq_base), -2.0 * static_cast<double>(i) / static_cast<double>(hd));
                if (!freq_factors.empty()) theta /= freq_factors[static_cast<size_t>(i)];
                double& a = v[static_cast<size_t>(h * hd + 2 * i)];
                double& b = v[static_cast<size_t>(h * hd + 2 * i + 1)];
                const double x0 = a, x1 = b;
                a = x0 * std::cos(theta) - x1 * std::sin(theta);
                b = x0 * std::sin(theta) + x1 * std::cos(theta);
            }
    }

    // Logits after each token of `tokens` (one sequence from position 0).
    std::vector<std::vector<double>> logits(const std::vector<int32_t>& tokens) const {
        const int64_t E = o.n_embd, H = o.n_heads, KVH = o.n_kv_heads, hd = E / H, F = o.n_ff, V = o.n_vocab;
        const auto embd = w("token_embd.weight");
        std::vector<std::vector<double>> xs;
        for (int32_t t : tokens) xs.emplace_back(embd.begin() + t * E, embd.begin() + (t + 1) * E);
        const auto n = static_cast<int64_t>(tokens.size());
        for (int64_t l = 0; l < o.n_layers; ++l) {
            auto name = [&](const char* s) { return "blk." + std::to_string(l) + "." + s + ".weight"; };
            const auto an = w(name("attn_norm")), wq = w(name("attn_q")), wk = w(name("attn_k")), wv = w(name("attn_v")),
                       wo = w(name("attn_output")), fn = w(name("ffn_norm")), wg = w(name("ffn_gate")),
                       wu = w(name("ffn_up")), wd = w(name("ffn_down"));
            std::vector<std::vector<double>> qs, ks, vs;
            for (int64_t t = 0; t < n; ++t) {
                const auto h = rms(xs[static_cast<size_t>(t)], an);
                auto q = matvec(wq, h, H * hd), k = matvec(wk, h, KVH * hd);
                rope(q, H, hd, t);
                rope(k, KVH, hd, t);
                qs.push_back(q);
                ks.push_back(k);
                vs.push_back(matvec(wv, h, KVH * hd));
            }
            for (int64_t t = 0; t < n; ++t) {
                std::vector<double> att(static_cast<size_t>(H * hd), 0.0);
                for (int64_t h = 0; h < H; ++h) {
                    const int64_t kh = h / (H / KVH);
                    std::vector<double> s;
                    for (int64_t p = 0; p <= t; ++p) {
                        double d = 0;
                        for (int64_t i = 0; i < hd; ++i) d += qs[static_cast<size_t>(t)][static_cast<size_t>(h * hd + i)] * ks[static_cast<size_t>(p)][static_cast<size_t>(kh * hd + i)];
                        s.push_back(d / std::sqrt(static_cast<double>(hd)));
                    }
                    double mx = -1e300, z = 0;
                    for (double e : s) mx = std::max(mx, e);
                    for (double& e : s) z += (e = std::exp(e - mx));
                    for (int64_t p = 0; p <= t; ++p)
                        for (int64_t i = 0; i < hd; ++i)
                            att[static_cast<size_t>(h * hd + i)] += s[static_cast<size_t>(p)] / z * vs[static_cast<size_t>(p)][static_cast<size_t>(kh * hd + i)];
                }
                const auto out = matvec(wo, att, E);
                for (int64_t i = 0; i < E; ++i) xs[static_cast<size_t>(t)][static_cast<size_t>(i)] += out[static_cast<size_t>(i)];
                const auto h2 = rms(xs[static_cast<size_t>(t)], fn);
                auto g = matvec(wg, h2, F);
                const auto u = matvec(wu, h2, F);
                for (int64_t i = 0; i < F; ++i) {
                    const double gi = g[static_cast<size_t>(i)];
                    g[static_cast<size_t>(i)] = gi / (1.0 + std::exp(-gi)) * u[static_cast<size_t>(i)];
                }
                const auto d = matvec(wd, g, E);
                for (int64_t i = 0; i < E; ++i) xs[static_cast<size_t>(t)][static_cast<size_t>(i)] += d[static_cast<size_t>(i)];
            }
        }
        const auto on = w("output_norm.weight");
        const auto wout = w(tied ? "token_embd.weight" : "output.weight");
        std::vector<std::vector<double>> result;
        for (const auto& x : xs) result.push_back(matvec(wout, rms(x, on), V));
        return result;
    }
};

struct Loaded {
    TinyModel tiny;
    std::unique_ptr<GgufFile> file;
    DecoderSpec spec;
};

Loaded load(const TinyLlamaOptions& o) {
    Loaded l;
    l.tiny = test::make_tiny_llama(o);
    l.file = GgufFile::from_bytes(l.tiny.to_bytes(), "tiny");
    l.spec = spec_from_gguf_metadata(l.file->metadata());
    l.spec.n_vocab = o.n_vocab;
    return l;
}

// Runs `tokens` of one sequence in batches of `chunk`, returning logits of every token.
std::vector<float> run(const Decoder<CpuBackend>& dec, CpuBackend& b, const std::vector<int32_t>& tokens, int64_t chunk,
                       DType kv_type) {
    auto kv = b.alloc_kv(dec.kv_geometry(4, kv_type), 8);
    std::vector<int32_t> table{3, 1, 7, 0, 2, 6, 5, 4};  // any order works
    auto ws = dec.make_workspace(chunk, chunk);
    const auto V = static_cast<size_t>(dec.spec().n_vocab);
    std::vector<float> out(tokens.size() * V);
    for (size_t s = 0; s < tokens.size(); s += static_cast<size_t>(chunk)) {
        const size_t n = std::min(static_cast<size_t>(chunk), tokens.size() - s);
        BatchBuilder batch;
        const int32_t seq = batch.add_sequence(table, static_cast<int64_t>(s + n));
        batch.add_tokens(seq, std::span<const int32_t>(tokens).subspan(s, n), static_cast<int64_t>(s),
                         static_cast<int64_t>(n));
        dec.forward(batch.desc(), kv, ws, out.data() + s * V);
    }
    return out;
}

}  // namespace

TEST_CASE("decoder logits match a float64 forward pass", "[decoder]") {
    struct Case { DType type; bool tied; double tol; };
    // f32: accumulation order only. f16/q8_0: the activations are rounded to the
    // kernel's partner format (f16 / Q8_0) before each product, as in llama.cpp. Q8_0
    // rounding is ~0.7% noise per matmul input (step amax/127 on Gaussian activations);
    // through 2 layers it reached 0.124 on logits of magnitude up to 8.5 (measured), so the
    // bound is 0.2, far below what a wrong kernel gives (errors of the logits' own size).
    for (const Case c : {Case{DType::F32, false, 2e-4}, Case{DType::F32, true, 2e-4}, Case{DType::F16, false, 3e-3},
                         Case{DType::Q8_0, true, 0.2}}) {
        INFO("weights " << dtype_name(c.type) << (c.tied ? " tied" : ""));
        TinyLlamaOptions o;
        o.weight_type = c.type;
        o.tied_output = c.tied;
        auto l = load(o);
        CpuBackend b(2);
        Decoder<CpuBackend> dec(b, l.spec, *l.file);
        REQUIRE(dec.spec().tied_output == c.tied);
        const std::vector<int32_t> tokens{1, 300 - 1, 17, 42, 259, 260, 5, 99, 150, 2, 33};
        const auto got = run(dec, b, tokens, 16, DType::F32);
        const Reference ref{l.tiny, o, c.tied};
        const auto want = ref.logits(tokens);
        double worst = 0, largest = 0;
        for (size_t t = 0; t < tokens.size(); ++t)
            for (size_t v = 0; v < static_cast<size_t>(o.n_vocab); ++v) {
                worst = std::max(worst, std::fabs(got[t * static_cast<size_t>(o.n_vocab) + v] - want[t][v]));
                largest = std::max(largest, std::fabs(want[t][v]));
            }
        INFO("max |logit error| = " << worst << " with max |logit| = " << largest);
        REQUIRE(worst <= c.tol);
    }
}

TEST_CASE("llama3 RoPE frequency factors (rope_freqs.weight) scale the angles", "[decoder]") {
    TinyLlamaOptions o;
    auto tiny = test::make_tiny_llama(o);
    const int64_t half = o.n_embd / o.n_heads / 2;
    test::TinyTensor freqs;
    freqs.name = "rope_freqs.weight";
    freqs.type = DType::F32;
    freqs.ne = {half};
    for (int64_t i = 0; i < half; ++i) freqs.values.push_back(i < 2 ? 1.0f : static_cast<float>(1 << (i % 5)));
    freqs.data.resize(freqs.values.size() * sizeof(float));
    std::memcpy(freqs.data.data(), freqs.values.data(), freqs.data.size());
    tiny.tensors.insert(tiny.tensors.begin() + 1, freqs);
    auto file = GgufFile::from_bytes(tiny.to_bytes(), "tiny-llama3");
    auto spec = spec_from_gguf_metadata(file->metadata());
    spec.n_vocab = o.n_vocab;
    CpuBackend b(2);
    Decoder<CpuBackend> dec(b, spec, *file);
    REQUIRE(dec.spec().has_rope_freq_factors);
    const std::vector<int32_t> tokens{1, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58};
    const auto got = run(dec, b, tokens, 32, DType::F32);
    Reference ref{tiny, o, false};
    ref.freq_factors.assign(freqs.values.begin(), freqs.values.end());
    const auto want = ref.logits(tokens);
    Reference plain{tiny, o, false};
    const auto unscaled = plain.logits(tokens);
    double worst = 0, moved = 0;
    for (size_t t = 0; t < tokens.size(); ++t)
        for (size_t v = 0; v < static_cast<size_t>(o.n_vocab); ++v) {
            worst = std::max(worst, std::fabs(got[t * static_cast<size_t>(o.n_vocab) + v] - want[t][v]));
            moved = std::max(moved, std::fabs(want[t][v] - unscaled[t][v]));
        }
    INFO("max error " << worst << ", effect of the factors " << moved);
    REQUIRE(worst <= 2e-4);
    REQUIRE(moved > 100 * worst);  // the factors matter, so the check above means something
}

TEST_CASE("batched, chunked and token-by-token evaluation agree", "[decoder]") {
    TinyLlamaOptions o;
    auto l = load(o);
    CpuBackend b(2);
    Decoder<CpuBackend> dec(b, l.spec, *l.file);
    const std::vector<int32_t> tokens{1, 77, 12, 200, 201, 13, 14, 15, 16, 100, 250, 3, 4};
    for (DType kv : {DType::F32, DType::F16}) {
        const auto whole = run(dec, b, tokens, 16, kv);
        for (int64_t chunk : {int64_t{1}, int64_t{3}, int64_t{5}}) {
            const auto parts = run(dec, b, tokens, chunk, kv);
            for (size_t i = 0; i < whole.size(); ++i) REQUIRE(std::fabs(whole[i] - parts[i]) <= 1e-5);
        }
    }
}

TEST_CASE("a ragged batch of two sequences equals each sequence alone", "[decoder]") {
    TinyLlamaOptions o;
    auto l = load(o);
    CpuBackend b(2);
    Decoder<CpuBackend> dec(b, l.spec, *l.file);
    const std::vector<int32_t> a{1, 50, 60, 70, 80, 90}, c{1, 33, 44};
    const auto alone_a = run(dec, b, a, 8, DType::F16);
    const auto alone_c = run(dec, b, c, 8, DType::F16);

    auto kv = b.alloc_kv(dec.kv_geometry(4, DType::F16), 6);
    const std::vector<int32_t> table_a{4, 0}, table_c{5};
    BatchBuilder batch;
    const int32_t sa = batch.add_sequence(table_a, 6), sc = batch.add_sequence(table_c, 3);
    batch.add_tokens(sa, a, 0, static_cast<int64_t>(a.size()));
    batch.add_tokens(sc, c, 0, static_cast<int64_t>(c.size()));
    auto ws = dec.make_workspace(16, 16);
    const auto V = static_cast<size_t>(o.n_vocab);
    std::vector<float> out(static_cast<size_t>(batch.n_tokens()) * V);
    dec.forward(batch.desc(), kv, ws, out.data());
    for (size_t i = 0; i < a.size() * V; ++i) REQUIRE(std::fabs(out[i] - alone_a[i]) <= 1e-5);
    for (size_t i = 0; i < c.size() * V; ++i) REQUIRE(std::fabs(out[a.size() * V + i] - alone_c[i]) <= 1e-5);
}

TEST_CASE("decoder construction names the tensor at fault", "[decoder]") {
    TinyLlamaOptions o;
    auto tiny = test::make_tiny_llama(o);
    tiny.find_tensor("blk.1.ffn_up.weight")->ne = {64, 127};
    tiny.find_tensor("blk.1.ffn_up.weight")->data.resize(64 * 127 * 4);
    auto file = GgufFile::from_bytes(tiny.to_bytes(), "tiny");
    auto spec = spec_from_gguf_metadata(file->metadata());
    spec.n_vocab = o.n_vocab;
    CpuBackend b(1);
    try {
        Decoder<CpuBackend> dec(b, spec, *file);
        FAIL("expected an error");
    } catch (const Error& e) {
        REQUIRE(e.status() == INLAY_ERR_SHAPE_MISMATCH);
        REQUIRE_THAT(e.what(), Catch::Contains("blk.1.ffn_up.weight") && Catch::Contains("[64, 128]"));
    }
    tiny.remove_tensor("blk.0.attn_k.weight");
    auto file2 = GgufFile::from_bytes(tiny.to_bytes(), "tiny");
    try {
        Decoder<CpuBackend> dec(b, spec, *file2);
        FAIL("expected an error");
    } catch (const Error& e) {
        REQUIRE(e.status() == INLAY_ERR_MISSING);
        REQUIRE_THAT(e.what(), Catch::Contains("blk.0.attn_k.weight"));
    }
}
