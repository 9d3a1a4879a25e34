// The kernels' host API without a GPU: block geometry, which attention shapes are built
// in, and the launchers' argument checks (they return before touching the device, so
// these run on any machine).
#include <catch2/catch.hpp>
#include <cstdint>

#include "inlay_cuda_kernels.h"

using namespace inlay::cuda;

namespace {

// Stand-ins for device pointers: the checks below fail before anything is dereferenced.
alignas(16) float fake_floats[64];
alignas(16) int32_t fake_ints[64];

TokenBatch fake_batch(int32_t n_tokens) {
    TokenBatch b;
    b.positions = fake_ints;
    b.seq_of_token = fake_ints;
    b.kv_indptr = fake_ints;
    b.kv_indices = fake_ints;
    b.kv_len = fake_ints;
    b.n_tokens = n_tokens;
    b.n_seqs = 1;
    return b;
}

PagedKvLayer fake_kv(int32_t head_dim, int32_t n_kv_heads, int32_t block_size, KvType type) {
    PagedKvLayer kv;
    kv.k = fake_floats;
    kv.v = fake_floats + 16;
    kv.type = type;
    kv.n_kv_heads = n_kv_heads;
    kv.head_dim = head_dim;
    kv.block_size = block_size;
    return kv;
}

}  // namespace

TEST_CASE("weight formats have GGUF's block geometry", "[kernels][api]") {
    struct Row {
        WeightFormat format;
        int64_t elems, bytes;
    };
    // shared/docs/formats.md: elements and bytes per block.
    const Row rows[] = {{WeightFormat::f32, 1, 4},      {WeightFormat::f16, 1, 2},      {WeightFormat::bf16, 1, 2},
                        {WeightFormat::q8_0, 32, 34},   {WeightFormat::q4_0, 32, 18},   {WeightFormat::q4_k, 256, 144},
                        {WeightFormat::q5_k, 256, 176}, {WeightFormat::q6_k, 256, 210}, {WeightFormat::q1_0, 128, 18}};
    for (const Row& r : rows) {
        CAPTURE(static_cast<int>(r.format));
        CHECK(weight_block_elems(r.format) == r.elems);
        CHECK(weight_block_bytes(r.format) == r.bytes);
        CHECK(weight_row_bytes(r.format, 4096) == static_cast<size_t>(4096 / r.elems * r.bytes));
        if (r.elems > 1) CHECK(weight_row_bytes(r.format, r.elems + 1) == 0);
    }
}

TEST_CASE("attention kernels built by nvcc", "[kernels][api]") {
    for (int32_t hd : {64, 128})
        for (int32_t g : {1, 2, 4, 8})
            for (KvType t : {KvType::f16, KvType::f32}) CHECK(attention_has_builtin(hd, g, 16, t));
    CHECK_FALSE(attention_has_builtin(96, 1, 16, KvType::f16));
    CHECK_FALSE(attention_has_builtin(128, 3, 16, KvType::f16));
    CHECK_FALSE(attention_has_builtin(128, 8, 8, KvType::f32));
    CHECK_FALSE(attention_has_builtin(256, 8, 16, KvType::f32));
    CHECK_FALSE(attention_has_builtin(16, 1, 16, KvType::f16));
}

TEST_CASE("attention shapes served without a kernel argument", "[kernels][api]") {
    // Every built-in shape.
    for (int32_t hd : {64, 128})
        for (int32_t g : {1, 2, 4, 8})
            for (KvType t : {KvType::f16, KvType::f32}) CHECK(attention_supported(hd, g, 16, t));
    // The generic kernel: head_dim even in [2, 256], group 1..32, any block_size >= 1.
    for (int32_t hd = 2; hd <= 256; hd += 2)
        for (int32_t g : {1, 2, 3, 5, 7, 8, 16, 31, 32})
            for (int32_t bs : {1, 3, 4, 16, 32, 48, 64, 1000})
                for (KvType t : {KvType::f16, KvType::f32}) {
                    CAPTURE(hd, g, bs, static_cast<int>(t));
                    CHECK(attention_supported(hd, g, bs, t));
                }
    // The shapes of the test models.
    for (int32_t hd : {8, 16, 32, 48})
        for (int32_t g = 1; g <= 8; ++g)
            for (int32_t bs = 1; bs <= 64; ++bs) CHECK(attention_supported(hd, g, bs, KvType::f16));
    // Outside: odd or out-of-range head_dim, group, block size, an unknown KV type.
    for (int32_t hd : {-2, 0, 1, 3, 63, 97, 255, 257, 258, 512}) {
        CAPTURE(hd);
        CHECK_FALSE(attention_supported(hd, 1, 16, KvType::f16));
        CHECK_FALSE(attention_supported(hd, 4, 16, KvType::f32));
    }
    for (int32_t g : {-1, 0, 33, 64}) {
        CAPTURE(g);
        CHECK_FALSE(attention_supported(64, g, 16, KvType::f16));
    }
    for (int32_t bs : {-16, -1, 0}) {
        CAPTURE(bs);
        CHECK_FALSE(attention_supported(64, 1, bs, KvType::f16));
    }
    CHECK_FALSE(attention_supported(64, 1, 16, static_cast<KvType>(7)));
}

