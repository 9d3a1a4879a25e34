// Q8_0 token tiles on the AMX matrix unit (Intel Sapphire Rapids and later), and through
// them Q4_0 / Q5_0 (rows widened to Q8_0 first) and Q1_0 (rows widened to +-1 bytes, each
// 32-element sub-block one product, scaled as dot_q1_0 does).
//
// One TDPBSSD multiplies a tile of 16 weight rows x 32 quants (one block of each row,
// loaded straight from the weight matrix with the row stride) by a tile of 32 quants x
// 16 tokens (the packed activations), giving the 16 x 16 int32 block sums. Each sum is
// then fused into its (row, token) float with d_w * d_x, block after block: exactly the
// block-sum order of the reference kernel, so results equal vec_dot_kernel's bitwise.
//
// The activations are packed once per matrix product (pack_q8_0): per group of 16 tokens
// and per block, the 32 x 16 quants in the layout TDPBSSD reads (row k of the tile holds
// quants 4k..4k+3 of every token), then the 16 tokens' d_x as floats.
#include "quant/kernels.h"

#if defined(__AMX_TILE__) && defined(__AMX_INT8__) && defined(__AVX512F__) && defined(__AVX512BW__) && \
    defined(__AVX512VL__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/half.h"
#include "quant/amx_common.h"
#include "quant/avx2_blocks.h"
#include "quant/blocks.h"
#include "quant/gcc_avx512_warnings.h"
#include "quant/tile_store_avx512.h"

namespace inlay::quant::detail {
namespace {

constexpr int kTileTokens = kAmxPackTokens;
constexpr int kTileRows = 16;
constexpr size_t kPackedQuants = kQK8_0 * kTileTokens;  // bytes of one block's B tile
constexpr size_t kPackedBlock = amx_packed_block_bytes<BlockQ8_0, kQK8_0>();

// The tile configuration (LDTILECFG's 64-byte layout): tile 0 the int32 block sums (rows x
// 16 tokens), tile 1 the weights (rows x 32 quants), tile 2 the activations (8 x 64);
// tiles 3, 4, 5 the same for the next block, so the unit works on one block while the
// vector units scale the other's sums.
void load_config(int rows) {
    TileConfig c;
    for (int set = 0; set < 6; set += 3) {
        c.rows[set] = static_cast<uint8_t>(rows);
        c.colsb[set] = kTileTokens * sizeof(int32_t);
        c.rows[set + 1] = static_cast<uint8_t>(rows);
        c.colsb[set + 1] = kQK8_0;
        c.rows[set + 2] = kQK8_0 / 4;
        c.colsb[set + 2] = kTileTokens * 4;
    }
    _tile_loadconfig(&c);
}

// `rows` (<= 16) weight rows against one packed group of 16 tokens, `tokens` of them real.
template <int kRows>
void tile_group(int rows, int64_t n_blocks, int tokens, float* result, size_t result_stride, const BlockQ8_0* w0,
                size_t w_stride, const std::byte* packed) {
    const int n_rows = kRows > 0 ? kRows : rows;
    alignas(64) int32_t sums[kTileRows][kTileTokens];
    __m512 acc[kTileRows];
    for (int r = 0; r < n_rows; ++r) acc[r] = _mm512_setzero_ps();
    const auto* wb = reinterpret_cast<const uint8_t*>(w0);
    auto weights = [&](int64_t b) { return wb + static_cast<size_t>(b) * sizeof(BlockQ8_0) + offsetof(BlockQ8_0, qs); };
    auto tokens_of = [&](int64_t b) { return packed + static_cast<size_t>(b) * kPackedBlock; };
    // Fuses block b's sums into the accumulators: acc = fma(float(sum), d_w * d_x, acc).
    auto scale_block = [&](int64_t b) {
        const __m512 dx = _mm512_loadu_ps(tokens_of(b) + kPackedQuants);
        for (int r = 0; r < n_rows; ++r) {
            const auto& wblock = *reinterpret_cast<const BlockQ8_0*>(wb + static_cast<size_t>(r) * w_stride +
                                                                     static_cast<size_t>(b) * sizeof(BlockQ8_0));
            const __m512 scale = _mm512_mul_ps(_mm512_set1_ps(f16_to_f32(wblock.d)), dx);
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(sums[r])), scale, acc[r]);
        }
    };
    // Blocks in pairs on tiles 0-2 and 3-5: the next block's product is issued before
    // this one's sums are scaled.
    _tile_zero(0);
    _tile_loadd(1, weights(0), w_stride);
    _tile_loadd(2, tokens_of(0), kTileTokens * 4);
    _tile_dpbssd(0, 1, 2);
    for (int64_t b = 0; b < n_blocks; b += 2) {
        const bool second = b + 1 < n_blocks;
        if (second) {
            _tile_zero(3);
            _tile_loadd(4, weights(b + 1), w_stride);
            _tile_loadd(5, tokens_of(b + 1), kTileTokens * 4);
            _tile_dpbssd(3, 4, 5);
        }
        _tile_stored(0, sums, kTileTokens * sizeof(int32_t));
        scale_block(b);
        if (!second) break;
        if (b + 2 < n_blocks) {
            _tile_zero(0);
            _tile_loadd(1, weights(b + 2), w_stride);
            _tile_loadd(2, tokens_of(b + 2), kTileTokens * 4);
            _tile_dpbssd(0, 1, 2);
        }
        _tile_stored(3, sums, kTileTokens * sizeof(int32_t));
        scale_block(b + 1);
    }
    __m512 out[kTileRows];
    for (int r = 0; r < kTileRows; ++r) out[r] = r < n_rows ? acc[r] : _mm512_setzero_ps();
    store_token_major(out, n_rows, tokens, result, result_stride);
}

}  // namespace

