// K-quant token tiles on the AMX matrix unit: Q4_K, Q5_K and Q6_K against Q8_K.
//
// The unit multiplies bytes, but a K-quant weight is a level times a sub-block scale
// (Q4_K: 15 x 63 at most), which does not fit a byte. So each row's super-block is
// unpacked once, for every group of tokens, into byte "parts": the levels times a few
// bits of the scale each, every product small enough for a byte:
//   Q4_K / Q5_K: level x (sc >> 3) and level x (sc & 7) (at most 31 x 7 = 217, unsigned),
//     and the sub-block's min m on each of its 32 positions;
//   Q6_K: (level - 32) x (sc >> 6) (-2..1) and x each further two bits of sc (0..3), signed.
// One TDPBUSD (TDPBSSD for Q6_K) per part and 64-value chunk multiplies 16 rows by 16
// tokens, and the parts recombine exactly, in int32, into the super-block's totals:
//   Q4_K / Q5_K: sumi = 8 C_hi + C_lo, summ = C_min; Q6_K: sumi = 64 C_a + 16 C_b + 4 C_c + C_e.
// These are the integers the row kernels sum (with the activations' block sums equal to
// the sums of their quants, as quantize_activations writes them), fused into the float
// accumulators in the same order (vec_dot_reference.cpp), so the tiles equal
// vec_dot_kernel bitwise.
//
// The activations are packed once per matrix product (amx_pack_q8_k): per group of 16
// tokens and super-block, the 256 x 16 quants in the layout the unit reads (row k of a
// tile holds quants 4k..4k+3 of every token), then the 16 tokens' d.
#include "quant/kernels.h"

#if defined(__AMX_TILE__) && defined(__AMX_INT8__) && defined(__AVX512F__) && defined(__AVX512BW__) && \
    defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/half.h"
#include "quant/amx_common.h"
#include "quant/avx2_kquant_levels.h"
#include "quant/blocks.h"
#include "quant/gcc_avx512_warnings.h"
#include "quant/tile_store_avx512.h"

