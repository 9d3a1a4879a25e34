// Dot-kernel micro-benchmarks: vec_dot_rows over a whole weight matrix (one activation
// row, as in decoding), reported as GB/s of weights read; vec_dot_tile over a batch of
// tokens (as in batched decoding), reported as dots per second; decode_threads, one
// product from DRAM split over 1 and 2 threads beside read_stream, a plain read of as many
// bytes (the roofline the decode kernels are held to); quantize_activations.
//
// Shapes: 576 rows x 1536 (a small model's ffn_down, fits in L2) and 4096 x 4096 (a 7B
// model's attention projection, tens of MB: memory-bound).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "bench_util.h"
#include "cli/read_lanes.h"
#include "core/dtype.h"
#include "quant/interleaved_rows.h"
#include "quant/quantize.h"
#include "quant/vec_dot.h"

namespace {

using inlay::DType;

using inlay::bench::random_floats;

// Rows of `type` in a buffer of 4-byte words (alignment for every block type).
struct Matrix {
    std::vector<uint32_t> storage;
    size_t row_bytes = 0;
    Matrix(DType type, int64_t rows, int64_t cols) : row_bytes(*inlay::row_bytes(type, cols)) {
        storage.resize((row_bytes * static_cast<size_t>(rows) + 3) / 4);
        const auto src = random_floats(static_cast<size_t>(cols), 1);
        auto* base = reinterpret_cast<uint8_t*>(storage.data());
        // One quantized row copied everywhere is enough for timing, and fast to build.
        inlay::quant::quantize_row(type, src.data(), base, cols);
        for (int64_t r = 1; r < rows; ++r) std::copy(base, base + row_bytes, base + static_cast<size_t>(r) * row_bytes);
    }
    [[nodiscard]] const void* data() const { return storage.data(); }
};

void bm_vec_dot_rows(benchmark::State& state, DType type, bool reference) {
    const int64_t rows = state.range(0);
    const int64_t cols = state.range(1);
    const Matrix w(type, rows, cols);
    const DType act = inlay::quant::vec_dot_type(type);
    const auto xf = random_floats(static_cast<size_t>(cols), 2);
    std::vector<uint32_t> x((*inlay::row_bytes(act, cols) + 3) / 4);
    inlay::quant::quantize_activations(act, xf.data(), x.data(), cols);
    std::vector<float> out(static_cast<size_t>(rows));
    const auto kernel = inlay::quant::vec_dot_kernel_reference(type);
    for (auto _ : state) {
        if (reference) {
            const auto* base = static_cast<const uint8_t*>(w.data());
            for (int64_t r = 0; r < rows; ++r) kernel(cols, &out[static_cast<size_t>(r)], base + static_cast<size_t>(r) * w.row_bytes, x.data());
        } else {
            inlay::quant::vec_dot_rows(type, cols, rows, out.data(), w.data(), w.row_bytes, x.data());
        }
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(state.iterations() * rows * static_cast<int64_t>(w.row_bytes));
}

// A batch of n_tokens activation rows against the whole matrix (a TilePack, then
// vec_dot_tile in row blocks of 16, as CpuBackend::matmul calls it): items are (row,
// token) dots.
void bm_vec_dot_tile(benchmark::State& state, DType type) {
    const int64_t rows = state.range(0);
    const int64_t cols = state.range(1);
    const int64_t tokens = state.range(2);
    const Matrix w(type, rows, cols);
    const DType act = inlay::quant::vec_dot_type(type);
    const size_t act_row = *inlay::row_bytes(act, cols);
    std::vector<uint32_t> x((act_row * static_cast<size_t>(tokens) + 3) / 4);
    for (int64_t t = 0; t < tokens; ++t) {
        const auto xf = random_floats(static_cast<size_t>(cols), 2 + static_cast<uint32_t>(t));
        inlay::quant::quantize_activations(act, xf.data(), reinterpret_cast<uint8_t*>(x.data()) + static_cast<size_t>(t) * act_row, cols);
    }
    std::vector<float> out(static_cast<size_t>(rows * tokens));
    const auto* base = static_cast<const uint8_t*>(w.data());
    for (auto _ : state) {
        const inlay::quant::TilePack pack(type, cols, tokens, x.data(), act_row);  // once per product, as matmul does
        for (int64_t r = 0; r < rows; r += 16) {
            inlay::quant::vec_dot_tile(type, cols, std::min<int64_t>(16, rows - r), tokens, out.data() + r,
                                       static_cast<size_t>(rows), base + static_cast<size_t>(r) * w.row_bytes,
                                       w.row_bytes, x.data(), act_row, &pack);
        }
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(state.iterations() * rows * tokens);
    state.SetBytesProcessed(state.iterations() * rows * static_cast<int64_t>(w.row_bytes));
}

// The same products with the matrix repacked in the interleaved layout (Q8_0 / Q4_0 / Q5_0 / K-quants)
// (quant/interleaved_rows.h), one call over all rows (the repacking is not timed; the
// pack is, as in bm_vec_dot_tile).
void bm_vec_dot_interleaved(benchmark::State& state, DType type) {
    const int64_t rows = state.range(0);
    const int64_t cols = state.range(1);
    const int64_t tokens = state.range(2);
    if (!inlay::quant::interleaved_rows_supported(type, cols, rows)) {
        state.SkipWithError("the interleaved layout is not available on this build or CPU");
        return;
    }
    const Matrix w(type, rows, cols);
    std::vector<uint64_t> packed((inlay::quant::interleaved_bytes(type, cols, rows) + 7) / 8);
    inlay::quant::interleave_rows(type, cols, rows, w.data(), w.row_bytes, packed.data());
    const DType act = inlay::quant::vec_dot_type(type);
    const size_t act_row = *inlay::row_bytes(act, cols);
    std::vector<uint32_t> x((act_row * static_cast<size_t>(tokens) + 3) / 4);
    for (int64_t t = 0; t < tokens; ++t) {
        const auto xf = random_floats(static_cast<size_t>(cols), 2 + static_cast<uint32_t>(t));
        inlay::quant::quantize_activations(act, xf.data(),
                                           reinterpret_cast<uint8_t*>(x.data()) + static_cast<size_t>(t) * act_row, cols);
    }
    std::vector<float> out(static_cast<size_t>(rows * tokens));
    for (auto _ : state) {
        const inlay::quant::TilePack pack(type, cols, tokens, x.data(), act_row);  // once per product, as matmul does
        inlay::quant::vec_dot_interleaved(type, cols, rows, tokens, out.data(), static_cast<size_t>(rows), packed.data(),
                                          x.data(), act_row, &pack);
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(state.iterations() * rows * tokens);
    state.SetBytesProcessed(state.iterations() * rows * static_cast<int64_t>(w.row_bytes));
}

// Decode products from DRAM on several threads at once, as the CPU backend splits one:
// a matrix of rows of 1024 that holds about range(0) bytes in every format (so that no
// format sits partly in the last-level cache and reads faster than the others), each
// benchmark thread reading its own rows/threads of it, in the interleaved layout where
// the type has one, else as stored rows. Rates are over wall time, so bytes_per_second
// is what the threads pull together; read_stream below, the same bytes read plainly, is
// the ceiling they are measured against.
void bm_decode_threads(benchmark::State& state, DType type) {
    const int64_t cols = state.range(1);
    const int64_t all_rows = state.range(0) / static_cast<int64_t>(*inlay::row_bytes(type, cols));
    const int64_t rows = all_rows / state.threads() / 16 * 16;
    const Matrix w(type, rows, cols);
    const bool interleaved = inlay::quant::interleaved_rows_supported(type, cols, rows);
    std::vector<uint64_t> packed;
    if (interleaved) {
        packed.resize((inlay::quant::interleaved_bytes(type, cols, rows) + 7) / 8);
        inlay::quant::interleave_rows(type, cols, rows, w.data(), w.row_bytes, packed.data());
    }
    const DType act = inlay::quant::vec_dot_type(type);
    const size_t act_row = *inlay::row_bytes(act, cols);
    const auto xf = random_floats(static_cast<size_t>(cols), 2);
    std::vector<uint32_t> x((act_row + 3) / 4);
    inlay::quant::quantize_activations(act, xf.data(), x.data(), cols);
    std::vector<float> out(static_cast<size_t>(rows));
    for (auto _ : state) {
        if (interleaved) {
            const inlay::quant::TilePack pack(type, cols, 1, x.data(), act_row);
            inlay::quant::vec_dot_interleaved(type, cols, rows, 1, out.data(), static_cast<size_t>(rows), packed.data(),
                                              x.data(), act_row, &pack);
        } else {
            inlay::quant::vec_dot_rows(type, cols, rows, out.data(), w.data(), w.row_bytes, x.data());
        }
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(state.iterations() * rows * static_cast<int64_t>(w.row_bytes));
}

// The ceiling of the products above: each thread sums its own share of a buffer far
// above the last-level cache with the loop `inlay bench --membw` times (cli/read_lanes.h).
void bm_read_stream(benchmark::State& state) {
    using inlay::cli::Lane;
    const size_t n = static_cast<size_t>(state.range(0)) / state.threads() / inlay::cli::kLaneBytes;
    std::vector<Lane> buffer(n);
    for (size_t i = 0; i < n; ++i) buffer[i] = Lane{} + i;
    for (auto _ : state) benchmark::DoNotOptimize(inlay::cli::sum_lanes(buffer.data(), n));
    state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(n * inlay::cli::kLaneBytes));
}

void bm_quantize_activations(benchmark::State& state, DType act) {
    const int64_t n = state.range(0);
    const auto x = random_floats(static_cast<size_t>(n), 3);
    std::vector<uint32_t> out((*inlay::row_bytes(act, n) + 3) / 4);
    for (auto _ : state) {
        inlay::quant::quantize_activations(act, x.data(), out.data(), n);
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(state.iterations() * n);
    state.SetBytesProcessed(state.iterations() * n * static_cast<int64_t>(sizeof(float)));
}

const DType kWeightTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_1,
                              DType::Q5_0, DType::Q5_1, DType::Q1_0, DType::Q4_K, DType::Q5_K, DType::Q6_K};

int register_all() {
    for (DType t : kWeightTypes) {
        const std::string name(inlay::dtype_name(t));
        benchmark::RegisterBenchmark(("vec_dot_rows/" + name).c_str(), bm_vec_dot_rows, t, false)
            ->Args({576, 1536})
            ->Args({4096, 4096})
            ->Args({151936, 1024})
            ->Args({16384, 4096})  // long rows from DRAM
            ->Unit(benchmark::kMicrosecond);
        benchmark::RegisterBenchmark(("vec_dot_rows_reference/" + name).c_str(), bm_vec_dot_rows, t, true)
            ->Args({576, 1536})
            ->Unit(benchmark::kMicrosecond);
    }
    for (DType t : kWeightTypes) {
        auto* bm =
            benchmark::RegisterBenchmark(("vec_dot_tile/" + std::string(inlay::dtype_name(t))).c_str(), bm_vec_dot_tile, t)
                ->Args({576, 1536, 1})
                ->Args({576, 1536, 2})  // a decode token and one proposal, or two sequences
                ->Args({576, 1536, 4})
                ->Args({576, 1536, 8})
                ->Args({576, 1536, 16})
                ->Args({576, 1536, 128})
                ->Args({3072, 1024, 128})
                ->Args({768, 288, 128})  // stories15M's short rows: the tiles' setup and reductions weigh more
                ->Args({151936, 1024, 1})  // from DRAM: an output layer, one token ...
                ->Args({151936, 1024, 2})  // ... and verification passes of 1 and 4 proposals
                ->Args({151936, 1024, 5})
                ->Args({151936, 1024, 8})
                ->Args({1024, 1024, 5})  // the same tiles in cache
                ->Args({1024, 1024, 8})
                ->Args({151936, 1024, 16})  // the row-per-lane tiles from DRAM ...
                ->Args({1024, 1024, 16})    // ... and in cache
                ->Unit(benchmark::kMicrosecond);
        if (576 % inlay::dtype_traits(t).block_elems == 0)  // rows of 576 (SmolLM2's width) fit the blocks
            bm->Args({1536, 576, 128})->Args({1536, 576, 512});
    }
    for (DType t : {DType::Q8_0, DType::Q4_0, DType::Q5_0, DType::Q1_0, DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
        auto* bm = benchmark::RegisterBenchmark(("vec_dot_interleaved/" + std::string(inlay::dtype_name(t))).c_str(),
                                                bm_vec_dot_interleaved, t);
        if (t == DType::Q1_0) {  // rows of whole blocks of 128
            bm->Args({576, 1536, 1})
                ->Args({576, 1536, 8})
                ->Args({576, 1536, 128})
                ->Args({3072, 1024, 128})
                ->Args({768, 288, 128})  // stories15M's short rows: the tiles' setup and reductions weigh more
                ->Args({151936, 1024, 1})
                ->Args({151936, 1024, 5})
                ->Args({16384, 4096, 1})
                ->Unit(benchmark::kMicrosecond);
            continue;
        }
        if (inlay::dtype_traits(t).block_elems == 256) {  // K-quant rows: Qwen3-0.6B's shapes, SmolLM2's ffn_down
            bm->Args({576, 1536, 1})
                ->Args({576, 1536, 128})
                ->Args({576, 1536, 512})
                ->Args({1024, 1024, 1})
                ->Args({3072, 1024, 1})
                ->Args({1024, 3072, 1})
                ->Args({1024, 1024, 8})
                ->Args({3072, 1024, 16})
                ->Args({3072, 1024, 128})
                ->Args({768, 288, 128})  // stories15M's short rows: the tiles' setup and reductions weigh more
                ->Args({151936, 1024, 1})
                ->Args({151936, 1024, 5})
                ->Args({151936, 1024, 16})
                ->Unit(benchmark::kMicrosecond);
            continue;
        }
        bm->Args({576, 1536, 1})
            ->Args({576, 1536, 2})
            ->Args({576, 1536, 4})
            ->Args({576, 1536, 8})
            ->Args({576, 1536, 16})
            ->Args({576, 1536, 128})
            ->Args({151936, 1024, 1})
            ->Args({151936, 1024, 2})
            ->Args({151936, 1024, 5})
            ->Args({151936, 1024, 8})
            ->Args({151936, 1024, 16})
            ->Args({16384, 4096, 1})
            ->Args({1536, 576, 128})
            ->Args({1536, 576, 512})
            ->Unit(benchmark::kMicrosecond);
    }
    // Thread scaling from DRAM: 512 MiB of rows of 1024 (the width of Qwen3-0.6B's
    // layers) split over 1 and 2 threads, beside a plain read of as many bytes.
    for (DType t : {DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q5_0, DType::Q1_0, DType::Q4_K,
                    DType::Q5_K, DType::Q6_K}) {
        benchmark::RegisterBenchmark(("decode_threads/" + std::string(inlay::dtype_name(t))).c_str(), bm_decode_threads,
                                     t)
            ->Args({int64_t{512} << 20, 1024})
            ->Threads(1)
            ->Threads(2)
            ->UseRealTime()
            ->Unit(benchmark::kMicrosecond);
    }
    benchmark::RegisterBenchmark("read_stream", bm_read_stream)
        ->Arg(int64_t{512} << 20)
        ->Threads(1)
        ->Threads(2)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
    for (DType t : {DType::Q8_0, DType::Q8_1, DType::Q8_K, DType::F16, DType::BF16}) {
        benchmark::RegisterBenchmark(("quantize_activations/" + std::string(inlay::dtype_name(t))).c_str(),
                                     bm_quantize_activations, t)
            ->Arg(1536)
            ->Arg(4096);
    }
    return 0;
}

const int registered = register_all();

}  // namespace

BENCHMARK_MAIN();
