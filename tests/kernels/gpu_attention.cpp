// Paged attention (decode, split + merge, prefill; built-in, generic and NVRTC-compiled
// kernels) against a float64 softmax over the stored K/V.
// UNVERIFIED until run on a GPU (see gpu_main.cpp).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "gpu_util.h"
#include "inlay_cuda_kernels.h"
#include "nvrtc_compile.h"
#include "nvrtc_sources.h"
#include "reference.h"

using namespace inlay::cuda;
using namespace inlay::cuda::test;

namespace {

struct Token {
    int seq, pos;
};

// A paged cache with random K/V at every position below each sequence's length and NaN
// everywhere else (slots past the end of a last block, spare blocks), so that reading a
// position the kernel must not attend to shows up as NaN.
struct Problem {
    // A decode-like batch: single tokens, an empty sequence, and the last 10 tokens of a
    // 300-token prompt.
    static std::vector<Token> decode_tokens() {
        std::vector<Token> t = {{0, 0}, {1, 36}, {3, 0}};
        for (int p = 290; p < 300; ++p) t.push_back({2, p});
        return t;
    }

    int head_dim, group, block_size, n_kv = 2, n_q;
    KvType type;
    std::vector<int> lens;
    std::vector<Token> tokens;
    std::vector<int32_t> indptr, indices, positions, seq_of_token;
    std::vector<double> k, v;  // decoded stored values, [block][kv_head][slot][dim]
    std::vector<float> q;
    int64_t q_stride, out_stride;
    float scale;
    DeviceBytes d_k, d_v, d_q, d_pos, d_seq, d_indptr, d_indices, d_len;

    Problem(int hd, int g, int bs, KvType t, Rng& rng) : Problem(hd, g, bs, t, rng, {1, 37, 300, 0}, decode_tokens()) {}

    // Sequences of the given KV lengths, and the batch's tokens (sequence, position).
    Problem(int hd, int g, int bs, KvType t, Rng& rng, std::vector<int> seq_lens, std::vector<Token> batch_tokens)
        : head_dim(hd), group(g), block_size(bs), n_q(2 * g), type(t), lens(std::move(seq_lens)),
          tokens(std::move(batch_tokens)) {
        indptr = {0};
        for (int len : lens) indptr.push_back(indptr.back() + (len + bs - 1) / bs);
        const int n_blocks = indptr.back() + 2;
        std::vector<int32_t> ids(static_cast<size_t>(n_blocks));
        std::iota(ids.begin(), ids.end(), 0);
        std::shuffle(ids.begin(), ids.end(), rng);
        indices.assign(ids.begin(), ids.begin() + indptr.back());
        for (const Token& tok : tokens) {
            positions.push_back(tok.pos);
            seq_of_token.push_back(tok.seq);
        }
        const size_t elems = static_cast<size_t>(n_blocks) * n_kv * bs * hd;
        k.assign(elems, NAN);
        v.assign(elems, NAN);
        std::uniform_real_distribution<float> val(-1.0f, 1.0f);
        for (size_t s = 0; s < lens.size(); ++s)
            for (int p = 0; p < lens[s]; ++p) {
                const int64_t blk = indices[static_cast<size_t>(indptr[s] + p / bs)];
                for (int h = 0; h < n_kv; ++h)
                    for (int d = 0; d < hd; ++d) {
                        const size_t i = static_cast<size_t>(((blk * n_kv + h) * bs + p % bs) * hd + d);
                        k[i] = val(rng);
                        v[i] = val(rng);
                        if (t == KvType::f16) {
                            k[i] = f16_to_double(double_to_f16(k[i]));
                            v[i] = f16_to_double(double_to_f16(v[i]));
                        }
                    }
            }
        if (t == KvType::f16) {
            std::vector<uint16_t> hk(elems), hv(elems);
            for (size_t i = 0; i < elems; ++i) {
                hk[i] = double_to_f16(k[i]);
                hv[i] = double_to_f16(v[i]);
            }
            d_k = upload(hk);
            d_v = upload(hv);
        } else {
            std::vector<float> fk(k.begin(), k.end()), fv(v.begin(), v.end());
            d_k = upload(fk);
            d_v = upload(fv);
        }
        q_stride = static_cast<int64_t>(n_q) * hd + 2;
        out_stride = static_cast<int64_t>(n_q) * hd + 4;
        q = uniform(tokens.size() * static_cast<size_t>(q_stride), -2.0f, 2.0f, rng);
        scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
        d_q = upload(q);
        d_pos = upload(positions);
        d_seq = upload(seq_of_token);
        d_indptr = upload(indptr);
        d_indices = upload(indices);
        d_len = upload(lens);
    }

