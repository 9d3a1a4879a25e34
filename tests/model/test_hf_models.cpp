// Hugging Face folders as models: inlay's logits on random-weight Llama / Qwen3 folders
// against an independent float64 forward pass written from the transformers modelling
// code (rotate_half RoPE on unpermuted Q/K, llama3 / linear RoPE scaling, Qwen3 q/k
// norms, tied embeddings); sharded == single file; a folder == its converted f32 GGUF
// (the only link between them is the Q/K permutation: neox vs normal RoPE); malformed
// folders and every file of the malformed safetensors corpus give their status and
// message through the C ABI.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numbers>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "core/half.h"
#include "inlay/inlay.h"
#include "io/gguf_reader.h"
#include "io/safetensors_writer.h"
#include "model/decoder.h"
#include "model/families/family.h"
#include "model/families/hf_convert.h"
#include "model/families/hf_family.h"
#include "model/families/hf_source.h"
#include "model/model.h"
#include "runtime/session.h"
#include "support/safetensors_fixtures.h"
#include "support/safetensors_malformed.h"
#include "support/test_paths.h"

using namespace inlay;
using test::TinyHfModel;
using test::TinyHfOptions;
namespace fs = std::filesystem;

namespace {

using Vec = std::vector<double>;

// The model as transformers computes it (LlamaForCausalLM / Qwen3ForCausalLM), in
// float64, with two roundings that inlay (like llama.cpp) makes on purpose: the input of
// every matmul is rounded to the weights' type when that is f16 or bf16 (the kernels'
// partner format), and with f16_kv q, k and v are rounded to f16 as the default f16 KV
// cache and its attention do.
struct HfReference {
    const TinyHfModel& m;
    bool f16_kv = false;

    [[nodiscard]] Vec w(const std::string& name) const {
        const auto& f = m.w(name);
        return {f.begin(), f.end()};
    }
    [[nodiscard]] Vec matvec(const Vec& W, Vec x, int64_t n_out) const {
        if (m.options.dtype == StDType::F16)
            for (double& e : x) e = f16(e);
        if (m.options.dtype == StDType::BF16)
            for (double& e : x) e = bf16_to_f32(f32_to_bf16(static_cast<float>(e)));
        const auto n_in = x.size();
        Vec y(static_cast<size_t>(n_out), 0.0);
        for (size_t r = 0; r < y.size(); ++r)
            for (size_t i = 0; i < n_in; ++i) y[r] += W[r * n_in + i] * x[i];
        return y;
    }
    [[nodiscard]] Vec rms(const Vec& x, const Vec& g, size_t offset = 0, size_t n = 0) const {
        if (n == 0) n = x.size();
        double ss = 0;
        for (size_t i = 0; i < n; ++i) ss += x[offset + i] * x[offset + i];
        const double s = 1.0 / std::sqrt(ss / static_cast<double>(n) + m.options.rms_eps);
        Vec y(n);
        for (size_t i = 0; i < n; ++i) y[i] = x[offset + i] * s * g[i];
        return y;
    }
    static double f16(double v) { return f16_to_f32(f32_to_f16(static_cast<float>(v))); }

    // transformers' inv_freq, including _compute_llama3_parameters and linear scaling
    // (which divides positions by the factor: the same as dividing the frequencies).
    [[nodiscard]] Vec inv_freq() const {
        const int64_t hd = m.head_dim;
        Vec f(static_cast<size_t>(hd / 2));
        for (size_t i = 0; i < f.size(); ++i)
            f[i] = 1.0 / std::pow(m.options.rope_theta, static_cast<double>(2 * i) / static_cast<double>(hd));
        if (m.options.rope_scaling.empty()) return f;
        const auto s = nlohmann::json::parse(m.options.rope_scaling);
        const double factor = s["factor"].get<double>();
        if (s["rope_type"] == "linear") {
            for (double& v : f) v /= factor;
            return f;
        }
        const double low = s["low_freq_factor"].get<double>(), high = s["high_freq_factor"].get<double>();
        const double old_len = s["original_max_position_embeddings"].get<double>();
        const double low_wavelen = old_len / low, high_wavelen = old_len / high;
        for (double& v : f) {
            const double wavelen = 2 * std::numbers::pi / v;
            double scaled = wavelen > low_wavelen ? v / factor : v;
            const double smooth = (old_len / wavelen - low) / (high - low);
            if (!(wavelen < high_wavelen) && !(wavelen > low_wavelen))
                scaled = (1 - smooth) * scaled / factor + smooth * scaled;
            v = scaled;
        }
        return f;
    }
    // rotate_half: pairs (i, i + hd/2) of each head.
    static void rope(Vec& v, int64_t n_heads, int64_t hd, int64_t pos, const Vec& freq) {
        const auto half = static_cast<size_t>(hd / 2);
        for (int64_t h = 0; h < n_heads; ++h) {
            double* x = v.data() + h * hd;
            for (size_t i = 0; i < half; ++i) {
                const double a = static_cast<double>(pos) * freq[i];
                const double x1 = x[i], x2 = x[i + half];
                x[i] = x1 * std::cos(a) - x2 * std::sin(a);
                x[i + half] = x2 * std::cos(a) + x1 * std::sin(a);
            }
        }
    }