namespace inlay::quant::detail {
namespace {

constexpr int kTileTokens = kAmxPackTokens;
constexpr int kTileRows = 16;
constexpr int kChunk = 64;                                   // values per tile product
constexpr int kChunks = kQK_K / kChunk;                      // 4 per super-block
constexpr size_t kPackedQuants = size_t{kQK_K} * kTileTokens;  // one super-block's B tiles
constexpr size_t kPackedBlock = amx_packed_block_bytes<BlockQ8_K, kQK_K>();
constexpr size_t kPartBytes = size_t{kTileRows} * kQK_K;     // one part of 16 rows' super-block

// The tile configuration: tiles 0-3 the parts' int32 sums (rows x 16 tokens), 4 and 5
// the weight parts (rows x 64 bytes, taken in turn), 6 the activations (16 x 64).
void load_config(int rows) {
    TileConfig c;
    for (int t = 0; t < 6; ++t) {
        c.rows[t] = static_cast<uint8_t>(rows);
        c.colsb[t] = 64;
    }
    c.rows[6] = kChunk / 4;
    c.colsb[6] = kTileTokens * 4;
    _tile_loadconfig(&c);
}

// levels[i] x scale[i] as bytes, `scales16` holding one int16 per pair of bytes (both in
// the same sub-block); every product fits a byte, so the low byte of each 16-bit product
// is exact, signed or not.
inline __m512i times(__m512i levels, __m512i scales16) {
    const __m512i even = _mm512_mullo_epi16(levels, scales16);
    const __m512i odd = _mm512_mullo_epi16(_mm512_and_si512(levels, _mm512_set1_epi16(static_cast<int16_t>(0xff00))),
                                           scales16);
    return _mm512_mask_blend_epi8(0xaaaaaaaaaaaaaaaaULL, even, odd);
}

// For chunk c, the index of each 16-bit pair's sub-block (sub-blocks of `Sub` values):
// picks the pair's scale out of a vector of per-sub-block scales.
template <int Sub>
struct SubBlockIndex {
    alignas(64) int16_t idx[kChunks][32];
    constexpr SubBlockIndex() : idx{} {
        for (int c = 0; c < kChunks; ++c)
            for (int w = 0; w < 32; ++w) idx[c][w] = static_cast<int16_t>((kChunk * c + 2 * w) / Sub);
    }
};
template <int Sub>
constexpr SubBlockIndex<Sub> kSubBlockIndex{};

template <int Sub>
inline __m512i sub_block_index(int c) {
    return _mm512_load_si512(kSubBlockIndex<Sub>.idx[c]);
}

inline __m512i joined(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }

// Unpacks one row's super-block into its parts: part p's 256 bytes at out + p * kPartBytes.
template <DType W>
struct Unpack;

template <bool Q5, class Block>
void unpack_affine(const Block& b, uint8_t* out) {
    // 16-bit lanes 0-7 the scales, 8-15 the mins
    const __m512i sm16 = _mm512_castsi256_si512(_mm256_cvtepu8_epi16(avx2::unpack_k_scales(b.scales)));
    const __m512i hi16 = _mm512_srli_epi16(sm16, 3), lo16 = _mm512_and_si512(sm16, _mm512_set1_epi16(7));
    const __m512i to_mins = _mm512_set1_epi16(8);
    __m256i qh = _mm256_setzero_si256();
    if constexpr (Q5) qh = avx2::load32(b.qh);
    auto chunk = [&]<int C>() {
        __m256i l0, l1;
        avx2::affine_levels<Q5, C>(b, qh, l0, l1);
        const __m512i levels = joined(l0, l1);
        const __m512i idx = sub_block_index<32>(C);
        _mm512_storeu_si512(out + C * kChunk, times(levels, _mm512_permutexvar_epi16(idx, hi16)));
        _mm512_storeu_si512(out + kPartBytes + C * kChunk, times(levels, _mm512_permutexvar_epi16(idx, lo16)));
        _mm512_storeu_si512(out + 2 * kPartBytes + C * kChunk,
                            times(_mm512_set1_epi8(1), _mm512_permutexvar_epi16(_mm512_add_epi16(idx, to_mins), sm16)));
    };
    chunk.template operator()<0>();
    chunk.template operator()<1>();
    chunk.template operator()<2>();
    chunk.template operator()<3>();
}

template <>
struct Unpack<DType::Q4_K> {
    using Block = BlockQ4_K;
    static constexpr int kParts = 3;
    static void run(const Block& b, uint8_t* out) { unpack_affine<false>(b, out); }
};

template <>
struct Unpack<DType::Q5_K> {
    using Block = BlockQ5_K;
    static constexpr int kParts = 3;
    static void run(const Block& b, uint8_t* out) { unpack_affine<true>(b, out); }
};

template <>
struct Unpack<DType::Q6_K> {
    using Block = BlockQ6_K;
    static constexpr int kParts = 4;
    static void run(const Block& b, uint8_t* out) {
        // sc = 64 (sc >> 6) + 16 ((sc >> 4) & 3) + 4 ((sc >> 2) & 3) + (sc & 3)
        const __m512i sc = _mm512_castsi256_si512(_mm256_cvtepi8_epi16(avx2::load16(b.scales)));
        const __m512i three = _mm512_set1_epi16(3);
        const __m512i p16[4] = {_mm512_srai_epi16(sc, 6), _mm512_and_si512(_mm512_srli_epi16(sc, 4), three),
                                _mm512_and_si512(_mm512_srli_epi16(sc, 2), three), _mm512_and_si512(sc, three)};
        const __m512i offset = _mm512_set1_epi8(32);
        for (int h = 0; h < 2; ++h) {
            __m256i q[4];
            avx2::q6_levels(b, h, q);
            for (int k = 0; k < 2; ++k) {
                const int c = 2 * h + k;
                const __m512i levels = _mm512_sub_epi8(joined(q[2 * k], q[2 * k + 1]), offset);
                const __m512i idx = sub_block_index<16>(c);
                for (int p = 0; p < 4; ++p)
                    _mm512_storeu_si512(out + p * kPartBytes + c * kChunk,
                                        times(levels, _mm512_permutexvar_epi16(idx, p16[p])));
            }
        }
    }
};

// The per-row floats of a super-block, after its parts in the unpacked buffer.
struct RowScales {
    float d[kTileRows];
    float dmin[kTileRows];
};

template <DType W>
constexpr size_t unpacked_block_bytes() {
    return Unpack<W>::kParts * kPartBytes + sizeof(RowScales);
}

// Super-block b of `rows` (<= 16) unpacked weight rows against every group of 16 tokens:
// its parts stay in L1 while the groups' activations stream past. acc and acc_min hold
// each row's float accumulators over all the (padded) tokens; the first super-block
// starts them from 0 (as the reference's accumulators start), so they need no clearing.
template <DType W>
void tile_block(int rows, int64_t b, int64_t n_blocks, int64_t n_groups, const uint8_t* parts, const std::byte* packed,
                float* acc, float* acc_min, size_t acc_stride) {
    constexpr int P = Unpack<W>::kParts;
    constexpr bool kSigned = W == DType::Q6_K;
    alignas(64) int32_t sums[P][kTileRows][kTileTokens];
    const auto& scales = *reinterpret_cast<const RowScales*>(parts + P * kPartBytes);
    for (int64_t g = 0; g < n_groups; ++g) {
        const std::byte* x = packed + (static_cast<size_t>(g) * static_cast<size_t>(n_blocks) + static_cast<size_t>(b)) * kPackedBlock;
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        if constexpr (P == 4) _tile_zero(3);
        for (int c = 0; c < kChunks; ++c) {
            _tile_loadd(6, x + static_cast<size_t>(c) * (kChunk / 4) * kTileTokens * 4, kTileTokens * 4);
            const uint8_t* a = parts + c * kChunk;
            _tile_loadd(4, a, kQK_K);
            _tile_loadd(5, a + kPartBytes, kQK_K);
            if constexpr (kSigned) {
                _tile_dpbssd(0, 4, 6);
                _tile_loadd(4, a + 2 * kPartBytes, kQK_K);
                _tile_dpbssd(1, 5, 6);
                _tile_loadd(5, a + 3 * kPartBytes, kQK_K);
                _tile_dpbssd(2, 4, 6);
                _tile_dpbssd(3, 5, 6);
            } else {
                _tile_dpbusd(0, 4, 6);
                _tile_loadd(4, a + 2 * kPartBytes, kQK_K);
                _tile_dpbusd(1, 5, 6);
                _tile_dpbusd(2, 4, 6);
            }
        }
        _tile_stored(0, sums[0], kTileTokens * sizeof(int32_t));
        _tile_stored(1, sums[1], kTileTokens * sizeof(int32_t));
        _tile_stored(2, sums[2], kTileTokens * sizeof(int32_t));
        if constexpr (P == 4) _tile_stored(3, sums[3], kTileTokens * sizeof(int32_t));
        const __m512 dx = _mm512_loadu_ps(x + kPackedQuants);
        for (int r = 0; r < rows; ++r) {
            auto part = [&](int p) { return _mm512_load_si512(sums[p][r]); };
            float* row_acc = acc + static_cast<size_t>(r) * acc_stride + static_cast<size_t>(g) * kTileTokens;
            __m512i sumi;
            if constexpr (kSigned) {
                sumi = _mm512_add_epi32(_mm512_add_epi32(_mm512_slli_epi32(part(0), 6), _mm512_slli_epi32(part(1), 4)),
                                        _mm512_add_epi32(_mm512_slli_epi32(part(2), 2), part(3)));
            } else {
                sumi = _mm512_add_epi32(_mm512_slli_epi32(part(0), 3), part(1));
                float* row_min = acc_min + static_cast<size_t>(r) * acc_stride + static_cast<size_t>(g) * kTileTokens;
                const __m512 scale_min = _mm512_mul_ps(dx, _mm512_set1_ps(scales.dmin[r]));
                const __m512 prev_min = b == 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(row_min);
                _mm512_storeu_ps(row_min, _mm512_fmadd_ps(_mm512_cvtepi32_ps(part(2)), scale_min, prev_min));
            }
            const __m512 scale = _mm512_mul_ps(dx, _mm512_set1_ps(scales.d[r]));
            const __m512 prev = b == 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(row_acc);
            _mm512_storeu_ps(row_acc, _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), scale, prev));
        }
    }
}