    [[nodiscard]] PagedKvLayer layer() const {
        PagedKvLayer l;
        l.k = d_k.get();
        l.v = d_v.get();
        l.type = type;
        l.n_kv_heads = n_kv;
        l.head_dim = head_dim;
        l.block_size = block_size;
        return l;
    }
    [[nodiscard]] TokenBatch batch() const {
        TokenBatch b;
        b.positions = d_pos.as<int32_t>();
        b.seq_of_token = d_seq.as<int32_t>();
        b.kv_indptr = d_indptr.as<int32_t>();
        b.kv_indices = d_indices.as<int32_t>();
        b.kv_len = d_len.as<int32_t>();
        b.n_tokens = static_cast<int32_t>(tokens.size());
        b.n_seqs = static_cast<int32_t>(lens.size());
        return b;
    }
    [[nodiscard]] int max_len() const { return *std::max_element(lens.begin(), lens.end()); }

    // Checks out (downloaded, [token][n_q * head_dim] with out_stride) against float64.
    // Tolerance: a score error e moves its softmax weight by a factor ~(1 + e), so the
    // output by <= 2 e max|v|; the f32 score is a sum of head_dim products, within
    // (head_dim + 8) 2^-24 S with S = scale * sum|q k|. The running sum, the accumulator
    // and the merges of warps and splits add (len + 40) roundings of 2^-24 at most, and
    // exp2f 2 ulp per weight: (len + 40) 2^-24 * 4 max|v|.
    // f16_rel: the relative rounding of q and of the softmax weights when a kernel rounds
    // them to f16 (0 for the f32 kernels): a score then moves by up to f16_rel * S (its
    // weight by that factor, the output by 2 f16_rel S max|v|), a weight by f16_rel (the
    // output by 2 f16_rel max|v|, numerator and sum disagreeing).
    void check(const std::vector<float>& out, double f16_rel = 0.0) const {
        int bad = 0;
        for (size_t t = 0; t < tokens.size(); ++t) {
            const Token tok = tokens[t];
            const int len = std::min(tok.pos + 1, lens[static_cast<size_t>(tok.seq)]);
            for (int h = 0; h < n_q; ++h) {
                const int g = h / group;
                const float* qh = q.data() + static_cast<int64_t>(t) * q_stride + static_cast<int64_t>(h) * head_dim;
                std::vector<double> s(static_cast<size_t>(len));
                double smax = -INFINITY, sabs = 0.0;
                for (int p = 0; p < len; ++p) {
                    const int64_t blk =
                        indices[static_cast<size_t>(indptr[static_cast<size_t>(tok.seq)] + p / block_size)];
                    const size_t base =
                        static_cast<size_t>(((blk * n_kv + g) * block_size + p % block_size) * head_dim);
                    double dot = 0.0, mag = 0.0;
                    for (int d = 0; d < head_dim; ++d) {
                        dot += qh[d] * k[base + static_cast<size_t>(d)];
                        mag += std::fabs(qh[d] * k[base + static_cast<size_t>(d)]);
                    }
                    s[static_cast<size_t>(p)] = dot * scale;
                    smax = std::max(smax, dot * scale);
                    sabs = std::max(sabs, mag * scale);
                }
                std::vector<double> ref(static_cast<size_t>(head_dim), 0.0);
                double sum = 0.0;
                for (int p = 0; p < len; ++p) {
                    const double w = std::exp(s[static_cast<size_t>(p)] - smax);
                    sum += w;
                    const int64_t blk =
                        indices[static_cast<size_t>(indptr[static_cast<size_t>(tok.seq)] + p / block_size)];
                    const size_t base =
                        static_cast<size_t>(((blk * n_kv + g) * block_size + p % block_size) * head_dim);
                    for (int d = 0; d < head_dim; ++d)
                        ref[static_cast<size_t>(d)] += w * v[base + static_cast<size_t>(d)];
                }
                const double tol = len == 0 ? 0.0
                                            : 2.0 * (head_dim + 8) * std::ldexp(sabs, -24) +
                                                  4.0 * (len + 40) * std::ldexp(1.0, -24) +  // max|v| <= 1
                                                  f16_rel * (2.0 * sabs + 4.0);
                for (int d = 0; d < head_dim; ++d) {
                    const double r = len == 0 ? 0.0 : ref[static_cast<size_t>(d)] / sum;
                    const float o = out[t * static_cast<size_t>(out_stride) + static_cast<size_t>(h * head_dim + d)];
                    if (!(std::fabs(o - r) <= tol) && bad++ < 5)
                        FAIL_CHECK("token " << t << " (seq " << tok.seq << " pos " << tok.pos << ") head " << h
                                            << " dim " << d << ": " << o << " vs " << r << " (tol " << tol << ")");
                }
            }
            for (int64_t c = static_cast<int64_t>(n_q) * head_dim; c < out_stride; ++c)
                if (!is_poison(out[t * static_cast<size_t>(out_stride) + static_cast<size_t>(c)]) && bad++ < 5)
                    FAIL_CHECK("padding written at token " << t);
        }
        CHECK(bad == 0);
    }
};

enum class Mode { decode, prefill, split, flash };

std::vector<float> run(const Problem& pb, Mode mode, AttentionSplitPlan plan, const void* kernel = nullptr) {
    DeviceBytes out(sizeof(float) * pb.tokens.size() * static_cast<size_t>(pb.out_stride));
    out.poison();
    const TokenBatch b = pb.batch();
    const size_t scratch_floats = attention_scratch_floats(b.n_tokens, pb.n_q, pb.head_dim, plan.n_splits);
    DeviceBytes scratch(sizeof(float) * std::max<size_t>(scratch_floats, 1));
    scratch.poison();
    switch (mode) {
        case Mode::decode:
            CUDA_REQUIRE(attention_decode(pb.d_q.as<float>(), pb.q_stride, pb.n_q, pb.layer(), b, pb.scale,
                                          out.as<float>(), pb.out_stride, nullptr, kernel));
            break;
        case Mode::prefill:
            CUDA_REQUIRE(attention_prefill(pb.d_q.as<float>(), pb.q_stride, pb.n_q, pb.layer(), b, pb.scale,
                                           out.as<float>(), pb.out_stride, nullptr, kernel));
            break;
        case Mode::flash:
            CUDA_REQUIRE(attention_prefill_flash(pb.d_q.as<float>(), pb.q_stride, pb.n_q, pb.layer(), b, pb.scale,
                                                 out.as<float>(), pb.out_stride, nullptr));
            break;
        case Mode::split:
            CUDA_REQUIRE(attention_decode_split(pb.d_q.as<float>(), pb.q_stride, pb.n_q, pb.layer(), b, pb.scale, plan,
                                                scratch.as<float>(), out.as<float>(), pb.out_stride, nullptr, kernel));
            break;
    }
    sync_ok();
    return download<float>(out);
}

int sm_count() {
    int dev = 0, sms = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    return sms;
}

}  // namespace