    [[nodiscard]] std::vector<Vec> logits(const std::vector<int32_t>& tokens) const {
        const TinyHfOptions& o = m.options;
        const int64_t E = o.n_embd, H = o.n_heads, KV = o.n_kv_heads, hd = m.head_dim, V = m.n_vocab;
        const bool qwen3 = o.arch == "qwen3";
        const Vec freq = inv_freq();
        const Vec embd = w("model.embed_tokens.weight");
        std::vector<Vec> xs;
        for (int32_t t : tokens) xs.emplace_back(embd.begin() + t * E, embd.begin() + (t + 1) * E);
        const auto n = static_cast<int64_t>(tokens.size());
        for (int64_t l = 0; l < o.n_layers; ++l) {
            const auto p = [&](const char* s) { return fmt::format("model.layers.{}.{}", l, s); };
            const Vec in_norm = w(p("input_layernorm.weight")), wq = w(p("self_attn.q_proj.weight")),
                      wk = w(p("self_attn.k_proj.weight")), wv = w(p("self_attn.v_proj.weight")),
                      wo = w(p("self_attn.o_proj.weight")), post = w(p("post_attention_layernorm.weight")),
                      wg = w(p("mlp.gate_proj.weight")), wu = w(p("mlp.up_proj.weight")),
                      wd = w(p("mlp.down_proj.weight"));
            Vec qn, kn;
            if (qwen3) {
                qn = w(p("self_attn.q_norm.weight"));
                kn = w(p("self_attn.k_norm.weight"));
            }
            std::vector<Vec> qs, ks, vs;
            for (int64_t t = 0; t < n; ++t) {
                const Vec h = rms(xs[static_cast<size_t>(t)], in_norm);
                Vec q = matvec(wq, h, H * hd), k = matvec(wk, h, KV * hd), v = matvec(wv, h, KV * hd);
                if (qwen3) {
                    for (int64_t i = 0; i < H; ++i) {
                        const Vec y = rms(q, qn, static_cast<size_t>(i * hd), static_cast<size_t>(hd));
                        std::copy(y.begin(), y.end(), q.begin() + i * hd);
                    }
                    for (int64_t i = 0; i < KV; ++i) {
                        const Vec y = rms(k, kn, static_cast<size_t>(i * hd), static_cast<size_t>(hd));
                        std::copy(y.begin(), y.end(), k.begin() + i * hd);
                    }
                }
                rope(q, H, hd, t, freq);
                rope(k, KV, hd, t, freq);
                if (f16_kv) {
                    for (double& e : q) e = f16(e);
                    for (double& e : k) e = f16(e);
                    for (double& e : v) e = f16(e);
                }
                qs.push_back(std::move(q));
                ks.push_back(std::move(k));
                vs.push_back(std::move(v));
            }
            for (int64_t t = 0; t < n; ++t) {
                Vec att(static_cast<size_t>(H * hd), 0.0);
                for (int64_t h = 0; h < H; ++h) {
                    const int64_t kh = h / (H / KV);
                    Vec s;
                    for (int64_t j = 0; j <= t; ++j) {
                        double d = 0;
                        for (int64_t i = 0; i < hd; ++i)
                            d += qs[static_cast<size_t>(t)][static_cast<size_t>(h * hd + i)] *
                                 ks[static_cast<size_t>(j)][static_cast<size_t>(kh * hd + i)];
                        s.push_back(d / std::sqrt(static_cast<double>(hd)));
                    }
                    const double mx = *std::max_element(s.begin(), s.end());
                    double z = 0;
                    for (double& e : s) z += (e = std::exp(e - mx));
                    for (int64_t j = 0; j <= t; ++j)
                        for (int64_t i = 0; i < hd; ++i)
                            att[static_cast<size_t>(h * hd + i)] +=
                                s[static_cast<size_t>(j)] / z *
                                vs[static_cast<size_t>(j)][static_cast<size_t>(kh * hd + i)];
                }
                Vec& x = xs[static_cast<size_t>(t)];
                const Vec out = matvec(wo, att, E);
                for (int64_t i = 0; i < E; ++i) x[static_cast<size_t>(i)] += out[static_cast<size_t>(i)];
                const Vec h2 = rms(x, post);
                Vec g = matvec(wg, h2, o.n_ff);
                const Vec u = matvec(wu, h2, o.n_ff);
                for (size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
                const Vec d = matvec(wd, g, E);
                for (int64_t i = 0; i < E; ++i) x[static_cast<size_t>(i)] += d[static_cast<size_t>(i)];
            }
        }
        const Vec norm = w("model.norm.weight");
        const Vec head = w(o.tied ? "model.embed_tokens.weight" : "lm_head.weight");
        std::vector<Vec> out;
        for (const Vec& x : xs) out.push_back(matvec(head, rms(x, norm), V));
        return out;
    }
};

// Logits of every token of one sequence through Decoder<CpuBackend> with an f32 KV cache
// (Model sessions use f16), so that only the arithmetic of the kernels differs from the
// reference.
std::vector<float> run_f32_kv(const DecoderSpec& spec, const WeightSource& src, const std::vector<int32_t>& tokens) {
    CpuBackend b(2);
    Decoder<CpuBackend> dec(b, spec, src);
    const auto n = static_cast<int64_t>(tokens.size());
    constexpr int64_t kBlock = 16;
    const int64_t n_blocks = (n + kBlock - 1) / kBlock;
    auto kv = b.alloc_kv(dec.kv_geometry(kBlock, DType::F32), n_blocks);
    std::vector<int32_t> table(static_cast<size_t>(n_blocks));
    for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int32_t>(i);
    auto ws = dec.make_workspace(n, n);
    BatchBuilder batch;
    batch.add_tokens(batch.add_sequence(table, n), tokens, 0, n);
    std::vector<float> out(tokens.size() * static_cast<size_t>(spec.n_vocab));
    dec.forward(batch.desc(), kv, ws, out.data());
    return out;
}

std::vector<float> run_f32_kv(const fs::path& path, const std::vector<int32_t>& tokens) {
    if (fs::is_directory(path)) {
        const auto src = HfModelSource::open(path.string());
        return run_f32_kv(src->spec(), *src, tokens);
    }
    const auto file = GgufFile::open(path.string());
    DecoderSpec spec = spec_from_gguf_metadata(file->metadata());
    spec.n_vocab = file->require("token_embd.weight").ne[1];
    return run_f32_kv(spec, *file, tokens);
}

std::shared_ptr<const Model> load(const fs::path& path) {
    ModelOptions options;
    options.n_threads = 2;
    return Model::load(path.string(), options);
}

std::vector<float> eval(const std::shared_ptr<const Model>& model, const std::vector<int32_t>& tokens) {
    Session session(model, 0);
    return session.eval_logits(tokens);
}

struct Diff {
    double max_abs = 0, max_logit = 0;
};

Diff compare(const std::vector<float>& got, const std::vector<Vec>& want) {
    Diff d;
    const size_t V = want.at(0).size();
    REQUIRE(got.size() == want.size() * V);
    for (size_t t = 0; t < want.size(); ++t)
        for (size_t v = 0; v < V; ++v) {
            d.max_abs = std::max(d.max_abs, std::fabs(got[t * V + v] - want[t][v]));
            d.max_logit = std::max(d.max_logit, std::fabs(want[t][v]));
        }
    return d;
}

double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
    REQUIRE(a.size() == b.size());
    double d = 0;
    for (size_t i = 0; i < a.size(); ++i) d = std::max(d, static_cast<double>(std::fabs(a[i] - b[i])));
    return d;
}

// Token ids of a prompt: spread over the vocabulary, including the specials at its end.
std::vector<int32_t> prompt_ids(int64_t n_vocab, size_t n) {
    std::vector<int32_t> ids;
    for (size_t i = 0; i < n; ++i) ids.push_back(static_cast<int32_t>((i * 97 + 5) % static_cast<size_t>(n_vocab)));
    ids[3] = static_cast<int32_t>(n_vocab - 1);
    return ids;
}

const char* const kLlama3Scaling =
    R"({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 64})";

}  // namespace

