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
#include <algorithm>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "quant/vec_dot.h"

namespace inlay {
namespace {
constexpr size_t kRowBlock = 16;  // rows computed together; also the thread split granularity
constexpr size_t kDecodeChunksPerThread = 4;  // one-token products: contiguous runs per thread
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
    if (n_tokens == 1) {
        // One token streams the matrix from DRAM once: each chunk is a long contiguous run
        // of row blocks, so every thread reads (and prefetches) ahead along its own rows
        // rather than along blocks that the other threads take.
        const size_t n_chunks = std::min(n_blocks, static_cast<size_t>(pool_.size()) * kDecodeChunksPerThread);
        pool_.run(n_chunks, [&](size_t c) {
            const size_t rb = n_blocks * c / n_chunks * kRowBlock;
            const size_t re = std::min(static_cast<size_t>(n_out), n_blocks * (c + 1) / n_chunks * kRowBlock);
            quant::vec_dot_tile(w.type, w.n_cols, static_cast<int64_t>(re - rb), 1, y.ptr() + rb,
                                static_cast<size_t>(n_out), w.row(static_cast<int64_t>(rb)), w.row_stride, xq,
                                x_stride, &scratch.pack);
        });
        return;
    }
    // One row block per chunk: threads claim blocks one at a time, so neither waits
    // long for the other at the end (with a few large chunks per thread the last one
    // left a thread idle for a noticeable part of every matmul).
    pool_.run(n_blocks, [&](size_t block) {
        const size_t rb = block * kRowBlock;
        const size_t nr = std::min(kRowBlock, static_cast<size_t>(n_out) - rb);
        quant::vec_dot_tile(w.type, w.n_cols, static_cast<int64_t>(nr), n_tokens, y.ptr() + rb,
                            static_cast<size_t>(n_out), w.row(static_cast<int64_t>(rb)), w.row_stride, xq, x_stride,
                            &scratch.pack);
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
    if (scratch.up.size() < static_cast<size_t>(n_tokens * up.n_rows))
        fail(INLAY_ERR_INTERNAL, "matmul_swiglu: scratch too small for {} tokens of {}", n_tokens, up.n_rows);
    // The activations are converted once for both products when the two weights share
    // a partner format (they do in every file llama.cpp or inlay writes).
    size_t stride = 0;
    const std::byte* xq = convert_activations(gate, x, n_tokens, scratch, &stride);
    matmul_converted(gate, xq, stride, n_tokens, out, scratch);
    if (quant::vec_dot_type(up.type) != quant::vec_dot_type(gate.type)) xq = convert_activations(up, x, n_tokens, scratch, &stride);
    matmul_converted(up, xq, stride, n_tokens, scratch.up, scratch);
    silu_mul(out, scratch.up, n_tokens * up.n_rows);
}

}  // namespace inlay
