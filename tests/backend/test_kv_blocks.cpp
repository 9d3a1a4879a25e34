// Whole-block KV operations of every backend (copy-on-write copies, canonical-layout reads
// and writes for save/restore). The expected bytes follow the canonical layout's
// definition in concepts.h, [layer][k|v][kv_head][slot][head_dim], computed here from
// the K/V values that kv_store was given.
#include <algorithm>
#include <cstring>
#include <vector>

#include "backend_test_util.h"
#include "core/half.h"

using namespace inlay;
using namespace inlay::test;

namespace {

constexpr int64_t kLayers = 2, kHeads = 2, kDim = 8, kBlock = 4;

template <Backend B>
struct Filled {
    typename B::KvStorage kv;
    std::vector<int32_t> table;
    std::vector<std::vector<float>> k, v;  // per layer: [token][head * dim]
    int64_t n_tokens = 0;
};

// Stores n_tokens tokens of one sequence (blocks `table`) in every layer, through
// rope_kv_append without rotation (n_rot 0), so K is stored as given.
template <Backend B>
Filled<B> fill(B& b, DType dtype, int64_t n_blocks, std::vector<int32_t> table, int64_t n_tokens) {
    Filled<B> f{b.alloc_kv(KvGeometry{kLayers, kHeads, kDim, kBlock, dtype}, n_blocks), std::move(table), {}, {}, n_tokens};
    BatchBuilder bb;
    const int32_t s = bb.add_sequence(f.table, n_tokens);
    for (int64_t t = 0; t < n_tokens; ++t) bb.add_token(1, static_cast<int32_t>(t), s);
    auto batch = prepare(b, bb, f.kv);
    for (int64_t l = 0; l < kLayers; ++l) {
        f.k.push_back(random_floats(static_cast<size_t>(n_tokens * kHeads * kDim), static_cast<uint32_t>(10 + l)));
        f.v.push_back(random_floats(static_cast<size_t>(n_tokens * kHeads * kDim), static_cast<uint32_t>(20 + l)));
        auto q = b.alloc(n_tokens * kHeads * kDim);
        auto kb = upload(b, f.k.back()), vb = upload(b, f.v.back());
        b.rope_kv_append(q, kb, vb, nullptr, nullptr, 1e-6f, RopeParams{RopeStyle::normal, 0}, nullptr, f.kv, l, kHeads,
                         batch);
    }
    return f;
}

// The canonical image of table block `bi` as the layout definition says it must be.
template <Backend B>
std::vector<std::byte> expected_block(const Filled<B>& f, DType dtype, int64_t bi) {
    const size_t elem = dtype == DType::F16 ? 2 : 4;
    std::vector<std::byte> out(static_cast<size_t>(kLayers * 2 * kHeads * kBlock * kDim) * elem);
    for (int64_t l = 0; l < kLayers; ++l)
        for (int which = 0; which < 2; ++which)
            for (int64_t h = 0; h < kHeads; ++h)
                for (int64_t slot = 0; slot < kBlock; ++slot) {
                    const int64_t t = bi * kBlock + slot;
                    if (t >= f.n_tokens) continue;  // never written: zero
                    for (int64_t d = 0; d < kDim; ++d) {
                        const float x = (which == 0 ? f.k : f.v)[static_cast<size_t>(l)][static_cast<size_t>((t * kHeads + h) * kDim + d)];
                        const size_t index = static_cast<size_t>((((l * 2 + which) * kHeads + h) * kBlock + slot) * kDim + d);
                        if (dtype == DType::F16) {
                            const uint16_t hbits = f32_to_f16(x);
                            std::memcpy(out.data() + index * 2, &hbits, 2);
                        } else {
                            std::memcpy(out.data() + index * 4, &x, 4);
                        }
                    }
                }
    return out;
}

template <Backend B>
std::vector<std::byte> read(B& b, const typename B::KvStorage& kv, int64_t block) {
    std::vector<std::byte> out(kv_canonical_block_bytes(kv.geometry()));
    b.kv_read_block(kv, block, out);
    return out;
}

// Attention of fixed queries over a sequence's table (positions 0..n-1 attend causally).
template <Backend B>
std::vector<float> attend(B& b, const typename B::KvStorage& kv, const std::vector<int32_t>& table, int64_t n) {
    const int64_t n_heads = 2 * kHeads;
    BatchBuilder bb;
    const int32_t s = bb.add_sequence(table, n);
    for (int64_t t = 0; t < n; ++t) bb.add_token(1, static_cast<int32_t>(t), s);
    auto batch = prepare(b, bb, kv);
    auto q = upload(b, random_floats(static_cast<size_t>(n * n_heads * kDim), 99));
    auto out = b.alloc(n * n_heads * kDim);
    auto scratch = b.alloc_scratch(ScratchShape{n, kDim, 0, n_heads, kDim});
    b.attention(q, kv, 1, batch, n_heads, 1.0f / std::sqrt(static_cast<float>(kDim)), out, scratch);
    return download(b, out, n * n_heads * kDim);
}

}  // namespace