TEST_CASE("launchers reject bad arguments before launching", "[kernels][api]") {
    float* f = fake_floats;
    const TokenBatch batch = fake_batch(4);

    SECTION("gemv") {
        CHECK(gemv(f, WeightFormat::q8_0, 4, 64, 68, f, 64, 9, f, 4, nullptr) == cudaErrorInvalidValue);  // 9 tokens
        CHECK(gemv(f, WeightFormat::q8_0, 4, 48, 68, f, 48, 1, f, 4, nullptr) == cudaErrorInvalidValue);  // 48 % 32
        CHECK(gemv(f, WeightFormat::q8_0, 4, 64, 67, f, 64, 1, f, 4, nullptr) ==
              cudaErrorInvalidValue);                                                                    // stride < row
        CHECK(gemv(f, WeightFormat::f32, 4, 16, 62, f, 16, 1, f, 4, nullptr) == cudaErrorInvalidValue);  // stride % 4
        CHECK(gemv(f, WeightFormat::f16, 4, 16, 32, f + 1, 16, 1, f, 4, nullptr) == cudaErrorInvalidValue);  // x align
        CHECK(gemv(f, WeightFormat::f16, 4, 16, 32, f, 18, 1, f, 4, nullptr) == cudaErrorInvalidValue);  // x_stride % 4
        CHECK(gemv(f, WeightFormat::f16, 4, 16, 32, f, 16, 1, f, 3, nullptr) == cudaErrorInvalidValue);  // y_stride
        CHECK(gemv(nullptr, WeightFormat::f16, 4, 16, 32, f, 16, 1, f, 4, nullptr) == cudaErrorInvalidValue);
        CHECK(gemv(f, WeightFormat::f16, 0, 16, 32, f, 16, 1, f, 4, nullptr) == cudaSuccess);  // nothing to do
        CHECK(gemv(f, WeightFormat::f16, 4, 16, 32, f, 16, 0, f, 4, nullptr) == cudaSuccess);
    }
    SECTION("embed_rows") {
        CHECK(embed_rows(f, WeightFormat::q4_k, 4, 100, 144, fake_ints, 2, f, 100, nullptr, nullptr) ==
              cudaErrorInvalidValue);  // 100 % 256
        CHECK(embed_rows(f, WeightFormat::q4_k, 0, 256, 144, fake_ints, 2, f, 256, nullptr, nullptr) ==
              cudaErrorInvalidValue);  // no rows to read
        CHECK(embed_rows(f, WeightFormat::q4_k, 4, 256, 144, fake_ints, 2, f, 255, nullptr, nullptr) ==
              cudaErrorInvalidValue);  // out_stride
        CHECK(embed_rows(f, WeightFormat::q4_k, 4, 256, 144, fake_ints, 0, f, 256, nullptr, nullptr) == cudaSuccess);
    }
    SECTION("argmax_rows") {
        CHECK(argmax_rows(nullptr, 2, 8, 8, fake_ints, nullptr) == cudaErrorInvalidValue);
        CHECK(argmax_rows(f, 2, 8, 8, nullptr, nullptr) == cudaErrorInvalidValue);
        CHECK(argmax_rows(f, 2, 8, 7, fake_ints, nullptr) == cudaErrorInvalidValue);  // stride < cols
        CHECK(argmax_rows(f, -1, 8, 8, fake_ints, nullptr) == cudaErrorInvalidValue);
        CHECK(argmax_rows(f, 0, 8, 8, fake_ints, nullptr) == cudaSuccess);  // nothing to do
    }
    SECTION("sample_rows") {
        const auto* params = reinterpret_cast<const SampleRowParams*>(fake_ints);
        const auto* pairs = reinterpret_cast<const PenaltyPair*>(fake_ints);
        CHECK(sample_rows(nullptr, 2, 8, 8, params, pairs, fake_ints, nullptr) == cudaErrorInvalidValue);
        CHECK(sample_rows(f, 2, 8, 8, nullptr, pairs, fake_ints, nullptr) == cudaErrorInvalidValue);
        CHECK(sample_rows(f, 2, 8, 8, params, pairs, nullptr, nullptr) == cudaErrorInvalidValue);
        CHECK(sample_rows(f, 2, 8, 7, params, pairs, fake_ints, nullptr) == cudaErrorInvalidValue);  // stride < cols
        CHECK(sample_rows(f, -1, 8, 8, params, pairs, fake_ints, nullptr) == cudaErrorInvalidValue);
        CHECK(sample_rows(f, 0, 8, 8, params, nullptr, fake_ints, nullptr) == cudaSuccess);  // nothing to do
    }
    SECTION("dequantize_rows_f16 and round_to_half") {
        CHECK(dequantize_rows_f16(f, WeightFormat::q4_k, 4, 100, 144, f, 100, nullptr) ==
              cudaErrorInvalidValue);  // 100 % 256
        CHECK(dequantize_rows_f16(f, WeightFormat::q4_k, 4, 256, 144, f, 255, nullptr) ==
              cudaErrorInvalidValue);  // out_stride
        CHECK(dequantize_rows_f16(f, WeightFormat::q4_k, 4, 256, 143, f, 256, nullptr) ==
              cudaErrorInvalidValue);  // stride < row
        CHECK(dequantize_rows_f16(f, WeightFormat::q4_k, 4, 256, 144, nullptr, 256, nullptr) == cudaErrorInvalidValue);
        CHECK(dequantize_rows_f16(f, WeightFormat::q4_k, 4, 256, 144, reinterpret_cast<char*>(f) + 1, 256, nullptr) ==
              cudaErrorInvalidValue);  // out alignment
        CHECK(dequantize_rows_f16(f, WeightFormat::q4_k, 0, 256, 144, f, 256, nullptr) ==
              cudaErrorInvalidValue);  // no rows
        CHECK(dequantize_rows_f16(f, WeightFormat::q4_k, 4, 0, 144, f, 0, nullptr) == cudaSuccess);  // nothing to do
        CHECK(round_to_half(f, -1, HalfType::f16, f, nullptr) == cudaErrorInvalidValue);
        CHECK(round_to_half(nullptr, 4, HalfType::f16, f, nullptr) == cudaErrorInvalidValue);
        CHECK(round_to_half(f, 4, HalfType::bf16, reinterpret_cast<char*>(f) + 1, nullptr) == cudaErrorInvalidValue);
        CHECK(round_to_half(f, 4, static_cast<HalfType>(5), f, nullptr) == cudaErrorInvalidValue);
        CHECK(round_to_half(f, 0, HalfType::f16, f, nullptr) == cudaSuccess);
    }
    SECTION("norms, swiglu, add and feed_tokens") {
        CHECK(rms_norm(f, 7, f, 2, 8, 1e-6f, f, 8, nullptr) == cudaErrorInvalidValue);  // x_stride < n_cols
        CHECK(add_rms_norm(f, 8, nullptr, 8, f, 2, 8, 1e-6f, f, 8, nullptr) == cudaErrorInvalidValue);
        CHECK(rms_norm(f, 8, f, 0, 8, 1e-6f, f, 8, nullptr) == cudaSuccess);
        CHECK(swiglu_fused(f, 15, 2, 8, f, 8, nullptr) == cudaErrorInvalidValue);  // in_stride < 2 n_ff
        CHECK(swiglu(f, f, -1, nullptr) == cudaErrorInvalidValue);
        CHECK(swiglu(f, f, 0, nullptr) == cudaSuccess);
        CHECK(add(f, f, -1, nullptr) == cudaErrorInvalidValue);
        CHECK(add(nullptr, f, 4, nullptr) == cudaErrorInvalidValue);
        CHECK(add(f, f, 0, nullptr) == cudaSuccess);
        CHECK(feed_tokens(fake_ints, fake_ints, -1, fake_ints, nullptr) == cudaErrorInvalidValue);
        CHECK(feed_tokens(fake_ints, nullptr, 4, fake_ints, nullptr) == cudaErrorInvalidValue);
        CHECK(feed_tokens(fake_ints, fake_ints, 4, nullptr, nullptr) == cudaErrorInvalidValue);
        CHECK(feed_tokens(nullptr, nullptr, 0, nullptr, nullptr) == cudaSuccess);
    }
    SECTION("qk_norm_rope_kv_append") {
        RopeConfig rope;
        rope.n_rot = 64;
        const PagedKvLayer kv = fake_kv(64, 2, 16, KvType::f16);
        rope.n_rot = 63;
        CHECK(qk_norm_rope_kv_append(f, 512, 8, f, 128, f, 128, nullptr, nullptr, 1e-6f, rope, kv, batch, nullptr,
                                     nullptr) == cudaErrorInvalidValue);
        rope.n_rot = 66;
        CHECK(qk_norm_rope_kv_append(f, 512, 8, f, 128, f, 128, nullptr, nullptr, 1e-6f, rope, kv, batch, nullptr,
                                     nullptr) == cudaErrorInvalidValue);
        rope.n_rot = 64;
        CHECK(qk_norm_rope_kv_append(f, 511, 8, f, 128, f, 128, nullptr, nullptr, 1e-6f, rope, kv, batch, nullptr,
                                     nullptr) == cudaErrorInvalidValue);  // q_stride
        const PagedKvLayer wide = fake_kv(258, 2, 16, KvType::f16);
        rope.n_rot = 258;
        CHECK(qk_norm_rope_kv_append(f, 8 * 258, 8, f, 2 * 258, f, 2 * 258, nullptr, nullptr, 1e-6f, rope, wide, batch,
                                     nullptr, nullptr) == cudaErrorInvalidValue);  // head_dim > 256
    }
    SECTION("attention") {
        const PagedKvLayer kv = fake_kv(128, 2, 16, KvType::f16);
        // Shapes neither built in nor served by the generic kernel (returned before launching).
        CHECK(attention_decode(f, 12 * 97, 12, fake_kv(97, 2, 16, KvType::f16), batch, 0.1f, f, 12 * 97, nullptr) ==
              cudaErrorNotSupported);  // odd head_dim
        CHECK(attention_decode(f, 4 * 258, 4, fake_kv(258, 2, 16, KvType::f32), batch, 0.1f, f, 4 * 258, nullptr) ==
              cudaErrorNotSupported);  // head_dim > 256
        CHECK(attention_decode(f, 66 * 128, 66, kv, batch, 0.1f, f, 66 * 128, nullptr) ==
              cudaErrorNotSupported);  // group 33
        CHECK(attention_prefill(f, 66 * 128, 66, kv, batch, 0.1f, f, 66 * 128, nullptr) == cudaErrorNotSupported);
        CHECK(attention_decode_split(f, 66 * 128, 66, kv, batch, 0.1f, AttentionSplitPlan{3, 128}, f, f, 66 * 128,
                                     nullptr) == cudaErrorNotSupported);
        PagedKvLayer bad_type = kv;
        bad_type.type = static_cast<KvType>(7);
        CHECK(attention_decode(f, 8 * 128, 8, bad_type, batch, 0.1f, f, 8 * 128, nullptr) == cudaErrorInvalidValue);
        // Generic shapes (head_dim 16, group 3, block 5) pass the checks: with no tokens
        // nothing is launched.
        const PagedKvLayer small = fake_kv(16, 2, 5, KvType::f16);
        CHECK(attention_decode(f, 6 * 16, 6, small, fake_batch(0), 0.1f, f, 6 * 16, nullptr) == cudaSuccess);
        CHECK(attention_prefill(f, 6 * 16, 6, small, fake_batch(0), 0.1f, f, 6 * 16, nullptr) == cudaSuccess);
        CHECK(attention_decode_split(f, 6 * 16, 6, small, fake_batch(0), 0.1f, AttentionSplitPlan{2, 10}, f, f, 6 * 16,
                                     nullptr) == cudaSuccess);
        CHECK(attention_decode(f, 6 * 16 - 1, 6, small, batch, 0.1f, f, 6 * 16, nullptr) == cudaErrorInvalidValue);
        CHECK(attention_decode(f, 7 * 128, 7, kv, batch, 0.1f, f, 7 * 128, nullptr) ==
              cudaErrorInvalidValue);  // 7 q heads over 2 kv heads
        CHECK(attention_decode(f, 8 * 128 - 1, 8, kv, batch, 0.1f, f, 8 * 128, nullptr) == cudaErrorInvalidValue);
        PagedKvLayer misaligned = kv;
        misaligned.k = fake_floats + 1;
        CHECK(attention_decode(f, 8 * 128, 8, misaligned, batch, 0.1f, f, 8 * 128, nullptr) == cudaErrorInvalidValue);
        CHECK(attention_decode(f, 8 * 128, 8, kv, fake_batch(0), 0.1f, f, 8 * 128, nullptr) == cudaSuccess);
        const AttentionSplitPlan bad{3, 100};  // not a multiple of the block size
        CHECK(attention_decode_split(f, 8 * 128, 8, kv, batch, 0.1f, bad, f, f, 8 * 128, nullptr) ==
              cudaErrorInvalidValue);
        const AttentionSplitPlan no_scratch{3, 128};
        CHECK(attention_decode_split(f, 8 * 128, 8, kv, batch, 0.1f, no_scratch, nullptr, f, 8 * 128, nullptr) ==
              cudaErrorInvalidValue);
    }
}
