// Internal: what the AMX tile files share (vec_dot_tile_amx.cpp, against Q8_0 blocks;
// vec_dot_tile_amx_kquants.cpp, against Q8_K super-blocks): LDTILECFG's configuration
// record, and the activation layout the tiles read. Per group of 16 tokens and per block
// of kElems quants: the kElems x 16 quants as one tile operand (tile row k holds quants
// 4k..4k+3 of every token), then the 16 tokens' scales as floats; tokens past the last
// are zero.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/half.h"
#include "quant/blocks.h"

namespace inlay::quant::detail {

inline constexpr int kAmxPackTokens = 16;

// Tile rows are 64 bytes: in buffers aligned to a cache line each loads one line, not two.
// A buffer holding `kAmxAlign - 1` spare bytes has its aligned start here.
inline constexpr size_t kAmxAlign = 64;
template <class T>
T* amx_aligned(T* p) {
    const auto a = reinterpret_cast<uintptr_t>(p);
    return reinterpret_cast<T*>((a + kAmxAlign - 1) & ~(kAmxAlign - 1));
}

// LDTILECFG's 64-byte layout (palette 1): rows and bytes per row of each tile.
struct alignas(64) TileConfig {
    uint8_t palette_id = 1;
    uint8_t start_row = 0;
    uint8_t reserved[14] = {};
    uint16_t colsb[16] = {};
    uint8_t rows[16] = {};
};

inline float block_scale(const BlockQ8_0& b) { return f16_to_f32(b.d); }
inline float block_scale(const BlockQ8_K& b) { return b.d; }

template <class Block, int kElems>
constexpr size_t amx_packed_block_bytes() {
    return size_t{kElems} * kAmxPackTokens + kAmxPackTokens * sizeof(float);
}

template <class Block, int kElems>
size_t amx_pack_bytes(int64_t n, int64_t n_tokens) {
    const auto groups = static_cast<size_t>((n_tokens + kAmxPackTokens - 1) / kAmxPackTokens);
    return groups * static_cast<size_t>(n / kElems) * amx_packed_block_bytes<Block, kElems>();
}

template <class Block, int kElems>
void amx_pack(int64_t n, int64_t n_tokens, const void* x, size_t x_stride, std::byte* out) {
    constexpr size_t kBlock = amx_packed_block_bytes<Block, kElems>();
    constexpr size_t kQuants = size_t{kElems} * kAmxPackTokens;
    const int64_t n_blocks = n / kElems;
    const auto* xb = static_cast<const uint8_t*>(x);
    std::memset(out, 0, amx_pack_bytes<Block, kElems>(n, n_tokens));
    for (int64_t t = 0; t < n_tokens; ++t) {
        const auto* row = reinterpret_cast<const Block*>(xb + static_cast<size_t>(t) * x_stride);
        std::byte* group = out + static_cast<size_t>(t / kAmxPackTokens) * static_cast<size_t>(n_blocks) * kBlock;
        const auto lane = static_cast<size_t>(t % kAmxPackTokens);
        for (int64_t b = 0; b < n_blocks; ++b) {
            std::byte* block = group + static_cast<size_t>(b) * kBlock;
            for (size_t k = 0; k < kElems / 4; ++k)  // tile row k: quants 4k..4k+3 of every token
                std::memcpy(block + k * kAmxPackTokens * 4 + lane * 4, row[b].qs + 4 * k, 4);
            const float d = block_scale(row[b]);
            std::memcpy(block + kQuants + lane * sizeof(float), &d, sizeof d);
        }
    }
}

}  // namespace inlay::quant::detail