TEST_CASE("HF folders give transformers' logits (float64 reference)", "[hf][reference]") {
    struct Case {
        const char* name;
        TinyHfOptions o;
        double tol;
    };
    std::vector<Case> cases;
    // Bounds (f32 KV cache): f32 weights ~100x the largest error measured (~5e-6, the order
    // of f32 sums). f16/bf16: where float and float64 inputs fall on different sides of a
    // rounding step, one value moves by a whole f16/bf16 ulp (measured: one such flip at
    // position 5 of the f16 case moved later logits by 4e-3). Mapping, RoPE or scaling
    // mistakes give errors of the logits' own size (1-10).
    auto o = TinyHfOptions{};
    cases.push_back({"llama f32 GQA", o, 1e-3});
    o = {};
    o.dtype = StDType::BF16;
    o.tied = true;
    cases.push_back({"llama bf16 tied", o, 5e-2});
    o = {};
    o.dtype = StDType::F16;
    o.head_dim = 32;
    cases.push_back({"llama f16 head_dim 32", o, 1e-2});
    o = {};
    o.head_dim = 32;  // q_dim 128 != hidden_size 64
    cases.push_back({"llama head_dim 32", o, 1e-3});
    o = {};
    o.head_dim = 16;  // with original_max_position_embeddings 64, pairs 1..7 are scaled or smoothed
    o.n_heads = 4;
    o.rope_scaling = kLlama3Scaling;
    cases.push_back({"llama llama3 scaling", o, 1e-3});
    o = {};
    o.rope_scaling = R"({"rope_type": "linear", "factor": 4.0})";
    cases.push_back({"llama linear scaling", o, 1e-3});
    o = {};
    o.arch = "qwen3";
    o.head_dim = 32;
    o.tied = true;
    o.rope_theta = 1e6;
    o.rms_eps = 1e-6;
    cases.push_back({"qwen3 tied head_dim 32", o, 1e-3});
    o = {};
    o.arch = "qwen3";
    o.dtype = StDType::BF16;
    o.n_kv_heads = 1;
    cases.push_back({"qwen3 bf16 MQA", o, 5e-2});

    for (const Case& c : cases) {
        INFO(c.name);
        const fs::path dir = test::scratch_dir("hf_reference");
        const TinyHfModel m = test::write_tiny_hf_folder(dir, c.o);
        const auto model = load(dir);
        CHECK(model->spec().architecture == c.o.arch);
        CHECK(model->spec().rope_style == RopeStyle::neox);  // HF rows are not permuted
        CHECK(model->spec().tied_output == c.o.tied);
        CHECK(model->spec().head_dim == m.head_dim);
        const auto tokens = prompt_ids(m.n_vocab, 24);
        const Diff d = compare(run_f32_kv(dir, tokens), HfReference{m}.logits(tokens));
        // Through Model and a session (f16 KV cache): the reference rounds q, k, v too; the
        // f16 V accumulator of the attention adds ulp-level noise.
        const Diff s = compare(eval(model, tokens), HfReference{m, true}.logits(tokens));
        WARN(c.name << ": max |logit - float64 transformers| = " << d.max_abs << " (f32 KV), " << s.max_abs
                    << " (f16 KV session); max |logit| " << d.max_logit);
        CHECK(d.max_logit > 1.0);
        CHECK(d.max_abs <= c.tol);
        CHECK(s.max_abs <= 1e-2 * d.max_logit + c.tol);
    }
}