TEST_CASE("paged attention: every built-in shape, decode, prefill and split", "[kernels][gpu][attention]") {
    const uint64_t seed = test_seed();
    INFO("seed " << seed);
    Rng rng(seed);
    for (int hd : {64, 128})
        for (int g : {1, 2, 4, 8})
            for (KvType t : {KvType::f16, KvType::f32}) {
                INFO("head_dim " << hd << " group " << g << (t == KvType::f16 ? " f16" : " f32"));
                REQUIRE(attention_has_builtin(hd, g, 16, t));
                const Problem pb(hd, g, 16, t, rng);
                {
                    INFO("decode");
                    pb.check(run(pb, Mode::decode, {}));
                }
                {
                    INFO("prefill");
                    pb.check(run(pb, Mode::prefill, {}));
                }
                for (const AttentionSplitPlan plan :
                     {AttentionSplitPlan{3, 112}, AttentionSplitPlan{19, 16}, AttentionSplitPlan{2, 512}}) {
                    INFO("split " << plan.n_splits << " x " << plan.keys_per_split);
                    pb.check(run(pb, Mode::split, plan));
                }
                const AttentionSplitPlan planned = plan_attention_split(
                    pb.max_len(), static_cast<int64_t>(pb.tokens.size()) * pb.n_kv, sm_count(), 16, 32, 64);
                INFO("planned split " << planned.n_splits << " x " << planned.keys_per_split);
                pb.check(run(pb, Mode::split, planned));
            }
}