TEMPLATE_TEST_CASE("kv_read_block returns the canonical layout of what was appended", "[kv_blocks]", INLAY_TEST_BACKENDS) {
    auto bp = BackendFactory<TestType>::make();
    auto& b = *bp;
    for (const DType dtype : {DType::F16, DType::F32}) {
        INFO(dtype_name(dtype));
        const auto f = fill(b, dtype, 5, {3, 0, 4}, 10);  // blocks 3 and 0 full, 4 half full
        REQUIRE(kv_canonical_block_bytes(f.kv.geometry()) == static_cast<size_t>(kLayers * 2 * kHeads * kBlock * kDim) * (dtype == DType::F16 ? 2 : 4));
        for (int64_t bi = 0; bi < 3; ++bi) REQUIRE(read(b, f.kv, f.table[static_cast<size_t>(bi)]) == expected_block(f, dtype, bi));
        // Blocks never written read as zeros.
        const auto zero = read(b, f.kv, 1);
        REQUIRE(std::all_of(zero.begin(), zero.end(), [](std::byte x) { return x == std::byte{0}; }));
    }
}

TEMPLATE_TEST_CASE("copied and rewritten blocks serve attention exactly like the originals", "[kv_blocks]",
                   INLAY_TEST_BACKENDS) {
    auto bp = BackendFactory<TestType>::make();
    auto& b = *bp;
    for (const DType dtype : {DType::F16, DType::F32}) {
        INFO(dtype_name(dtype));
        auto f = fill(b, dtype, 8, {5, 2, 6}, 11);
        const auto want = attend(b, f.kv, f.table, 11);

        // Copy-on-write: the last block copied to block 1, the table pointed at the copy.
        b.kv_copy_block(f.kv, 6, 1);
        REQUIRE(read(b, f.kv, 1) == read(b, f.kv, 6));
        REQUIRE(attend(b, f.kv, {5, 2, 1}, 11) == want);

        // Save/restore: canonical images written into other blocks give the same result.
        b.kv_write_block(f.kv, 7, read(b, f.kv, 5));
        b.kv_write_block(f.kv, 0, read(b, f.kv, 2));
        b.kv_write_block(f.kv, 3, read(b, f.kv, 6));
        REQUIRE(attend(b, f.kv, {7, 0, 3}, 11) == want);

        // And arbitrary bytes round-trip.
        std::vector<std::byte> bytes(kv_canonical_block_bytes(f.kv.geometry()));
        for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>((i * 37 + 11) & 0xff);
        b.kv_write_block(f.kv, 4, bytes);
        REQUIRE(read(b, f.kv, 4) == bytes);
        b.kv_copy_block(f.kv, 4, 4);  // onto itself: unchanged
        REQUIRE(read(b, f.kv, 4) == bytes);
    }
}

TEMPLATE_TEST_CASE("whole-block operations check block ids and sizes", "[kv_blocks]", INLAY_TEST_BACKENDS) {
    auto bp = BackendFactory<TestType>::make(1);
    auto& b = *bp;
    auto kv = b.alloc_kv(KvGeometry{kLayers, kHeads, kDim, kBlock, DType::F16}, 2);
    std::vector<std::byte> buf(kv_canonical_block_bytes(kv.geometry()));
    REQUIRE(status_of([&] { b.kv_read_block(kv, 2, buf); }) == INLAY_ERR_INTERNAL);
    REQUIRE(status_of([&] { b.kv_read_block(kv, -1, buf); }) == INLAY_ERR_INTERNAL);
    REQUIRE(status_of([&] { b.kv_write_block(kv, 5, buf); }) == INLAY_ERR_INTERNAL);
    REQUIRE(status_of([&] { b.kv_copy_block(kv, 0, 2); }) == INLAY_ERR_INTERNAL);
    std::vector<std::byte> small(buf.size() - 1);
    REQUIRE(status_of([&] { b.kv_read_block(kv, 0, small); }) == INLAY_ERR_INTERNAL);
    REQUIRE(status_of([&] { b.kv_write_block(kv, 0, small); }) == INLAY_ERR_INTERNAL);
    REQUIRE(status_of([&] { b.kv_read_block(kv, 1, buf); }) == INLAY_OK);
}