TEST_CASE("the reference detects a RoPE or scaling mistake (the test can fail)", "[hf][reference]") {
    // The same folder against a reference with normal-style RoPE or without llama3
    // scaling must disagree by far more than the tolerance above.
    const fs::path dir = test::scratch_dir("hf_reference_negative");
    TinyHfOptions o;
    o.head_dim = 16;
    o.rope_scaling = kLlama3Scaling;
    const TinyHfModel m = test::write_tiny_hf_folder(dir, o);
    const auto tokens = prompt_ids(m.n_vocab, 24);
    const auto got = run_f32_kv(dir, tokens);
    REQUIRE(compare(got, HfReference{m}.logits(tokens)).max_abs <= 1e-3);
    TinyHfModel unscaled = m;
    unscaled.options.rope_scaling.clear();
    CHECK(compare(got, HfReference{unscaled}.logits(tokens)).max_abs > 0.2);
}

TEST_CASE("a sharded folder gives exactly the single-file folder's logits", "[hf][sharded]") {
    for (const char* arch : {"llama", "qwen3"}) {
        INFO(arch);
        TinyHfOptions o;
        o.arch = arch;
        o.dtype = StDType::BF16;
        const fs::path single = test::scratch_dir(std::string("hf_single_") + arch);
        const fs::path sharded = test::scratch_dir(std::string("hf_sharded_") + arch);
        test::write_tiny_hf_folder(single, o);
        o.max_shard_bytes = 20000;
        test::write_tiny_hf_folder(sharded, o);
        REQUIRE(fs::exists(sharded / "model.safetensors.index.json"));
        REQUIRE_FALSE(fs::exists(sharded / "model.safetensors"));
        const auto a = load(single);
        const auto b = load(sharded);
        CHECK(dynamic_cast<const HfModelSource&>(b->weights()).safetensors().files().size() >= 3);
        const auto tokens = prompt_ids(a->spec().n_vocab, 16);
        CHECK(eval(a, tokens) == eval(b, tokens));  // bit for bit
        CHECK(a->n_params() == b->n_params());
    }
}

