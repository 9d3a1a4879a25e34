// What is particular to the CPU backend: its f32 copies of norm weights, its SiLU's
// accuracy at the extremes, and its bitwise promise (batch invariance): the fused ops
// are the same float operations as their parts, and a value's result does not depend
// on where it sits. The ops themselves are checked against float64 in test_conformance.
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "backend_test_util.h"
#include "quant/interleaved_rows.h"

using namespace inlay;
using namespace inlay::test;

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

TEST_CASE("silu_mul matches float64 and gives the same bits anywhere", "[cpu_ops]") {
    CpuBackend b(2);
    const auto g = random_floats(40000, 11, 4.0f), u = random_floats(40000, 12);
    auto gb = upload(b, g), ub = upload(b, u);
    b.silu_mul(gb, ub, 40000);
    for (size_t i = 0; i < g.size(); ++i) {
        const double ref = g[i] / (1.0 + std::exp(-static_cast<double>(g[i]))) * u[i];
        REQUIRE(std::fabs(gb.data[i] - ref) <= 1e-6 * (1 + std::fabs(ref)));
    }
    // Extremes: exp(-g) overflowing or vanishing, zeros, values near the clamp.
    const std::vector<float> edge{0.0f, -0.0f, 1e-30f, -1e-30f, 87.0f, -87.0f, 88.5f, -88.5f, 100.0f, -100.0f,
                                  1e30f, -1e30f, 20.0f, -20.0f, 0.5f, -0.5f, 3.0f};
    const std::vector<float> ones(edge.size(), 1.0f);
    auto eb = upload(b, edge), ob = upload(b, ones);
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
        auto head = upload(b, std::vector<float>(g.begin(), g.begin() + len));
        auto uh = upload(b, std::vector<float>(u.begin(), u.begin() + len));
        b.silu_mul(head, uh, len);
        for (size_t i = 0; i < static_cast<size_t>(len); ++i) REQUIRE(head.data[i] == gb.data[i]);
    }
}

TEST_CASE("rms_norm rounds as ggml's single running sum in double", "[cpu_ops]") {
    // The CPU sums the squares in sixteen double sums (for speed); the float it makes of
    // them is that of one running sum, as ggml computes it, except where the ~1e-16
    // relative difference of the two doubles straddles a float's rounding boundary: none
    // of these rows does (a wrong order of float operations would show in most of them).
    CpuBackend b(1);
    for (const int64_t dim : {int64_t{64}, int64_t{300}, int64_t{576}, int64_t{1024}, int64_t{2049}}) {
        const int64_t rows = 40;
        const auto x = random_floats(static_cast<size_t>(rows * dim), 31 + static_cast<uint64_t>(dim), 3.0f);
        auto wt = make_tensor(DType::F32, dim, 1, 32);
        auto w = b.upload_vector(wt.view);
        auto xb = upload(b, x), out = b.alloc(rows * dim);
        b.rms_norm(xb, w, 1e-5f, rows, dim, out);
        const auto* wf = reinterpret_cast<const float*>(w.data);
        for (int64_t r = 0; r < rows; ++r) {
            const float* xr = x.data() + r * dim;
            double sum = 0.0;
            for (int64_t i = 0; i < dim; ++i) sum += static_cast<double>(xr[i] * xr[i]);
            const float scale = 1.0f / std::sqrt(static_cast<float>(sum / static_cast<double>(dim)) + 1e-5f);
            INFO("dim " << dim << " row " << r);
            for (int64_t i = 0; i < dim; ++i)
                REQUIRE(out.data[static_cast<size_t>(r * dim + i)] == xr[i] * scale * wf[i]);
        }
    }
}

