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
}

void CpuBackend::matmul(const Weight& w, const Buffer& x, int64_t n_tokens, Buffer& y) {
    const int64_t n_in = w.n_cols;
    const int64_t n_out = w.n_rows;
    if (n_tokens < 0 || x.size() < static_cast<size_t>(n_tokens * n_in) || y.size() < static_cast<size_t>(n_tokens * n_out))
        fail(INLAY_ERR_INTERNAL, "matmul: buffers too small for {} tokens of {} -> {}", n_tokens, n_in, n_out);
    if (n_tokens == 0) return;

    const DType act_type = quant::vec_dot_type(w.type);
    const auto act_row = row_bytes(act_type, n_in);
    if (!act_row) fail(INLAY_ERR_SHAPE_MISMATCH, "matmul: rows of {} do not fit {} blocks", n_in, dtype_name(act_type));

    const std::byte* xq = reinterpret_cast<const std::byte*>(x.ptr());
    std::vector<std::byte> converted;
    if (act_type != DType::F32) {
        converted.resize(*act_row * static_cast<size_t>(n_tokens));
        auto convert = [&](size_t b, size_t e) {
            for (size_t t = b; t < e; ++t)
                quant::quantize_activations(act_type, x.ptr() + t * static_cast<size_t>(n_in),
                                            converted.data() + t * *act_row, n_in);
        };
        if (n_tokens == 1) convert(0, 1);
        else pool_.parallel_for(static_cast<size_t>(n_tokens), convert);
        xq = converted.data();
    }

    // Where a matrix unit serves this type, the activations are regrouped for it once here.
    const quant::TilePack pack(w.type, n_in, n_tokens, xq, *act_row);
    // One row block per chunk: threads claim blocks one at a time, so neither waits
    // long for the other at the end (with a few large chunks per thread the last one
    // left a thread idle for a noticeable part of every matmul).
    const size_t n_blocks = (static_cast<size_t>(n_out) + kRowBlock - 1) / kRowBlock;
    pool_.run(n_blocks, [&](size_t block) {
        const size_t rb = block * kRowBlock;
        const size_t nr = std::min(kRowBlock, static_cast<size_t>(n_out) - rb);
        quant::vec_dot_tile(w.type, n_in, static_cast<int64_t>(nr), n_tokens, y.ptr() + rb, static_cast<size_t>(n_out),
                            w.row(static_cast<int64_t>(rb)), w.row_stride, xq, *act_row, &pack);
    });
}

}  // namespace inlay