TEST_CASE("a folder and its converted f32 GGUF give the same logits and tokens", "[hf][convert]") {
    struct Case {
        const char* name;
        TinyHfOptions o;
    };
    std::vector<Case> cases;
    TinyHfOptions o;
    cases.push_back({"llama", o});
    o.head_dim = 16;
    o.rope_scaling = kLlama3Scaling;
    o.tied = true;
    cases.push_back({"llama llama3 tied", o});
    o = {};
    o.rope_scaling = R"({"rope_type": "linear", "factor": 2.0})";
    cases.push_back({"llama linear", o});
    o = {};
    o.arch = "qwen3";
    o.head_dim = 32;
    o.tied = true;
    cases.push_back({"qwen3", o});
    if (fs::exists(test::spm_source())) {
        o = {};
        o.tokenizer = test::TinyTokenizer::spm;
        cases.push_back({"llama spm", o});
    } else {
        test::skip_missing("the SentencePiece case: " + test::spm_source().string() + " is absent");
    }
    for (const Case& c : cases) {
        INFO(c.name);
        const fs::path dir = test::scratch_dir("hf_vs_gguf");
        const fs::path gguf = dir / "converted.gguf";
        const TinyHfModel m = test::write_tiny_hf_folder(dir / "folder", c.o);
        ConvertOptions options;
        options.type = ConvertType::f32;
        const ConvertReport report = convert_hf_folder((dir / "folder").string(), gguf.string(), options);
        for (const auto& t : report.tensors) CHECK(t.type == DType::F32);
        const auto folder_model = load(dir / "folder");
        const auto gguf_model = load(gguf);
        CHECK(gguf_model->spec().rope_style == (c.o.arch == "llama" ? RopeStyle::normal : RopeStyle::neox));
        const bool llama3 = c.o.rope_scaling.find("llama3") != std::string::npos;
        CHECK(gguf_model->spec().has_rope_freq_factors == llama3);
        CHECK(gguf_model->spec().tied_output == c.o.tied);
        const auto tokens = prompt_ids(m.n_vocab, 24);
        // Same weights and kernels; only the order of the q.k sums differs (permuted rows).
        const double d = max_diff(run_f32_kv(dir / "folder", tokens), run_f32_kv(gguf, tokens));
        // Sessions keep an f16 KV cache whose attention rounds its V accumulator to f16: a
        // last-bit difference in a score can move a value by one f16 ulp (~5e-4 relative).
        const double s = max_diff(eval(folder_model, tokens), eval(gguf_model, tokens));
        WARN(c.name << ": max |folder - converted GGUF| = " << d << " (f32 KV), " << s << " (f16 KV sessions)");
        CHECK(d <= 2e-5);
        CHECK(s <= 1e-2);

        // The GGUF's vocabulary tokenizes like the folder's tokenizer.
        const Session fs_session(folder_model, 0), gg_session(gguf_model, 0);
        for (const char* text : {"the cat and the dog", "Hello, world! 12 3", " leading  spaces\nnew line",
                                 "<|im_start|>user hi<|im_end|>", "caf\xc3\xa9 \xe2\x82\xac 5"}) {
            INFO(text);
            CHECK(gg_session.tokenize_input(text, true, true) == fs_session.tokenize_input(text, true, true));
        }
        // (The GGUF takes BOS from config.json when tokenizer_config.json has none, as
        // llama.cpp's converter does; it matters only where BOS is added.)
        if (folder_model->tokenizer().add_bos())
            CHECK(gguf_model->tokenizer().bos() == folder_model->tokenizer().bos());
        CHECK(gguf_model->tokenizer().eos() == folder_model->tokenizer().eos());
        CHECK(gguf_model->tokenizer().add_bos() == folder_model->tokenizer().add_bos());
    }
}