// Per thread and kept between calls (a few hundred KiB at most, grown once rather than
// on every step): the unpacked parts of a row block, and its accumulators.
struct TileScratch {
    std::vector<uint8_t> unpacked;
    std::vector<float> acc;
};

template <DType W>
void tile_rows(int64_t n, int64_t n_rows, int64_t n_tokens, float* result, size_t result_stride, const void* w,
               size_t w_stride, const std::byte* packed) {
    using Block = typename Unpack<W>::Block;
    constexpr int P = Unpack<W>::kParts;
    const int64_t n_blocks = n / kQK_K;
    const int64_t n_groups = (n_tokens + kTileTokens - 1) / kTileTokens;
    const auto acc_stride = static_cast<size_t>(n_groups) * kTileTokens;
    thread_local TileScratch scratch;
    scratch.unpacked.resize(static_cast<size_t>(n_blocks) * unpacked_block_bytes<W>() + kAmxAlign - 1);
    uint8_t* unpacked = amx_aligned(scratch.unpacked.data());
    scratch.acc.resize(2 * kTileRows * acc_stride);
    float* acc = scratch.acc.data();
    float* acc_min = acc + kTileRows * acc_stride;
    const auto* wb = static_cast<const uint8_t*>(w);
    for (int64_t r0 = 0; r0 < n_rows; r0 += kTileRows) {
        const int rows = static_cast<int>(std::min<int64_t>(kTileRows, n_rows - r0));
        for (int r = 0; r < rows; ++r) {
            const auto* row = reinterpret_cast<const Block*>(wb + static_cast<size_t>(r0 + r) * w_stride);
            for (int64_t b = 0; b < n_blocks; ++b) {
                uint8_t* block = unpacked + static_cast<size_t>(b) * unpacked_block_bytes<W>();
                Unpack<W>::run(row[b], block + static_cast<size_t>(r) * kQK_K);
                auto& scales = *reinterpret_cast<RowScales*>(block + P * kPartBytes);
                scales.d[r] = f16_to_f32(row[b].d);
                if constexpr (W != DType::Q6_K) scales.dmin[r] = f16_to_f32(row[b].dmin);
            }
        }
        load_config(rows);
        for (int64_t b = 0; b < n_blocks; ++b)
            tile_block<W>(rows, b, n_blocks, n_groups, unpacked + static_cast<size_t>(b) * unpacked_block_bytes<W>(),
                          packed, acc, acc_min, acc_stride);
        _tile_release();
        for (int64_t t0 = 0; t0 < n_tokens; t0 += kTileTokens) {
            __m512 out[kTileRows];
            for (int r = 0; r < kTileRows; ++r) {
                if (r >= rows) {
                    out[r] = _mm512_setzero_ps();
                    continue;
                }
                const size_t at = static_cast<size_t>(r) * acc_stride + static_cast<size_t>(t0);
                out[r] = _mm512_loadu_ps(acc + at);
                if constexpr (W != DType::Q6_K) out[r] = _mm512_sub_ps(out[r], _mm512_loadu_ps(acc_min + at));
            }
            store_token_major(out, rows, static_cast<int>(std::min<int64_t>(kTileTokens, n_tokens - t0)),
                              result + static_cast<size_t>(t0) * result_stride + static_cast<size_t>(r0), result_stride);
        }
    }
}

}  // namespace