// Growing keeps every block's bytes and adds zero blocks; shrinking drops the blocks past
// the new count, which read as zeros when added again. Counts past 16 and 32 cross the CPU
// storage's segments (sixteen blocks to an allocation, a head's slabs contiguous).
TEMPLATE_TEST_CASE("resizing the KV storage keeps the blocks below the count and zeroes the rest", "[kv_blocks]",
                   INLAY_TEST_BACKENDS) {
    auto bp = BackendFactory<TestType>::make(1);
    auto& b = *bp;
    auto kv = b.alloc_kv(KvGeometry{kLayers, kHeads, kDim, kBlock, DType::F16}, 3);
    const size_t n_bytes = kv_canonical_block_bytes(kv.geometry());
    auto image = [&](int64_t block) {
        std::vector<std::byte> bytes(n_bytes);
        for (size_t i = 0; i < n_bytes; ++i) bytes[i] = static_cast<std::byte>((i * 29 + static_cast<size_t>(block) * 7 + 1) & 0xff);
        return bytes;
    };
    const std::vector<std::byte> zero(n_bytes);
    auto require_blocks = [&](const std::vector<int64_t>& written, int64_t n) {
        REQUIRE(kv.n_blocks() == n);
        for (int64_t block = 0; block < n; ++block) {
            INFO("block " << block << " of " << n);
            const bool has = std::find(written.begin(), written.end(), block) != written.end();
            REQUIRE(read(b, kv, block) == (has ? image(block) : zero));
        }
    };
    for (int64_t block = 0; block < 3; ++block) b.kv_write_block(kv, block, image(block));
    b.resize_kv(kv, 40);
    require_blocks({0, 1, 2}, 40);
    for (const int64_t block : {15, 16, 17, 31, 32, 39}) b.kv_write_block(kv, block, image(block));
    require_blocks({0, 1, 2, 15, 16, 17, 31, 32, 39}, 40);
    b.kv_copy_block(kv, 16, 30);  // across segments
    REQUIRE(read(b, kv, 30) == image(16));
    b.kv_write_block(kv, 30, zero);

    b.resize_kv(kv, 17);  // the third segment dropped, the second cut after its first block
    require_blocks({0, 1, 2, 15, 16}, 17);
    b.resize_kv(kv, 40);
    require_blocks({0, 1, 2, 15, 16}, 40);
    b.resize_kv(kv, 0);
    b.resize_kv(kv, 18);
    require_blocks({}, 18);
    REQUIRE(status_of([&] { b.resize_kv(kv, -1); }) == INLAY_ERR_INVALID_ARGUMENT);
}

// A sequence whose blocks lie in different segments, in any order, attends as one whose
// blocks are the first few.
TEMPLATE_TEST_CASE("attention reads a sequence's blocks wherever the storage keeps them", "[kv_blocks]",
                   INLAY_TEST_BACKENDS) {
    auto bp = BackendFactory<TestType>::make();
    auto& b = *bp;
    for (const DType dtype : {DType::F16, DType::F32}) {
        INFO(dtype_name(dtype));
        const std::vector<int32_t> spread{33, 4, 17, 16, 47};
        auto f = fill(b, dtype, 48, spread, 19);
        auto g = fill(b, dtype, 5, {0, 1, 2, 3, 4}, 19);  // the same values (same seeds)
        for (size_t bi = 0; bi < spread.size(); ++bi)
            REQUIRE(read(b, f.kv, spread[bi]) == read(b, g.kv, static_cast<int64_t>(bi)));
        REQUIRE(attend(b, f.kv, spread, 19) == attend(b, g.kv, {0, 1, 2, 3, 4}, 19));
    }
}