TEST_CASE("llama3 RoPE factors follow transformers' rule", "[hf][rope]") {
    // Llama 3.1 8B: theta 500000, head_dim 128, factor 8, low 1, high 4, original 8192.
    HfRopeScaling s;
    s.type = "llama3";
    s.factor = 8.0;
    const auto f = llama3_rope_freq_factors(s, 500000.0, 128);
    REQUIRE(f.size() == 64);
    // transformers' scaled frequencies, computed directly; the factors are their ratios.
    int ones = 0, eights = 0;
    for (size_t i = 0; i < f.size(); ++i) {
        const double freq = std::pow(500000.0, -static_cast<double>(2 * i) / 128.0);
        const double wavelen = 2 * std::numbers::pi / freq;
        double scaled = freq;
        if (wavelen > 8192.0) {
            scaled = freq / 8.0;
        } else if (wavelen >= 2048.0) {
            const double smooth = (8192.0 / wavelen - 1.0) / 3.0;
            scaled = (1 - smooth) * freq / 8.0 + smooth * freq;
        }
        INFO("pair " << i);
        CHECK(f[i] == Approx(freq / scaled).epsilon(1e-6));
        ones += f[i] == 1.0f;
        eights += f[i] == 8.0f;
        if (i > 0) CHECK(f[i] >= f[i - 1]);  // lower frequencies are scaled more
    }
    // The wavelength 2*pi*500000^(i/64) passes 2048 at pair 28.2 and 8192 at pair 34.99.
    CHECK(ones == 29);
    CHECK(eights == 29);
}

TEST_CASE("Q/K rows are permuted as llama.cpp's convert permute()", "[hf][rope]") {
    // One head of 8 rows (neox halves a0..a3 | b0..b3) becomes a0 b0 a1 b1 a2 b2 a3 b3;
    // a second head follows the same pattern.
    std::vector<int32_t> rows(16);
    for (int32_t i = 0; i < 16; ++i) rows[static_cast<size_t>(i)] = i;
    std::vector<int32_t> out(16, -1);
    permute_rows_for_normal_rope(reinterpret_cast<const std::byte*>(rows.data()),
                                 reinterpret_cast<std::byte*>(out.data()), 2, 8, sizeof(int32_t));
    CHECK(out == std::vector<int32_t>{0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15});
    CHECK(gguf_name_of_hf_tensor("model.layers.12.self_attn.k_norm.weight") == "blk.12.attn_k_norm.weight");
    CHECK(gguf_name_of_hf_tensor("model.layers.0.mlp.down_proj.weight") == "blk.0.ffn_down.weight");
    CHECK(gguf_name_of_hf_tensor("lm_head.weight") == "output.weight");
    CHECK(gguf_name_of_hf_tensor("model.layers.01.mlp.down_proj.weight").empty());
    CHECK(gguf_name_of_hf_tensor("model.layers.-1.mlp.down_proj.weight").empty());
    CHECK(gguf_name_of_hf_tensor("model.layers.1.mlp.down_proj.bias").empty());
    CHECK(gguf_name_of_hf_tensor("model.layers.1.self_attn.rotary_emb.inv_freq").empty());
}

