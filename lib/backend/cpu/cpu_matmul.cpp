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
// Products of up to quant::kStreamedTokens tokens (decoding a few sequences, verifying a
// few proposals) stream the matrix as one token does: each thread walks long runs of rows,
// and the tile kernels ask for the rows ahead of them, so a pass of a few tokens from DRAM
// costs little more than one. Measured on Zen 4 (bench_kernels 151936 x 1024, one thread,
// 2 tokens against 1, before the runs and the prefetches / after): Q8_0 2.5x / 1.1x, Q4_0
// 4.9x / 1.6x, Q6_K 6.9x / 1.1x. Larger batches are bound by arithmetic and take row blocks
// one at a time.
using quant::kStreamedTokens;

// Rows [begin, end) of row blocks [block_begin, block_end) of a matrix of n_rows rows.
struct RowRange {
    size_t begin, end;
};
RowRange block_rows(size_t n_rows, size_t block_begin, size_t block_end) {
    return {block_begin * kRowBlock, std::min(n_rows, block_end * kRowBlock)};
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
// the region starts. Thread t of the pool starts on range t of ThreadPool::run_ranges,
// so it reads that range's first rows. Zen 5, 2 threads, decode steps with and without
// alternating in one process: SmolLM2 shape Q4_K_M 3.5% faster, Q8_0 1-3%, Qwen3-0.6B
// shape Q4_K_M 1.3% (in the host's slow bandwidth mode, where one core alone nearly
// saturates memory).
constexpr size_t kIdleReadBytes = 128 * 1024;

ThreadPool::IdleStream rows_stream(const CpuBackend::Weight& w, RowRange rows, size_t budget) {
    if (rows.begin >= rows.end) return {};
    const size_t n = rows.end - rows.begin;
    const size_t bytes = w.interleaved
                             ? (n + kRowBlock - 1) / kRowBlock * quant::interleaved_group_bytes(w.type, w.n_cols)
                             : n * w.row_stride;
    return {product_data(w, rows.begin), std::min(bytes, budget)};
}

// Every thread's idle reads for a decode region of n_blocks row blocks run as
// ThreadPool::run_ranges: range_streams(blocks, s) writes the first rows of the blocks
// thread t starts on (ThreadPool::range_share) to s[0 .. ThreadPool::kIdleStreams).
template <class RangeStreams>
CpuBackend::NextReads::Streams first_rows(const ThreadPool& pool, size_t n_blocks, RangeStreams&& range_streams) {
    CpuBackend::NextReads::Streams streams{};
    for (int t = 0; t < std::min(pool.size(), CpuBackend::NextReads::kMaxThreads); ++t) {
        const ThreadPool::Share share = pool.range_share(n_blocks, t);
        range_streams(RowRange{share.begin, share.end}, &streams[static_cast<size_t>(t) * ThreadPool::kIdleStreams]);
    }
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
        // A few tokens stream the matrix from DRAM once: each thread walks a long contiguous
        // run of row blocks (ThreadPool::run_ranges), reading and prefetching ahead along
        // its own rows rather than along blocks that the other threads take.
        const auto rows = static_cast<size_t>(n_out);
        begin_streamed_region(w, first_rows(pool_, n_blocks, [&](RowRange b, ThreadPool::IdleStream* s) {
                                  s[0] = rows_stream(w, block_rows(rows, b.begin, b.end), kIdleReadBytes);
                              }));
        pool_.run_ranges(n_blocks, 1, [&](size_t bb, size_t be) {
            const auto [rb, re] = block_rows(rows, bb, be);
            product_rows(w, rb, re - rb, n_tokens, y.ptr() + rb, rows, xq, x_stride, &scratch.pack);
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
        // Contiguous runs as in matmul_converted over the products' blocks one after the other.
        const size_t n_blocks = first_block[products.size()];
        // Product i's rows within blocks [bb, be) of all the products.
        auto rows_in = [&](size_t i, size_t bb, size_t be) {
            const size_t lo = std::max(bb, first_block[i]) - first_block[i];
            const size_t hi = std::min(be, first_block[i + 1]) - first_block[i];
            return block_rows(static_cast<size_t>(products[i].w->n_rows), lo, std::max(lo, hi));
        };
        begin_streamed_region(*products[0].w, first_rows(pool_, n_blocks, [&](RowRange b, ThreadPool::IdleStream* s) {
                                  if (b.begin >= b.end) return;
                                  const size_t i = product_of(b.begin, first_block);
                                  s[0] = rows_stream(*products[i].w, rows_in(i, b.begin, b.end), kIdleReadBytes);
                              }));
        pool_.run_ranges(n_blocks, 1, [&](size_t bb, size_t be) {
            for (size_t i = product_of(bb, first_block); i < products.size() && first_block[i] < be; ++i) {
                const Weight& w = *products[i].w;
                const auto [rb, re] = rows_in(i, bb, be);
                if (rb < re)
                    product_rows(w, rb, re - rb, n_tokens, products[i].y->ptr() + rb, static_cast<size_t>(w.n_rows),
                                 xq, x_stride, pack);
            }
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
    // One region: each piece computes the same rows of both products and gates them.
    const size_t rows = static_cast<size_t>(n_ff);
    const size_t n_blocks = (rows + kRowBlock - 1) / kRowBlock;
    const quant::TilePack* pack = nullptr;
    if (n_tokens > 1) {
        scratch.pack.assign(gate.type, gate.n_cols, n_tokens, xq, stride);
        pack = &scratch.pack;
    }
    auto gated_rows = [&](size_t bb, size_t be) {
        const auto [rb, re] = block_rows(rows, bb, be);
        if (rb >= re) return;
        product_rows(gate, rb, re - rb, n_tokens, out.ptr() + rb, rows, xq, stride, pack);
        product_rows(up, rb, re - rb, n_tokens, scratch.up.ptr() + rb, rows, xq, stride, pack);
        for (int64_t t = 0; t < n_tokens; ++t)
            silu_mul_range(out.ptr() + static_cast<size_t>(t) * rows + rb,
                           scratch.up.ptr() + static_cast<size_t>(t) * rows + rb, re - rb);
    };
    if (n_tokens <= kStreamedTokens) {
        begin_streamed_region(gate, first_rows(pool_, n_blocks, [&](RowRange b, ThreadPool::IdleStream* s) {
                                  const RowRange r = block_rows(rows, b.begin, b.end);
                                  s[0] = rows_stream(gate, r, kIdleReadBytes / 2);
                                  s[1] = rows_stream(up, r, kIdleReadBytes / 2);
                              }));
        pool_.run_ranges(n_blocks, 1, gated_rows);
        return;
    }
    pool_.run(n_blocks, [&](size_t block) { gated_rows(block, block + 1); });
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