bool amx_usable() {
    static const bool usable = [] {
        // INLAY_DISABLE_AMX=1 takes the path of CPUs without AMX (tests, troubleshooting).
        if (const char* off = std::getenv("INLAY_DISABLE_AMX"); off && *off && std::strcmp(off, "0") != 0) return false;
        constexpr long kReqXcompPerm = 0x1023;  // arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)
        constexpr long kXtileData = 18;
        return syscall(SYS_arch_prctl, kReqXcompPerm, kXtileData) == 0;
    }();
    return usable;
}

size_t amx_pack_q8_0_bytes(int64_t n, int64_t n_tokens) { return amx_pack_bytes<BlockQ8_0, kQK8_0>(n, n_tokens); }

void amx_pack_q8_0(int64_t n, int64_t n_tokens, const void* x, size_t x_stride, std::byte* out) {
    amx_pack<BlockQ8_0, kQK8_0>(n, n_tokens, x, x_stride, out);
}

void amx_tile_q8_0(int64_t n, int64_t n_rows, int64_t n_tokens, float* result, size_t result_stride, const void* w,
                   size_t w_stride, const std::byte* packed) {
    const int64_t n_blocks = n / kQK8_0;
    const auto* wb = static_cast<const uint8_t*>(w);
    for (int64_t r0 = 0; r0 < n_rows; r0 += kTileRows) {
        const int rows = static_cast<int>(std::min<int64_t>(kTileRows, n_rows - r0));
        load_config(rows);
        const auto* w0 = reinterpret_cast<const BlockQ8_0*>(wb + static_cast<size_t>(r0) * w_stride);
        for (int64_t t0 = 0; t0 < n_tokens; t0 += kTileTokens) {
            const int tokens = static_cast<int>(std::min<int64_t>(kTileTokens, n_tokens - t0));
            const std::byte* group = packed + static_cast<size_t>(t0 / kTileTokens) * static_cast<size_t>(n_blocks) * kPackedBlock;
            float* out = result + static_cast<size_t>(t0) * result_stride + static_cast<size_t>(r0);
            if (rows == kTileRows) tile_group<kTileRows>(rows, n_blocks, tokens, out, result_stride, w0, w_stride, group);
            else tile_group<0>(rows, n_blocks, tokens, out, result_stride, w0, w_stride, group);
        }
        _tile_release();
    }
}