namespace {

// Rewrites the folder's model.safetensors through `edit` (name, dtype, shape, data) ->
// keep?
void rewrite_weights(
    const fs::path& dir,
    const std::function<bool(std::string&, StDType&, std::vector<int64_t>&, std::vector<std::byte>&)>& edit) {
    SafetensorsWriter w;
    {
        auto src = SafetensorsSource::open(dir.string());
        for (const StTensor* t : src->entries()) {
            std::string name = t->name;
            StDType dtype = t->dtype;
            std::vector<int64_t> shape = t->shape;
            std::vector<std::byte> data(t->data.begin(), t->data.end());
            if (edit(name, dtype, shape, data)) w.add_tensor(name, dtype, shape, data);
        }
    }
    w.write_file((dir / "model.safetensors").string());
}

void edit_text(const fs::path& p, const std::string& from, const std::string& to) {
    std::ifstream in(p);
    std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t at = s.find(from);
    REQUIRE(at != std::string::npos);
    s.replace(at, from.size(), to);
    std::ofstream(p) << s;
}

}  // namespace

TEST_CASE("malformed HF folders give their status and message through the C ABI", "[hf][malformed]") {
    struct Case {
        const char* name;
        TinyHfOptions o;
        std::function<void(const fs::path&)> edit;
        inlay_status status;
        const char* message;
    };
    const TinyHfOptions llama;
    TinyHfOptions qwen3;
    qwen3.arch = "qwen3";
    const auto drop = [](const char* victim) {
        return [victim](const fs::path& d) {
            rewrite_weights(d, [&](std::string& n, StDType&, std::vector<int64_t>&, std::vector<std::byte>&) {
                return n != victim;
            });
        };
    };
    const std::vector<Case> cases = {
        {"no_config", llama, [](const fs::path& d) { fs::remove(d / "config.json"); }, INLAY_ERR_MISSING,
         "has no config.json"},
        {"config_not_json", llama,
         [](const fs::path& d) { std::ofstream(d / "config.json") << "{\"hidden_size\": 64,"; }, INLAY_ERR_BAD_FORMAT,
         "config.json': invalid JSON"},
        {"config_unsupported", llama, [](const fs::path& d) { edit_text(d / "config.json", "\"llama\"", "\"gemma\""); },
         INLAY_ERR_UNSUPPORTED, "model_type \"gemma\""},
        {"no_weights", llama, [](const fs::path& d) { fs::remove(d / "model.safetensors"); }, INLAY_ERR_MISSING,
         "holds neither model.safetensors.index.json nor model.safetensors"},
        {"weights_truncated", llama, [](const fs::path& d) { fs::resize_file(d / "model.safetensors", 4000); },
         INLAY_ERR_TRUNCATED, "model.safetensors"},
        {"missing_weight", llama, drop("model.layers.1.mlp.up_proj.weight"), INLAY_ERR_MISSING,
         "tensor 'model.layers.1.mlp.up_proj.weight' is missing"},
        {"missing_lm_head", llama, drop("lm_head.weight"), INLAY_ERR_MISSING, "'lm_head.weight' is missing from"},
        {"missing_q_norm", qwen3, drop("model.layers.0.self_attn.q_norm.weight"), INLAY_ERR_MISSING,
         "model.layers.0.self_attn.q_norm.weight"},
        {"wrong_shape", llama,
         [](const fs::path& d) {
             rewrite_weights(d,
                             [](std::string& n, StDType&, std::vector<int64_t>& shape, std::vector<std::byte>& data) {
                                 if (n == "model.layers.0.self_attn.k_proj.weight") {
                                     shape = {16, 64};
                                     data.resize(16 * 64 * 4);
                                 }
                                 return true;
                             });
         },
         INLAY_ERR_SHAPE_MISMATCH, "'model.layers.0.self_attn.k_proj.weight' in"},
        {"hidden_size_lies", llama,
         [](const fs::path& d) { edit_text(d / "config.json", "\"hidden_size\": 64", "\"hidden_size\": 128"); },
         INLAY_ERR_SHAPE_MISMATCH, "has shape [307, 64], but config.json implies [307, 128]"},
        {"integer_weight", llama,
         [](const fs::path& d) {
             rewrite_weights(d, [](std::string& n, StDType& t, std::vector<int64_t>&, std::vector<std::byte>&) {
                 if (n == "model.norm.weight") t = StDType::I32;
                 return true;
             });
         },
         INLAY_ERR_UNSUPPORTED, "'model.norm.weight' in"},
        {"no_tokenizer", llama, [](const fs::path& d) { fs::remove(d / "tokenizer.json"); }, INLAY_ERR_MISSING,
         "holds neither tokenizer"},
        {"tokenizer_not_json", llama, [](const fs::path& d) { std::ofstream(d / "tokenizer.json") << "[}"; },
         INLAY_ERR_BAD_FORMAT, "tokenizer.json"},
        {"tokenizer_unigram", llama,
         [](const fs::path& d) { edit_text(d / "tokenizer.json", "\"BPE\"", "\"Unigram\""); }, INLAY_ERR_UNSUPPORTED,
         "model type \"Unigram\""},
        {"vocab_too_large", llama,
         [](const fs::path& d) { edit_text(d / "config.json", "\"vocab_size\": 307", "\"vocab_size\": 310"); },
         INLAY_ERR_SHAPE_MISMATCH, "has shape [307, 64], but config.json implies [310, 64]"},
        {"eos_unknown", llama,
         [](const fs::path& d) { edit_text(d / "tokenizer_config.json", "<|im_end|>", "<|nope|>"); },
         INLAY_ERR_BAD_FORMAT, "\"<|nope|>\" is not in the vocabulary"},
    };
    for (const Case& c : cases) {
        INFO(c.name);
        const fs::path dir = test::scratch_dir(std::string("hf_malformed_") + c.name);
        test::write_tiny_hf_folder(dir, c.o);
        c.edit(dir);
        inlay_model_params params;
        inlay_model_params_init(&params);
        params.n_threads = 1;
        inlay_model* model = nullptr;
        const inlay_status status = inlay_model_load(dir.c_str(), &params, &model);
        const std::string message = inlay_last_error();
        INFO(inlay_status_name(status) << ": " << message);
        CHECK(model == nullptr);
        CHECK(status == c.status);
        CHECK_THAT(message, Catch::Contains(c.message));
        inlay_model_free(model);
    }

    // The unedited folder loads and generates through the C ABI.
    const fs::path dir = test::scratch_dir("hf_valid_capi");
    test::write_tiny_hf_folder(dir, llama);
    inlay_model* model = nullptr;
    REQUIRE(inlay_model_load(dir.c_str(), nullptr, &model) == INLAY_OK);
    inlay_model_info info{};
    info.struct_size = sizeof info;
    REQUIRE(inlay_model_get_info(model, &info) == INLAY_OK);
    CHECK(std::string(info.architecture) == "llama");
    CHECK(std::string(info.name) == "hf_valid_capi");
    CHECK(info.n_vocab == 307);
    CHECK(info.head_dim == 16);
    inlay_model_free(model);
}