bool amx_kquant_type(DType weight) {
    return weight == DType::Q4_K || weight == DType::Q5_K || weight == DType::Q6_K;
}

size_t amx_pack_q8_k_bytes(int64_t n, int64_t n_tokens) { return amx_pack_bytes<BlockQ8_K, kQK_K>(n, n_tokens); }

void amx_pack_q8_k(int64_t n, int64_t n_tokens, const void* x, size_t x_stride, std::byte* out) {
    amx_pack<BlockQ8_K, kQK_K>(n, n_tokens, x, x_stride, out);
}

void amx_tile_kquant(DType weight, int64_t n, int64_t n_rows, int64_t n_tokens, float* result, size_t result_stride,
                     const void* w, size_t w_stride, const std::byte* packed) {
    switch (weight) {
        case DType::Q4_K: tile_rows<DType::Q4_K>(n, n_rows, n_tokens, result, result_stride, w, w_stride, packed); return;
        case DType::Q5_K: tile_rows<DType::Q5_K>(n, n_rows, n_tokens, result, result_stride, w, w_stride, packed); return;
        case DType::Q6_K: tile_rows<DType::Q6_K>(n, n_rows, n_tokens, result, result_stride, w, w_stride, packed); return;
        default: return;
    }
}

}  // namespace inlay::quant::detail

#else  // no AMX in this build

namespace inlay::quant::detail {
bool amx_kquant_type(DType) { return false; }
size_t amx_pack_q8_k_bytes(int64_t, int64_t) { return 0; }
void amx_pack_q8_k(int64_t, int64_t, const void*, size_t, std::byte*) {}
void amx_tile_kquant(DType, int64_t, int64_t, int64_t, float*, size_t, const void*, size_t, const std::byte*) {}
}  // namespace inlay::quant::detail

#endif