TEST_CASE("the fused ops are bitwise their parts (CPU)", "[cpu_ops]") {
    CpuBackend b(2);
    const int64_t rows = 7, dim = 256;
    const auto x = random_floats(static_cast<size_t>(rows * dim), 21, 2.0f), y = random_floats(static_cast<size_t>(rows * dim), 22);
    auto wt = make_tensor(DType::F32, dim, 1, 23);
    auto w = b.upload_vector(wt.view);
    auto x1 = upload(b, x), y1 = upload(b, y), out1 = b.alloc(rows * dim);
    b.add_rms_norm(x1, y1, w, 1e-5f, rows, dim, out1);
    auto x2 = upload(b, x), y2 = upload(b, y), out2 = b.alloc(rows * dim);
    b.add(x2, y2, rows * dim);
    b.rms_norm(x2, w, 1e-5f, rows, dim, out2);
    REQUIRE(x1.data == x2.data);
    REQUIRE(out1.data == out2.data);

    // matmul_swiglu: one parallel region over both products where the types allow (one
    // token; or one weight type), the products apart otherwise (a Q6_K up beside a Q4_K
    // gate, as in Q4_K_M files; gate and up of different partner formats). Row counts
    // that are not a multiple of the row block, one token and a batch.
    const std::vector<std::pair<DType, DType>> pairs{{DType::F16, DType::F16},   {DType::Q8_0, DType::Q8_0},
                                                     {DType::Q4_K, DType::Q4_K}, {DType::Q4_K, DType::Q6_K},
                                                     {DType::F16, DType::Q8_0},  {DType::F32, DType::F32}};
    for (const auto& [gate_type, up_type] : pairs)
        for (const int64_t n_out : {int64_t{40}, int64_t{200}})
            for (const int64_t n_tok : {int64_t{1}, int64_t{5}}) {
                INFO(dtype_name(gate_type) << " gate, " << dtype_name(up_type) << " up, " << n_out << " rows, " << n_tok
                                           << " tokens");
                const int64_t n_in = 256;
                auto gt = make_tensor(gate_type, n_in, n_out, 24), ut = make_tensor(up_type, n_in, n_out, 25);
                auto g = b.upload_matrix(gt.view), u = b.upload_matrix(ut.view);
                auto scratch = b.alloc_scratch(ScratchShape{n_tok, n_in, n_out, 1, 1});
                auto xb = upload(b, random_floats(static_cast<size_t>(n_in * n_tok), 26));
                auto fused = b.alloc(n_tok * n_out), gate = b.alloc(n_tok * n_out), up = b.alloc(n_tok * n_out);
                b.matmul_swiglu(g, u, xb, n_tok, fused, scratch);
                b.matmul(g, xb, n_tok, gate, scratch);
                b.matmul(u, xb, n_tok, up, scratch);
                b.silu_mul(gate, up, n_tok * n_out);
                REQUIRE(fused.data == gate.data);
            }
}

TEST_CASE("matmul_qkv is bitwise three matmuls (CPU)", "[cpu_ops]") {
    // q wider than k and v (GQA), rows not a multiple of the row block, weights of one
    // type, of mixed types sharing a partner format (Q4_K_M's Q6_K v) and of different
    // partner formats; one token (one region over all three) and a batch; 1 and 3 threads.
    const int64_t n_in = 256, q_rows = 200, kv_rows = 40;
    const std::vector<std::array<DType, 3>> types{{DType::F16, DType::F16, DType::F16},
                                                  {DType::Q8_0, DType::Q8_0, DType::Q8_0},
                                                  {DType::Q4_K, DType::Q4_K, DType::Q6_K},
                                                  {DType::Q4_0, DType::Q4_0, DType::Q4_0},
                                                  {DType::F16, DType::Q8_0, DType::Q4_K},
                                                  {DType::F32, DType::F32, DType::F32}};
    for (const int threads : {1, 3}) {
        CpuBackend b(threads);
        for (const auto& t : types)
            for (const int64_t n_tok : {int64_t{1}, int64_t{6}}) {
                INFO(dtype_name(t[0]) << "/" << dtype_name(t[1]) << "/" << dtype_name(t[2]) << ", " << n_tok
                                      << " tokens, " << threads << " threads");
                auto qt = make_tensor(t[0], n_in, q_rows, 31), kt = make_tensor(t[1], n_in, kv_rows, 32),
                     vt = make_tensor(t[2], n_in, kv_rows, 33);
                auto wq = b.upload_matrix(qt.view), wk = b.upload_matrix(kt.view), wv = b.upload_matrix(vt.view);
                auto scratch = b.alloc_scratch(ScratchShape{n_tok, n_in, q_rows, 1, 1});
                auto xb = upload(b, random_floats(static_cast<size_t>(n_in * n_tok), 34));
                auto q = b.alloc(n_tok * q_rows), k = b.alloc(n_tok * kv_rows), v = b.alloc(n_tok * kv_rows);
                b.matmul_qkv(wq, wk, wv, xb, n_tok, q, k, v, scratch);
                auto q1 = b.alloc(n_tok * q_rows), k1 = b.alloc(n_tok * kv_rows), v1 = b.alloc(n_tok * kv_rows);
                b.matmul(wq, xb, n_tok, q1, scratch);
                b.matmul(wk, xb, n_tok, k1, scratch);
                b.matmul(wv, xb, n_tok, v1, scratch);
                REQUIRE(q.data == q1.data);
                REQUIRE(k.data == k1.data);
                REQUIRE(v.data == v1.data);
            }
    }
}

TEST_CASE("alloc_scratch holds the widest activation row of every partner format", "[cpu_ops]") {
    CpuBackend b(1);
    const auto s = b.alloc_scratch(ScratchShape{3, 1000, 64, 1, 1});
    for (DType act : {DType::F16, DType::BF16, DType::Q8_0, DType::Q8_1, DType::Q8_K})
        if (const auto r = row_bytes(act, 1024)) REQUIRE(s.converted.size() >= 3 * *r);
    REQUIRE(s.up.size() == 3 * 64);
}

