// CPU attention micro-benchmarks: CpuBackend::attention alone over an f16 paged KV
// cache, for a prefill chunk (n query tokens of one sequence over as many positions,
// causal) and for decoding at depth (one query token over `depth` positions).
//
// Shapes: head_dim 64 with 9 query / 3 KV heads (SmolLM2-135M) and head_dim 128 with
// 16 / 8 (Qwen3-0.6B); 1 and 2 threads. Reported as query rows (token x head) per second.
// With layers > 1 each iteration reads the next layer's cache, as a decode step does:
// 28 layers of depth 512 (Qwen3-0.6B's 63 MiB) no longer fit the last-level cache.
//   ./bench_attention --benchmark_filter=decode
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "bench_util.h"
#include "backend/common/batch.h"
#include "backend/cpu/cpu_backend.h"

namespace {

using inlay::CpuBackend;

struct Shape {
    int64_t n_heads, n_kv_heads, head_dim;
};
constexpr Shape kStories{6, 6, 48};  // stories15M: head_dim 48, three 16-lane vectors
constexpr Shape kSmol{9, 3, 64};
constexpr Shape kQwen{16, 8, 128};

using inlay::bench::random_floats;

CpuBackend::Buffer random_buffer(CpuBackend& b, size_t n, uint32_t seed) {
    const std::vector<float> values = random_floats(n, seed);
    CpuBackend::Buffer buf = b.alloc(static_cast<int64_t>(n));
    b.write(buf, 0, values.data(), static_cast<int64_t>(n));
    return buf;
}

// One sequence of `depth` positions, the last n_query of them in the batch.
void bm_attention(benchmark::State& state, Shape s) {
    const int64_t n_query = state.range(0), depth = state.range(1);
    const int threads = static_cast<int>(state.range(2));
    const int64_t n_layers = state.range(3);
    CpuBackend b(threads);
    const inlay::KvGeometry g{n_layers, s.n_kv_heads, s.head_dim, 16, inlay::DType::F16};
    const int64_t n_blocks = (depth + g.block_size - 1) / g.block_size;
    auto kv = b.alloc_kv(g, n_blocks);
    std::vector<int32_t> table(static_cast<size_t>(n_blocks));
    for (int64_t i = 0; i < n_blocks; ++i) table[static_cast<size_t>(i)] = static_cast<int32_t>(i);

    // Fill the cache through kv_store, one chunk covering every position.
    inlay::BatchBuilder all;
    const int32_t seq_all = all.add_sequence(table, depth);
    for (int64_t p = 0; p < depth; ++p) all.add_token(0, static_cast<int32_t>(p), seq_all);
    const inlay::BatchLimits limits{1, g.block_size, n_blocks, depth, 0};
    CpuBackend::Batch fill;
    b.prepare_batch(all.desc(), limits, fill);
    CpuBackend::Buffer k = random_buffer(b, static_cast<size_t>(depth * s.n_kv_heads * s.head_dim), 1);
    CpuBackend::Buffer v = random_buffer(b, static_cast<size_t>(depth * s.n_kv_heads * s.head_dim), 2);
    for (int64_t layer = 0; layer < n_layers; ++layer) b.kv_store(kv, layer, k, v, fill);

    inlay::BatchBuilder bb;
    const int32_t seq = bb.add_sequence(table, depth);
    for (int64_t p = depth - n_query; p < depth; ++p) bb.add_token(0, static_cast<int32_t>(p), seq);
    CpuBackend::Batch batch;
    b.prepare_batch(bb.desc(), limits, batch);
    CpuBackend::Buffer q = random_buffer(b, static_cast<size_t>(n_query * s.n_heads * s.head_dim), 3);
    auto out = b.alloc(n_query * s.n_heads * s.head_dim);
    auto scratch = b.alloc_scratch(inlay::ScratchShape{n_query, 1, 0, s.n_heads, s.head_dim});
    const float scale = 1.0f / 8.0f;
    int64_t layer = 0;
    for (auto _ : state) {
        b.attention(q, kv, layer, batch, s.n_heads, scale, out, scratch);
        layer = layer + 1 == n_layers ? 0 : layer + 1;
        benchmark::DoNotOptimize(out.data.data());
    }
    state.SetItemsProcessed(state.iterations() * n_query * s.n_heads);
}

void args(benchmark::internal::Benchmark* bm) {
    bm->ArgNames({"q", "depth", "threads", "layers"})->UseRealTime()->Unit(benchmark::kMicrosecond);
    for (const int t : {1, 2}) {
        bm->Args({512, 512, t, 1});  // a 512-token prompt in one chunk
        for (const int d : {32, 64, 128, 256}) bm->Args({1, d, t, 1});
        bm->Args({1, 512, t, 1});    // decoding at depth, from the caches
        bm->Args({1, 512, t, 28});   // the same from memory
        bm->Args({1, 4096, t, 1});
    }
}

BENCHMARK_CAPTURE(bm_attention, stories_hd48, kStories)->Apply(args);
BENCHMARK_CAPTURE(bm_attention, smol_hd64, kSmol)->Apply(args);
BENCHMARK_CAPTURE(bm_attention, qwen3_hd128, kQwen)->Apply(args);

}  // namespace

BENCHMARK_MAIN();