// Q4_0 / Q5_0 rows as Q8_0 rows: the same d, the levels minus their offset as int8.
// Their block-sum dots are then exactly Q8_0's (vec_dot_reference.cpp, dot_block_sums).
template <class Block>
void widen_rows(int64_t n_blocks, int rows, const uint8_t* w, size_t w_stride, BlockQ8_0* out) {
    const __m256i offset = _mm256_set1_epi8(static_cast<char>(avx2::Block32<Block>::kOffset));
    for (int r = 0; r < rows; ++r) {
        const auto* in = reinterpret_cast<const Block*>(w + static_cast<size_t>(r) * w_stride);
        BlockQ8_0* row = out + static_cast<size_t>(r) * static_cast<size_t>(n_blocks);
        for (int64_t b = 0; b < n_blocks; ++b) {
            row[b].d = in[b].d;
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(row[b].qs),
                                _mm256_sub_epi8(avx2::Block32<Block>::levels(in[b]), offset));
        }
    }
}

void amx_tile_widened(DType weight, int64_t n, int64_t n_rows, int64_t n_tokens, float* result, size_t result_stride,
                      const void* w, size_t w_stride, const std::byte* packed) {
    const int64_t n_blocks = n / kQK8_0;
    const size_t row_bytes = static_cast<size_t>(n_blocks) * sizeof(BlockQ8_0);
    // Per thread and kept (16 rows of Q8_0), grown once rather than on every step.
    thread_local std::vector<BlockQ8_0> widened;
    widened.resize(static_cast<size_t>(kTileRows * n_blocks));
    const auto* wb = static_cast<const uint8_t*>(w);
    for (int64_t r0 = 0; r0 < n_rows; r0 += kTileRows) {
        const int rows = static_cast<int>(std::min<int64_t>(kTileRows, n_rows - r0));
        const uint8_t* src = wb + static_cast<size_t>(r0) * w_stride;
        if (weight == DType::Q4_0) widen_rows<BlockQ4_0>(n_blocks, rows, src, w_stride, widened.data());
        else widen_rows<BlockQ5_0>(n_blocks, rows, src, w_stride, widened.data());
        amx_tile_q8_0(n, rows, n_tokens, result + static_cast<size_t>(r0), result_stride, widened.data(), row_bytes,
                      packed);
    }
}