// Q8_0 / Q4_0 / Q5_0 / Q1_0 / K-quant matrices interleaved at upload (quant/interleaved_rows.h) against
// the same matrices kept as stored rows (INLAY_INTERLEAVE=0): every product path (one
// token, the streamed few-token runs, the prompt blocks; matmul, matmul_qkv,
// matmul_swiglu) and embedding lookups give the same bits, over thread splits whose runs
// start at any group. Where this CPU does not interleave, both uploads keep the stored
// rows and the test says so.
TEST_CASE("interleaved weights give the stored rows' bits (CPU)", "[cpu_ops]") {
    struct EnvOff {  // INLAY_INTERLEAVE=0 while alive
        EnvOff() { ::setenv("INLAY_INTERLEAVE", "0", 1); }
        ~EnvOff() { ::unsetenv("INLAY_INTERLEAVE"); }
    };
    for (const int threads : {1, 2, 3}) {
        CpuBackend b(threads);
        for (DType type : {DType::Q8_0, DType::Q4_0, DType::Q5_0, DType::Q1_0, DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
            const bool kquant = dtype_traits(type).block_elems == 256;
            const std::vector<int64_t> widths = kquant                  ? std::vector<int64_t>{256, 768}
                                                : type == DType::Q1_0 ? std::vector<int64_t>{256, 640}
                                                                      : std::vector<int64_t>{224, 576};
            for (const int64_t n_in : widths) {
                const int64_t n_out = 208, kv_rows = 48;  // 13 and 3 groups of sixteen
                auto wt = make_tensor(type, n_in, n_out, 41), kt = make_tensor(type, n_in, kv_rows, 42),
                     vt = make_tensor(type, n_in, kv_rows, 43), ut = make_tensor(type, n_in, n_out, 44);
                CpuBackend::Weight w, k, v, u, ws, ks, vs, us;
                w = b.upload_matrix(wt.view), k = b.upload_matrix(kt.view), v = b.upload_matrix(vt.view),
                u = b.upload_matrix(ut.view);
                {
                    const EnvOff off;
                    ws = b.upload_matrix(wt.view), ks = b.upload_matrix(kt.view), vs = b.upload_matrix(vt.view),
                    us = b.upload_matrix(ut.view);
                }
                REQUIRE(ws.interleaved == nullptr);
                if (!quant::interleaved_rows_supported(type, n_in, n_out)) {
                    REQUIRE(w.interleaved == nullptr);
                    WARN(dtype_name(type) << ": this CPU keeps the stored rows; the comparison is trivial here");
                } else {
                    REQUIRE(w.interleaved != nullptr);
                    REQUIRE(k.interleaved != nullptr);
                }
                for (const int64_t n_tok : {int64_t{1}, int64_t{3}, int64_t{8}, int64_t{9}, int64_t{20}}) {
                    INFO(dtype_name(type) << ", " << n_in << " columns, " << n_tok << " tokens, " << threads << " threads");
                    auto scratch = b.alloc_scratch(ScratchShape{n_tok, n_in, n_out, 1, 1});
                    auto xb = upload(b, random_floats(static_cast<size_t>(n_in * n_tok), 45));
                    auto y = b.alloc(n_tok * n_out), ys = b.alloc(n_tok * n_out);
                    b.matmul(w, xb, n_tok, y, scratch);
                    b.matmul(ws, xb, n_tok, ys, scratch);
                    REQUIRE(y.data == ys.data);
                    auto q = b.alloc(n_tok * n_out), kk = b.alloc(n_tok * kv_rows), vv = b.alloc(n_tok * kv_rows);
                    auto qs = b.alloc(n_tok * n_out), kks = b.alloc(n_tok * kv_rows), vvs = b.alloc(n_tok * kv_rows);
                    b.matmul_qkv(w, k, v, xb, n_tok, q, kk, vv, scratch);
                    b.matmul_qkv(ws, ks, vs, xb, n_tok, qs, kks, vvs, scratch);
                    REQUIRE(q.data == qs.data);
                    REQUIRE(kk.data == kks.data);
                    REQUIRE(vv.data == vvs.data);
                    auto g = b.alloc(n_tok * n_out), gs = b.alloc(n_tok * n_out);
                    b.matmul_swiglu(w, u, xb, n_tok, g, scratch);
                    b.matmul_swiglu(ws, us, xb, n_tok, gs, scratch);
                    REQUIRE(g.data == gs.data);
                }
                // Embedding rows from the records: the stored rows' values.
                auto kv = b.alloc_kv(KvGeometry{1, 1, 8, 4, DType::F16}, 1);
                BatchBuilder bb;
                const int32_t s = bb.add_sequence(std::vector<int32_t>{0}, 4);
                const std::vector<int32_t> ids{207, 0, 16, 101};  // the last row, group edges, a middle lane
                for (const int32_t id : ids) bb.add_token(id, static_cast<int32_t>(bb.n_tokens()), s);
                auto batch = prepare(b, bb, kv);
                const auto n = static_cast<int64_t>(ids.size());
                auto e = b.alloc(n * n_in), es = b.alloc(n * n_in);
                b.embed(w, batch, e);
                b.embed(ws, batch, es);
                REQUIRE(e.data == es.data);
            }
        }
    }
}

TEST_CASE("decode products learn where the next product's threads start", "[cpu_ops]") {
    // A decode step runs the same products in the same order, so each product's weight
    // keeps where each pool thread began the product after it, for the pool's waits to
    // read (ThreadPool::set_idle_reads). Thread t begins on its share of
    // ThreadPool::run_ranges: rows [blocks * t / threads * 16, blocks * (t + 1) / threads * 16).
    CpuBackend b(2);
    const int64_t n_in = 256, n_out = 208;  // 13 row blocks: thread 0 has rows 0-95, thread 1 rows 96-207
    auto at = make_tensor(DType::Q8_0, n_in, n_out, 51), bt = make_tensor(DType::F16, n_in, n_out, 52),
         gt = make_tensor(DType::Q4_K, n_in, n_out, 53), ut = make_tensor(DType::Q4_K, n_in, n_out, 54);
    auto wa = b.upload_matrix(at.view), wb = b.upload_matrix(bt.view), wg = b.upload_matrix(gt.view),
         wu = b.upload_matrix(ut.view);
    // Bytes of `rows` rows, and where row r begins, in the layout the products read.
    auto bytes_of = [&](const CpuBackend::Weight& w, int64_t rows) {
        return w.interleaved ? static_cast<size_t>(rows / 16) * quant::interleaved_group_bytes(w.type, w.n_cols)
                             : static_cast<size_t>(rows) * w.row_stride;
    };
    auto at_row = [&](const CpuBackend::Weight& w, int64_t r) {
        return static_cast<const void*>((w.interleaved ? w.interleaved : w.data) + bytes_of(w, r));
    };
    auto scratch = b.alloc_scratch(ScratchShape{20, n_in, n_out, 1, 1});
    auto x = upload(b, random_floats(static_cast<size_t>(n_in * 20), 55));
    auto y = b.alloc(20 * n_out);
    // One decode step: a, then gate and up (one region), then b; then a prompt of 20 tokens
    // (not a decode product: it learns nothing and changes nothing), and a again.
    b.matmul(wa, x, 1, y, scratch);
    b.matmul_swiglu(wg, wu, x, 1, y, scratch);
    b.matmul(wb, x, 1, y, scratch);
    b.matmul(wa, x, 20, y, scratch);
    b.matmul(wb, x, 20, y, scratch);
    b.matmul(wa, x, 1, y, scratch);

    const auto after_a = wa.next_reads->load(CpuBackend::NextReads::kMaxStreams);  // gate and up, 64 KiB each at most
    CHECK(after_a[0].begin == at_row(wg, 0));
    CHECK(after_a[0].bytes == bytes_of(wg, 96));
    CHECK(after_a[1].begin == at_row(wu, 0));
    CHECK(after_a[2].begin == at_row(wg, 96));
    CHECK(after_a[3].begin == at_row(wu, 96));
    CHECK(after_a[3].bytes == bytes_of(wu, 112));
    CHECK(after_a[4].begin == nullptr);  // no third thread
    const auto after_gate = wg.next_reads->load(CpuBackend::NextReads::kMaxStreams);  // b: one stream per thread
    CHECK(after_gate[0].begin == at_row(wb, 0));
    CHECK(after_gate[0].bytes == bytes_of(wb, 96));
    CHECK(after_gate[1].begin == nullptr);
    CHECK(after_gate[2].begin == at_row(wb, 96));
    const auto after_b = wb.next_reads->load(CpuBackend::NextReads::kMaxStreams);  // a again
    CHECK(after_b[0].begin == at_row(wa, 0));
    CHECK(after_b[2].begin == at_row(wa, 96));
    CHECK(after_b[2].bytes == bytes_of(wa, 112));
    CHECK(wu.next_reads->load(CpuBackend::NextReads::kMaxStreams)[0].begin == nullptr);  // up never keys a region

    // A norm weight is never a product.
    auto nt = make_tensor(DType::F32, n_in, 1, 56);
    CHECK(b.upload_vector(nt.view).next_reads == nullptr);
}
