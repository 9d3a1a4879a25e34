// Packed block layouts of ggml's quantized types, byte for byte as they appear in GGUF
// files (see docs/formats.md). f16 fields are stored as raw uint16_t bits; convert them
// with core/half.h. A row of a quantized tensor is an array of these blocks.
//
// Alignment: every block except BlockQ8_K needs only 2-byte alignment, so rows of a
// memory-mapped file can be used in place. BlockQ8_K (activations only) holds a float
// and needs 4-byte alignment.
#pragma once

#include <cstddef>
#include <cstdint>

namespace inlay::quant {

inline constexpr int kQK8_0 = 32;   // elements per Q8_0 block
inline constexpr int kQK4_0 = 32;   // elements per Q4_0 block
inline constexpr int kQK4_1 = 32;   // elements per Q4_1 block
inline constexpr int kQK5_0 = 32;   // elements per Q5_0 block
inline constexpr int kQK5_1 = 32;   // elements per Q5_1 block
inline constexpr int kQK8_1 = 32;   // elements per Q8_1 block
inline constexpr int kQK1_0 = 128;  // elements per Q1_0 block
inline constexpr int kQK_K = 256;   // elements per K-quant super-block
inline constexpr int kKScaleBytes = 12;  // packed 6-bit scales and mins of Q4_K / Q5_K

// x[i] = d * qs[i]
struct BlockQ8_0 {
    uint16_t d;  // f16 scale
    int8_t qs[kQK8_0];
};

// x[i] = d * ((qs[i] & 15) - 8), x[i + 16] = d * ((qs[i] >> 4) - 8)
struct BlockQ4_0 {
    uint16_t d;  // f16 scale
    uint8_t qs[kQK4_0 / 2];
};

// x[i] = d * (qs[i] & 15) + m, x[i + 16] = d * (qs[i] >> 4) + m
struct BlockQ4_1 {
    uint16_t d;  // f16 scale
    uint16_t m;  // f16 offset (the block minimum)
    uint8_t qs[kQK4_1 / 2];
};

// 5-bit levels: the low four bits as in Q4_0, bit 4 of level j (element order) is bit j
// of qh read as a little-endian uint32.
// x[i] = d * ((qs[i] & 15 | h(i) << 4) - 16), x[i + 16] = d * ((qs[i] >> 4 | h(i + 16) << 4) - 16)
struct BlockQ5_0 {
    uint16_t d;  // f16 scale
    uint8_t qh[4];
    uint8_t qs[kQK5_0 / 2];
};

// Q5_0's levels without the -16, plus an offset: x = d * level + m.
struct BlockQ5_1 {
    uint16_t d;  // f16 scale
    uint16_t m;  // f16 offset (the block minimum)
    uint8_t qh[4];
    uint8_t qs[kQK5_1 / 2];
};

// Activations for Q4_1 / Q5_1 dot products: x[i] = d * qs[i]; s = f16(d * sum of qs),
// which carries the weights' offset m through the dot product as m * s.
struct BlockQ8_1 {
    uint16_t d;  // f16 scale
    uint16_t s;  // f16
    int8_t qs[kQK8_1];
};

// x[j] = bit j ? +d : -d, bit j being bit (j % 8) of qs[j / 8]
struct BlockQ1_0 {
    uint16_t d;  // f16 scale (mean |x| of the block)
    uint8_t qs[kQK1_0 / 8];
};

// 8 sub-blocks of 32 with 6-bit scales and mins: x = d*sc*q - dmin*m, q in 0..15.
struct BlockQ4_K {
    uint16_t d;     // f16 super-block scale of the sub-block scales
    uint16_t dmin;  // f16 super-block scale of the sub-block mins
    uint8_t scales[kKScaleBytes];
    uint8_t qs[kQK_K / 2];  // low 4 bits; chunk c of 64 values uses qs[32c..32c+31]
};

// Q4_K plus a fifth bit: q in 0..31; bit 4 of value 64c+l is bit 2c of qh[l], of
// value 64c+32+l bit 2c+1 of qh[l].
struct BlockQ5_K {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[kKScaleBytes];
    uint8_t qh[kQK_K / 8];
    uint8_t qs[kQK_K / 2];
};

// 16 sub-blocks of 16 with int8 scales: x = d * scales[s] * (q - 32), q in 0..63.
// Two halves of 128 values; in half h (ql += 64h, qh += 32h, values 128h + ...), for
// l in 0..31: value l      = ql[l] & 15      | ((qh[l] >> 0) & 3) << 4
//             value l + 32 = ql[l + 32] & 15 | ((qh[l] >> 2) & 3) << 4
//             value l + 64 = ql[l] >> 4      | ((qh[l] >> 4) & 3) << 4
//             value l + 96 = ql[l + 32] >> 4 | ((qh[l] >> 6) & 3) << 4
struct BlockQ6_K {
    uint8_t ql[kQK_K / 2];
    uint8_t qh[kQK_K / 4];
    int8_t scales[kQK_K / 16];
    uint16_t d;  // f16
};

// Activations for K-quant dot products: x = d * qs[i]; bsums[j] = sum of qs[16j..16j+15].
struct BlockQ8_K {
    float d;
    int8_t qs[kQK_K];
    int16_t bsums[kQK_K / 16];
};

static_assert(sizeof(BlockQ8_0) == 34 && alignof(BlockQ8_0) == 2);
static_assert(sizeof(BlockQ4_0) == 18 && alignof(BlockQ4_0) == 2);
static_assert(sizeof(BlockQ4_1) == 20 && alignof(BlockQ4_1) == 2);
static_assert(sizeof(BlockQ5_0) == 22 && alignof(BlockQ5_0) == 2);
static_assert(sizeof(BlockQ5_1) == 24 && alignof(BlockQ5_1) == 2);
static_assert(sizeof(BlockQ8_1) == 36 && alignof(BlockQ8_1) == 2);
static_assert(sizeof(BlockQ1_0) == 18 && alignof(BlockQ1_0) == 2);
static_assert(sizeof(BlockQ4_K) == 144 && alignof(BlockQ4_K) == 2);
static_assert(sizeof(BlockQ5_K) == 176 && alignof(BlockQ5_K) == 2);
static_assert(sizeof(BlockQ6_K) == 210 && alignof(BlockQ6_K) == 2);
static_assert(sizeof(BlockQ8_K) == 292 && alignof(BlockQ8_K) == 4);

// The 6-bit scale and min of sub-block j (0..7) of a Q4_K / Q5_K super-block.
inline void unpack_k_scale_min(int j, const uint8_t* q, uint8_t& sc, uint8_t& m) {
    if (j < 4) {
        sc = q[j] & 63;
        m = q[j + 4] & 63;
    } else {
        sc = static_cast<uint8_t>((q[j + 4] & 15) | ((q[j - 4] >> 6) << 4));
        m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

// The inverse of unpack_k_scale_min for all eight sub-blocks (each value 0..63).
inline void pack_k_scales_mins(const uint8_t* sc, const uint8_t* m, uint8_t* q) {
    for (int j = 0; j < 4; ++j) {
        q[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
        q[j + 4] = static_cast<uint8_t>((m[j] & 63) | ((m[j + 4] >> 4) << 6));
        q[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
    }
}

}  // namespace inlay::quant