TEST_CASE("every malformed safetensors file fails the C ABI model load with its status", "[hf][malformed]") {
    // The corpus of tests/support/safetensors_malformed.h as the model.safetensors of an
    // otherwise valid folder: the loader maps the file (not the in-memory path the io
    // tests use) and must report the reader's status, naming the file, with no model.
    const auto corpus = test::malformed_safetensors_corpus();
    REQUIRE(corpus.size() >= 20);
    const fs::path dir = test::scratch_dir("hf_malformed_corpus");
    test::write_tiny_hf_folder(dir, TinyHfOptions{});
    for (const auto& c : corpus) {
        INFO("case " << c.name);
        {
            std::ofstream out(dir / "model.safetensors", std::ios::binary | std::ios::trunc);
            out.write(reinterpret_cast<const char*>(c.bytes.data()), static_cast<std::streamsize>(c.bytes.size()));
        }
        inlay_model* model = nullptr;
        const inlay_status status = inlay_model_load(dir.c_str(), nullptr, &model);
        const std::string message = inlay_last_error();
        INFO(inlay_status_name(status) << ": " << message);
        CHECK(model == nullptr);
        CHECK(status == c.expected);
        CHECK_THAT(message, Catch::Contains(c.message_contains));
        CHECK_THAT(message, Catch::Contains("model.safetensors"));
        inlay_model_free(model);
    }
}