// Decode, prefill, three fixed splits (in whole blocks) and the planned split of one shape
// run without a kernel argument.
static void check_all_modes(const Problem& pb) {
    {
        INFO("decode");
        pb.check(run(pb, Mode::decode, {}));
    }
    {
        INFO("prefill");
        pb.check(run(pb, Mode::prefill, {}));
    }
    const int bs = pb.block_size;
    const auto whole_blocks = [bs](int keys) { return (keys + bs - 1) / bs * bs; };
    const int len = pb.max_len();
    for (const int keys : {whole_blocks((len + 2) / 3), whole_blocks(16), whole_blocks(len / 2 + 1)}) {
        const AttentionSplitPlan plan{(len + keys - 1) / keys, keys};
        INFO("split " << plan.n_splits << " x " << plan.keys_per_split);
        pb.check(run(pb, Mode::split, plan));
    }
    const AttentionSplitPlan planned =
        plan_attention_split(pb.max_len(), static_cast<int64_t>(pb.tokens.size()) * pb.n_kv, sm_count(), bs, 32, 64);
    INFO("planned split " << planned.n_splits << " x " << planned.keys_per_split);
    pb.check(run(pb, Mode::split, planned));
}

TEST_CASE("paged attention: generic kernel (run-time head_dim, group, block size)", "[kernels][gpu][attention]") {
    const uint64_t seed = test_seed();
    INFO("seed " << seed);
    Rng rng(seed);
    for (int hd : {8, 16, 48, 96})
        for (int g : {1, 3, 8})
            for (int bs : {1, 4, 16, 32})
                for (KvType t : {KvType::f16, KvType::f32}) {
                    INFO("head_dim " << hd << " group " << g << " block " << bs
                                     << (t == KvType::f16 ? " f16" : " f32"));
                    REQUIRE_FALSE(attention_has_builtin(hd, g, bs, t));
                    REQUIRE(attention_supported(hd, g, bs, t));
                    check_all_modes(Problem(hd, g, bs, t, rng));
                }
    // Edges: the smallest head_dim, block sizes that are not powers of two, the largest
    // group and head_dim (more than 48 KiB of shared memory).
    struct Shape {
        int hd, g, bs;
        KvType t;
    };
    for (const Shape s : {Shape{2, 1, 64, KvType::f32}, Shape{32, 5, 48, KvType::f16}, Shape{16, 2, 7, KvType::f16},
                          Shape{256, 32, 3, KvType::f32}, Shape{256, 32, 16, KvType::f16},
                          Shape{128, 3, 16, KvType::f16}, Shape{64, 8, 8, KvType::f32}}) {
        INFO("head_dim " << s.hd << " group " << s.g << " block " << s.bs << (s.t == KvType::f16 ? " f16" : " f32"));
        REQUIRE_FALSE(attention_has_builtin(s.hd, s.g, s.bs, s.t));
        REQUIRE(attention_supported(s.hd, s.g, s.bs, s.t));
        check_all_modes(Problem(s.hd, s.g, s.bs, s.t, rng));
    }
}