// Q1_0: rows widened to +-1 bytes (and their block scales to floats) once per block of 16
// rows; each 32-element sub-block then is one tile product, its int32 sums scaled as
// dot_q1_0 does (vec_dot_reference.cpp): times the activation d (the block's first
// sub-block multiplied, the others fused), and each 128-element block fused into the
// accumulator with its weight scale.
void amx_tile_q1_0(int64_t n, int64_t n_rows, int64_t n_tokens, float* result, size_t result_stride, const void* w,
                   size_t w_stride, const std::byte* packed) {
    constexpr int K = kQK1_0 / kQK8_0;
    const int64_t n_sub = n / kQK8_0, n_blocks = n / kQK1_0;
    // Per thread and kept, grown once rather than on every step: 16 rows of +-1 bytes, their scales.
    thread_local std::vector<int8_t> levels;
    thread_local std::vector<float> scales;
    levels.resize(static_cast<size_t>(kTileRows * n) + kAmxAlign - 1);
    scales.resize(static_cast<size_t>(kTileRows * n_blocks));
    int8_t* lv = amx_aligned(levels.data());
    const auto* wb = static_cast<const uint8_t*>(w);
    const __m256i plus = _mm256_set1_epi8(1), minus = _mm256_set1_epi8(-1);
    alignas(64) int32_t sums[kTileRows][kTileTokens];
    alignas(64) float block[kTileRows][kTileTokens], acc[kTileRows][kTileTokens];
    for (int64_t r0 = 0; r0 < n_rows; r0 += kTileRows) {
        const int rows = static_cast<int>(std::min<int64_t>(kTileRows, n_rows - r0));
        for (int r = 0; r < rows; ++r) {
            const auto* row = reinterpret_cast<const BlockQ1_0*>(wb + static_cast<size_t>(r0 + r) * w_stride);
            for (int64_t b = 0; b < n_blocks; ++b) {
                for (int k = 0; k < K; ++k) {
                    uint32_t bits;
                    std::memcpy(&bits, row[b].qs + 4 * k, sizeof bits);
                    _mm256_storeu_si256(reinterpret_cast<__m256i*>(lv + r * n + (b * K + k) * kQK8_0),
                                        _mm256_mask_blend_epi8(_cvtu32_mask32(bits), minus, plus));
                }
                scales[static_cast<size_t>(r * n_blocks + b)] = f16_to_f32(row[b].d);
            }
        }
        load_config(rows);
        for (int64_t t0 = 0; t0 < n_tokens; t0 += kTileTokens) {
            const int tokens = static_cast<int>(std::min<int64_t>(kTileTokens, n_tokens - t0));
            const std::byte* group = packed + static_cast<size_t>(t0 / kTileTokens) * static_cast<size_t>(n_sub) * kPackedBlock;
            for (int r = 0; r < rows; ++r) _mm512_store_ps(acc[r], _mm512_setzero_ps());
            for (int64_t sb = 0; sb < n_sub; ++sb) {
                _tile_zero(0);
                _tile_loadd(1, lv + sb * kQK8_0, n);
                _tile_loadd(2, group + static_cast<size_t>(sb) * kPackedBlock, kTileTokens * 4);
                _tile_dpbssd(0, 1, 2);
                _tile_stored(0, sums, kTileTokens * sizeof(int32_t));
                const __m512 dx = _mm512_loadu_ps(group + static_cast<size_t>(sb) * kPackedBlock + kPackedQuants);
                const int64_t k = sb % K;
                for (int r = 0; r < rows; ++r) {
                    const __m512 s = _mm512_cvtepi32_ps(_mm512_load_si512(sums[r]));
                    const __m512 blk = k == 0 ? _mm512_mul_ps(s, dx) : _mm512_fmadd_ps(s, dx, _mm512_load_ps(block[r]));
                    if (k == K - 1) {
                        const __m512 dw = _mm512_set1_ps(scales[static_cast<size_t>(r * n_blocks + sb / K)]);
                        _mm512_store_ps(acc[r], _mm512_fmadd_ps(blk, dw, _mm512_load_ps(acc[r])));
                    } else {
                        _mm512_store_ps(block[r], blk);
                    }
                }
            }
            __m512 out[kTileRows];
            for (int r = 0; r < kTileRows; ++r) out[r] = r < rows ? _mm512_load_ps(acc[r]) : _mm512_setzero_ps();
            store_token_major(out, rows, tokens, result + static_cast<size_t>(t0) * result_stride + static_cast<size_t>(r0),
                              result_stride);
        }
        _tile_release();
    }
}

}  // namespace inlay::quant::detail

#else  // no AMX in this build

namespace inlay::quant::detail {
bool amx_usable() { return false; }
size_t amx_pack_q8_0_bytes(int64_t, int64_t) { return 0; }
void amx_pack_q8_0(int64_t, int64_t, const void*, size_t, std::byte*) {}
void amx_tile_q8_0(int64_t, int64_t, int64_t, float*, size_t, const void*, size_t, const std::byte*) {}
void amx_tile_widened(DType, int64_t, int64_t, int64_t, float*, size_t, const void*, size_t, const std::byte*) {}
void amx_tile_q1_0(int64_t, int64_t, int64_t, float*, size_t, const void*, size_t, const std::byte*) {}
}  // namespace inlay::quant::detail

#endif
