// CpuBackend::matmul: y[t] = W x[t] for any weight type.
//
// Activations are first converted once to the partner format of the weight type
// (Q8_0, Q8_K, F16, ...; see quant::vec_dot_type), exactly as llama.cpp does, so the
// inner loops are integer or half-precision dot products over the stored blocks and
// a weight matrix is never dequantized. Threads split the output rows; each thread
// walks its rows in small blocks and runs every token over a block while it is in
// cache (quant::vec_dot_tile: each weight block is unpacked once for several tokens),
// so a batch reads and unpacks each weight once. Every token's result is bitwise what
// it would be alone, so batching never changes a sequence's output.
//
// The projections that share an input (q, k and v; gate and up) convert it once and
// run as one parallel region: in decode a region lasts only microseconds per product,
// and each region ends with the threads waiting for the slowest, so one region instead
// of three (or two plus the SiLU pass) takes that wait out of every layer.
#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "quant/interleaved_rows.h"
#include "quant/vec_dot.h"

namespace inlay {
namespace {
constexpr size_t kRowBlock = 16;  // rows computed together; also the thread split granularity
// Streamed products: contiguous runs per thread. Two, not four: longer runs keep each
// thread's prefetch walk going, and the end of a matmul still balances on a run of a
// quarter of the rows. Zen 5, 2 threads, decode, 5 alternations against four: SmolLM2
// shape Q4_K_M +10-20%, Q8_0 +5-12%, F16 0-17%, Qwen3 shape Q8_0 and Q4_K_M 0-14% (more
// where the host gave its 80 GB/s mode), stories15M Q8_0 +20-40%; eight or sixteen runs
// were 10-40% slower.
constexpr size_t kDecodeChunksPerThread = 2;
// Products of up to quant::kStreamedTokens tokens (decoding a few sequences, verifying a
// few proposals) stream the matrix as one token does: each thread walks long runs of rows,
// and the tile kernels ask for the rows ahead of them, so a pass of a few tokens from DRAM
// costs little more than one. Measured on Zen 4 (bench_kernels 151936 x 1024, one thread,
// 2 tokens against 1, before the runs and the prefetches / after): Q8_0 2.5x / 1.1x, Q4_0
// 4.9x / 1.6x, Q6_K 6.9x / 1.1x. Larger batches are bound by arithmetic and take row blocks
// one at a time.
using quant::kStreamedTokens;

// Rows [begin, end) of chunk c when n_rows rows (n_blocks row blocks) are cut into n_chunks
// contiguous runs of whole row blocks; empty for a chunk that gets no block.
struct RowRange {
    size_t begin, end;
};
RowRange chunk_rows(size_t n_rows, size_t n_blocks, size_t c, size_t n_chunks) {
    return {n_blocks * c / n_chunks * kRowBlock, std::min(n_rows, n_blocks * (c + 1) / n_chunks * kRowBlock)};
}

// Where row rb (the start of a row block) begins in the layout the products read.
const std::byte* product_data(const CpuBackend::Weight& w, size_t rb) {
    static_assert(kRowBlock == 16);
    if (w.interleaved) return w.interleaved + rb / kRowBlock * quant::interleaved_group_bytes(w.type, w.n_cols);
    return w.row(static_cast<int64_t>(rb));
}

// Rows [rb, rb + nr) of w for n_tokens tokens into y (rows y_stride floats apart): the
// interleaved records where w has them, else the stored rows. Every chunk starts on a row
// block, the layout's group of sixteen, and an interleaved matrix has whole groups, so
// its chunks do too (vec_dot_interleaved refuses any other row count).
void product_rows(const CpuBackend::Weight& w, size_t rb, size_t nr, int64_t n_tokens, float* y, size_t y_stride,
                  const std::byte* xq, size_t x_stride, const quant::TilePack* pack) {
    if (w.interleaved) {
        quant::vec_dot_interleaved(w.type, w.n_cols, static_cast<int64_t>(nr), n_tokens, y, y_stride,
                                   product_data(w, rb), xq, x_stride, pack);
        return;
    }
    quant::vec_dot_tile(w.type, w.n_cols, static_cast<int64_t>(nr), n_tokens, y, y_stride, w.row(static_cast<int64_t>(rb)),
                        w.row_stride, xq, x_stride, pack);
}

// What a waiting thread reads ahead of a decode product (ThreadPool::set_idle_reads),
// per thread: a budget well inside any L2, so the rows read early are still there when
// the region starts. Thread t of the pool usually claims chunk t first (the caller as
// it publishes the region, each worker as it sees it), so it reads that chunk's first
// rows. Zen 5, 2 threads, decode steps with and without alternating in one process:
// SmolLM2 shape Q4_K_M 3.5% faster, Q8_0 1-3%, Qwen3-0.6B shape Q4_K_M 1.3% (in the
// host's slow bandwidth mode, where one core alone nearly saturates memory).
constexpr size_t kIdleReadBytes = 128 * 1024;

ThreadPool::IdleStream rows_stream(const CpuBackend::Weight& w, RowRange rows, size_t budget) {
    if (rows.begin >= rows.end) return {};
    const size_t n = rows.end - rows.begin;
    const size_t bytes = w.interleaved
                             ? (n + kRowBlock - 1) / kRowBlock * quant::interleaved_group_bytes(w.type, w.n_cols)
                             : n * w.row_stride;
    return {product_data(w, rows.begin), std::min(bytes, budget)};
}

// Every thread's idle reads for a decode region of n_chunks chunks: thread t usually
// claims chunk t first, and chunk_streams(t, s) writes that chunk's first rows to
// s[0 .. ThreadPool::kIdleStreams).
template <class ChunkStreams>
CpuBackend::NextReads::Streams first_rows(const ThreadPool& pool, size_t n_chunks, ChunkStreams&& chunk_streams) {
    CpuBackend::NextReads::Streams streams{};
    const size_t threads =
        std::min({static_cast<size_t>(pool.size()), n_chunks, static_cast<size_t>(CpuBackend::NextReads::kMaxThreads)});
    for (size_t t = 0; t < threads; ++t) chunk_streams(t, &streams[t * ThreadPool::kIdleStreams]);
    return streams;
}
}  // namespace

void CpuBackend::NextReads::store(const Streams& streams, size_t n) {
    for (size_t i = 0; i < std::min(n, kMaxStreams); ++i) {
        begin_[i].store(streams[i].begin, std::memory_order_relaxed);
        bytes_[i].store(streams[i].bytes, std::memory_order_relaxed);
    }
}

CpuBackend::NextReads::Streams CpuBackend::NextReads::load(size_t n) const {
    Streams streams{};
    for (size_t i = 0; i < std::min(n, kMaxStreams); ++i)
        streams[i] = {begin_[i].load(std::memory_order_relaxed), bytes_[i].load(std::memory_order_relaxed)};
    return streams;
}

void CpuBackend::begin_streamed_region(const Weight& key, const NextReads::Streams& starts) {
    if (pool_.size() == 1 || !key.next_reads) return;
    // Only this pool's threads' streams: every decode region passes here.
    const size_t threads = std::min<size_t>(static_cast<size_t>(pool_.size()), NextReads::kMaxThreads);
    const size_t n = ThreadPool::kIdleStreams * threads;
    {
        std::lock_guard lock(last_streamed_mutex_);
        if (last_streamed_) last_streamed_->store(starts, n);
        last_streamed_ = key.next_reads;
    }
    const NextReads::Streams next = key.next_reads->load(n);
    pool_.set_idle_reads(std::span(next).first(n));
}

const std::byte* CpuBackend::convert_activations(const Weight& w, const Buffer& x, int64_t n_tokens, Scratch& scratch,
                                                 size_t* stride) {
    const int64_t n_in = w.n_cols;
    if (n_tokens < 0 || x.size() < static_cast<size_t>(n_tokens * n_in))
        fail(INLAY_ERR_INTERNAL, "matmul: input too small for {} tokens of {}", n_tokens, n_in);
    const DType act_type = quant::vec_dot_type(w.type);
    const auto act_row = row_bytes(act_type, n_in);
    if (!act_row) fail(INLAY_ERR_SHAPE_MISMATCH, "matmul: rows of {} do not fit {} blocks", n_in, dtype_name(act_type));
    *stride = *act_row;
    if (act_type == DType::F32) return reinterpret_cast<const std::byte*>(x.ptr());
    if (scratch.converted.size() < *act_row * static_cast<size_t>(n_tokens))
        fail(INLAY_ERR_INTERNAL, "matmul: scratch of {} bytes for {} tokens of {} {} activations",
             scratch.converted.size(), n_tokens, n_in, dtype_name(act_type));
    auto convert = [&](size_t b, size_t e) {
        for (size_t t = b; t < e; ++t)
            quant::quantize_activations(act_type, x.ptr() + t * static_cast<size_t>(n_in),
                                        scratch.converted.data() + t * *act_row, n_in);
    };
    if (n_tokens == 1) convert(0, 1);
    else pool_.parallel_for(static_cast<size_t>(n_tokens), convert);
    return scratch.converted.data();
}

void CpuBackend::matmul_converted(const Weight& w, const std::byte* xq, size_t x_stride, int64_t n_tokens, Buffer& y,
                                  Scratch& scratch) {
    const int64_t n_out = w.n_rows;
    if (y.size() < static_cast<size_t>(n_tokens * n_out))
        fail(INLAY_ERR_INTERNAL, "matmul: output too small for {} tokens of {}", n_tokens, n_out);
    if (n_tokens == 0) return;
    // Where a matrix unit serves this type, the activations are regrouped for it once here.
    scratch.pack.assign(w.type, w.n_cols, n_tokens, xq, x_stride);
    const size_t n_blocks = (static_cast<size_t>(n_out) + kRowBlock - 1) / kRowBlock;
    if (n_tokens <= kStreamedTokens) {
        // A few tokens stream the matrix from DRAM once: each chunk is a long contiguous run
        // of row blocks, so every thread reads (and prefetches) ahead along its own rows
        // rather than along blocks that the other threads take.
        const size_t n_chunks = std::min(n_blocks, static_cast<size_t>(pool_.size()) * kDecodeChunksPerThread);
        begin_streamed_region(w, first_rows(pool_, n_chunks, [&](size_t t, ThreadPool::IdleStream* s) {
                                  s[0] = rows_stream(w, chunk_rows(static_cast<size_t>(n_out), n_blocks, t, n_chunks),
                                                     kIdleReadBytes);
                              }));
        pool_.run(n_chunks, [&](size_t c) {
            const auto [rb, re] = chunk_rows(static_cast<size_t>(n_out), n_blocks, c, n_chunks);
            product_rows(w, rb, re - rb, n_tokens, y.ptr() + rb, static_cast<size_t>(n_out), xq, x_stride,
                         &scratch.pack);
        });
        return;
    }
    // One row block per chunk: threads claim blocks one at a time, so neither waits
    // long for the other at the end (with a few large chunks per thread the last one
    // left a thread idle for a noticeable part of every matmul).
    pool_.run(n_blocks, [&](size_t block) {
        const size_t rb = block * kRowBlock;
        const size_t nr = std::min(kRowBlock, static_cast<size_t>(n_out) - rb);
        product_rows(w, rb, nr, n_tokens, y.ptr() + rb, static_cast<size_t>(n_out), xq, x_stride, &scratch.pack);
    });
}

void CpuBackend::matmul_products(std::span<const Product> products, const std::byte* xq, size_t x_stride,
                                 int64_t n_tokens, Scratch& scratch) {
    constexpr size_t kMaxProducts = 3;
    if (products.size() > kMaxProducts) fail(INLAY_ERR_INTERNAL, "matmul: {} fused products", products.size());
    bool one_type = true;
    for (const Product& p : products) {
        if (p.y->size() < static_cast<size_t>(n_tokens * p.w->n_rows) || p.w->n_cols != products[0].w->n_cols)
            fail(INLAY_ERR_INTERNAL, "matmul: a fused product of {}x{} does not fit its input or output", p.w->n_rows,
                 p.w->n_cols);
        one_type = one_type && p.w->type == products[0].w->type;
    }
    if (n_tokens == 0 || products.empty()) return;
    if (n_tokens > 1 && !one_type) {  // each weight type needs its own activation packing
        for (const Product& p : products) matmul_converted(*p.w, xq, x_stride, n_tokens, *p.y, scratch);
        return;
    }
    // A single token has no matrix-unit packing; a batch packs once for every product.
    const quant::TilePack* pack = nullptr;
    if (n_tokens > 1) {
        scratch.pack.assign(products[0].w->type, products[0].w->n_cols, n_tokens, xq, x_stride);
        pack = &scratch.pack;
    }
    // Row blocks of every product, numbered one after the other.
    std::array<size_t, kMaxProducts + 1> first_block{};
    for (size_t i = 0; i < products.size(); ++i)
        first_block[i + 1] = first_block[i] + (static_cast<size_t>(products[i].w->n_rows) + kRowBlock - 1) / kRowBlock;
    auto product_of = [&](size_t index, const std::array<size_t, kMaxProducts + 1>& first) {
        size_t i = 0;
        while (index >= first[i + 1]) ++i;
        return i;
    };
    if (n_tokens <= kStreamedTokens) {
        // Contiguous runs as in matmul_converted, each product's share of the chunks in
        // proportion to its bytes (at least one).
        size_t total_bytes = 0;
        for (const Product& p : products) total_bytes += static_cast<size_t>(p.w->n_rows) * p.w->row_stride;
        const size_t budget = static_cast<size_t>(pool_.size()) * kDecodeChunksPerThread;
        std::array<size_t, kMaxProducts + 1> first_chunk{};
        for (size_t i = 0; i < products.size(); ++i) {
            const size_t blocks = first_block[i + 1] - first_block[i];
            const size_t bytes = static_cast<size_t>(products[i].w->n_rows) * products[i].w->row_stride;
            const size_t share = total_bytes ? (budget * bytes + total_bytes / 2) / total_bytes : 1;
            first_chunk[i + 1] = first_chunk[i] + std::clamp<size_t>(share, 1, std::max<size_t>(blocks, 1));
        }
        auto rows_of_chunk = [&](size_t c) {
            const size_t i = product_of(c, first_chunk);
            const size_t n_blocks = first_block[i + 1] - first_block[i];
            const size_t n_chunks = first_chunk[i + 1] - first_chunk[i];
            return std::pair{i, chunk_rows(static_cast<size_t>(products[i].w->n_rows), n_blocks, c - first_chunk[i],
                                           n_chunks)};
        };
        begin_streamed_region(*products[0].w,
                              first_rows(pool_, first_chunk[products.size()], [&](size_t t, ThreadPool::IdleStream* s) {
                                  const auto [i, rows] = rows_of_chunk(t);
                                  s[0] = rows_stream(*products[i].w, rows, kIdleReadBytes);
                              }));
        pool_.run(first_chunk[products.size()], [&](size_t c) {
            const auto [i, rows] = rows_of_chunk(c);
            const Weight& w = *products[i].w;
            const auto [rb, re] = rows;
            if (rb < re)
                product_rows(w, rb, re - rb, n_tokens, products[i].y->ptr() + rb, static_cast<size_t>(w.n_rows), xq,
                             x_stride, pack);
        });
        return;
    }
    pool_.run(first_block[products.size()], [&](size_t block) {
        const size_t i = product_of(block, first_block);
        const Weight& w = *products[i].w;
        const size_t rb = (block - first_block[i]) * kRowBlock;
        const size_t nr = std::min(kRowBlock, static_cast<size_t>(w.n_rows) - rb);
        product_rows(w, rb, nr, n_tokens, products[i].y->ptr() + rb, static_cast<size_t>(w.n_rows), xq, x_stride, pack);
    });
}

void CpuBackend::matmul(const Weight& w, const Buffer& x, int64_t n_tokens, Buffer& y, Scratch& scratch) {
    size_t stride = 0;
    const std::byte* xq = convert_activations(w, x, n_tokens, scratch, &stride);
    matmul_converted(w, xq, stride, n_tokens, y, scratch);
}

void CpuBackend::matmul_swiglu(const Weight& gate, const Weight& up, const Buffer& x, int64_t n_tokens, Buffer& out,
                               Scratch& scratch) {
    if (gate.n_cols != up.n_cols || gate.n_rows != up.n_rows)
        fail(INLAY_ERR_INTERNAL, "matmul_swiglu: gate {}x{} and up {}x{} differ", gate.n_rows, gate.n_cols, up.n_rows,
             up.n_cols);
    const int64_t n_ff = up.n_rows;
    if (scratch.up.size() < static_cast<size_t>(n_tokens * n_ff))
        fail(INLAY_ERR_INTERNAL, "matmul_swiglu: scratch too small for {} tokens of {}", n_tokens, n_ff);
    if (out.size() < static_cast<size_t>(n_tokens * n_ff))
        fail(INLAY_ERR_INTERNAL, "matmul_swiglu: output too small for {} tokens of {}", n_tokens, n_ff);
    size_t stride = 0;
    const std::byte* xq = convert_activations(gate, x, n_tokens, scratch, &stride);
    if (quant::vec_dot_type(up.type) != quant::vec_dot_type(gate.type) || (n_tokens > 1 && up.type != gate.type)) {
        // No shared conversion (or packing): the products one after the other, then the gating.
        matmul_converted(gate, xq, stride, n_tokens, out, scratch);
        if (quant::vec_dot_type(up.type) != quant::vec_dot_type(gate.type))
            xq = convert_activations(up, x, n_tokens, scratch, &stride);
        matmul_converted(up, xq, stride, n_tokens, scratch.up, scratch);
        silu_mul(out, scratch.up, n_tokens * n_ff);
        return;
    }
    if (n_tokens == 0) return;
    // One region: each chunk computes the same rows of both products and gates them.
    const size_t rows = static_cast<size_t>(n_ff);
    const size_t n_blocks = (rows + kRowBlock - 1) / kRowBlock;
    const size_t n_chunks = n_tokens <= kStreamedTokens
                                ? std::min(n_blocks, static_cast<size_t>(pool_.size()) * kDecodeChunksPerThread)
                                : n_blocks;
    const quant::TilePack* pack = nullptr;
    if (n_tokens > 1) {
        scratch.pack.assign(gate.type, gate.n_cols, n_tokens, xq, stride);
        pack = &scratch.pack;
    }
    if (n_tokens <= kStreamedTokens)
        begin_streamed_region(gate, first_rows(pool_, n_chunks, [&](size_t t, ThreadPool::IdleStream* s) {
                                  const RowRange r = chunk_rows(rows, n_blocks, t, n_chunks);
                                  s[0] = rows_stream(gate, r, kIdleReadBytes / 2);
                                  s[1] = rows_stream(up, r, kIdleReadBytes / 2);
                              }));
    pool_.run(n_chunks, [&](size_t c) {
        const auto [rb, re] = chunk_rows(rows, n_blocks, c, n_chunks);
        if (rb >= re) return;
        product_rows(gate, rb, re - rb, n_tokens, out.ptr() + rb, rows, xq, stride, pack);
        product_rows(up, rb, re - rb, n_tokens, scratch.up.ptr() + rb, rows, xq, stride, pack);
        for (int64_t t = 0; t < n_tokens; ++t)
            silu_mul_range(out.ptr() + static_cast<size_t>(t) * rows + rb,
                           scratch.up.ptr() + static_cast<size_t>(t) * rows + rb, re - rb);
    });
}

void CpuBackend::matmul_qkv(const Weight& wq, const Weight& wk, const Weight& wv, const Buffer& x, int64_t n_tokens,
                            Buffer& q, Buffer& k, Buffer& v, Scratch& scratch) {
    const DType act = quant::vec_dot_type(wq.type);
    if (quant::vec_dot_type(wk.type) != act || quant::vec_dot_type(wv.type) != act) {
        matmul(wq, x, n_tokens, q, scratch);
        matmul(wk, x, n_tokens, k, scratch);
        matmul(wv, x, n_tokens, v, scratch);
        return;
    }
    size_t stride = 0;
    const std::byte* xq = convert_activations(wq, x, n_tokens, scratch, &stride);
    const std::array<Product, 3> products{{{&wq, &q}, {&wk, &k}, {&wv, &v}}};
    matmul_products(products, xq, stride, n_tokens, scratch);
}

}  // namespace inlay