TEST_CASE("paged attention compiled by NVRTC at load time", "[kernels][gpu][attention][nvrtc]") {
    const uint64_t seed = test_seed();
    INFO("seed " << seed);
    Rng rng(seed);
    int dev = 0, major = 0, minor = 0;
    CUDA_REQUIRE(cudaGetDevice(&dev));
    CUDA_REQUIRE(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    CUDA_REQUIRE(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    const std::string arch = "sm_" + std::to_string(major) + std::to_string(minor);
    INFO(arch);
    // Two shapes nvcc does not build and one it does (same code, so the results agree).
    const std::vector<nvrtc_sources::AttentionShape> shapes = {
        {96, 3, 8, KvType::f16}, {256, 2, 32, KvType::f32}, {128, 8, 16, KvType::f32}};
    const nvrtc::Result r = nvrtc::compile(nvrtc_sources::attention_request(shapes, arch, true));
    INFO(r.message);
    REQUIRE(r.ok());
    cudaLibrary_t lib = nullptr;
    CUDA_REQUIRE(cudaLibraryLoadData(&lib, r.image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
    for (size_t i = 0; i < shapes.size(); ++i) {
        const nvrtc_sources::AttentionShape& s = shapes[i];
        INFO("head_dim " << s.head_dim << " group " << s.group << " block " << s.block_size);
        cudaKernel_t kernel = nullptr;
        CUDA_REQUIRE(cudaLibraryGetKernel(&kernel, lib, r.lowered_names[i].c_str()));
        const Problem pb(s.head_dim, s.group, s.block_size, s.kv_type, rng);
        const auto* k = reinterpret_cast<const void*>(kernel);
        pb.check(run(pb, Mode::decode, {}, k));
        // Three splits covering the longest context (300 keys), in whole blocks.
        const int keys = ((pb.max_len() + 2) / 3 + s.block_size - 1) / s.block_size * s.block_size;
        pb.check(run(pb, Mode::split, AttentionSplitPlan{3, keys}, k));
        if (attention_has_builtin(s.head_dim, s.group, s.block_size, s.kv_type)) {
            const std::vector<float> a = run(pb, Mode::decode, {}, k), b = run(pb, Mode::decode, {});
            size_t differ = 0;
            for (size_t j = 0; j < a.size(); ++j)
                if (!(a[j] == b[j]) && !(is_poison(a[j]) && is_poison(b[j]))) ++differ;
            // Same source, same arch, same options: expected bitwise equal. A difference is
            // reported, not failed (both were checked against the reference above).
            if (differ != 0) WARN(differ << " of " << a.size() << " outputs differ between the NVRTC and nvcc builds");
        }
    }
    CUDA_REQUIRE(cudaLibraryUnload(lib));
}

TEST_CASE("flash prefill attention on tensor cores: prompts of several sequences, within f16 rounding",
          "[kernels][gpu][attention][flash]") {
    const uint64_t seed = test_seed();
    INFO("seed " << seed);
    Rng rng(seed);
    // Prompt chunks mid-sequence (100 tokens after 100 cached), a whole prompt, a single
    // token, a sequence with nothing cached, and a prompt of exactly one 64-key tile: CTAs
    // see one sequence or several, rows of a CTA end at different causal limits.
    const std::vector<int> lens = {200, 77, 130, 0, 64};
    std::vector<Token> tokens;
    for (int p = 100; p < 200; ++p) tokens.push_back({0, p});
    for (int p = 0; p < 77; ++p) tokens.push_back({1, p});
    tokens.push_back({2, 129});
    tokens.push_back({3, 0});
    for (int p = 0; p < 64; ++p) tokens.push_back({4, p});
    const double f16_rel = std::ldexp(1.0, -11);
    for (int hd : {64, 128})
        for (int g : {1, 2, 3, 4, 8})
            for (int bs : {16, 5}) {
                INFO("head_dim " << hd << " group " << g << " block " << bs);
                REQUIRE(attention_prefill_flash_supported(hd, g, KvType::f16));
                const Problem pb(hd, g, bs, KvType::f16, rng, lens, tokens);
                pb.check(run(pb, Mode::flash, {}), f16_rel);
            }
    CHECK_FALSE(attention_prefill_flash_supported(96, 1, KvType::f16));
    CHECK_FALSE(attention_prefill_flash_supported(128, 1, KvType::f32));
    CHECK_FALSE(attention_prefill_flash_supported(64, 65, KvType::f16));
}
