// Dequantization of the stored weight formats, one "unit" at a time: the piece of a row
// one thread decodes in one step. Shared by embed_rows and gemv.
//
// A format F describes its unit:
//   kBlockElems, kBlockBytes   a block (for f32/f16/bf16: 16 bytes of elements)
//   kUnits                     units per block
//   kRuns x kRunLen            a unit's weights: kRuns runs of kRunLen consecutive columns,
//                              run r starting at column run_col(unit, r) of the block
//                              (kRunLen is a multiple of 4 and run_col of 4, so x can be
//                              read as float4)
//   kCanWide                   the unit can be read with 16-byte loads when the block is
//                              16-byte aligned (decode's `wide`; otherwise 2-byte loads)
//   kScalarTail                f32/f16/bf16: a row may end with n_cols % kBlockElems
//                              columns, read one at a time with elem(row, col)
//   Raw, load(block, unit, wide)   the unit's bytes (and scales) in registers: loads only,
//                              so that a kernel can issue several units' loads before it
//                              decodes any (memory-level parallelism in the GEMV)
//   decode(raw, unit, w)       w[r * kRunLen + i] = weight of column run_col(unit, r) + i
// decode_unit<F>(block, unit, wide, w) below does both at once.
// Block layouts are GGUF's (shared/docs/formats.md). Values are exact f32 products of the
// f16 scale and the level, except Q4_K/Q5_K: fmaf(d*sc, q, -(dmin*m)), one rounding.
#pragma once

#include "device_common.cuh"

namespace inlay {
namespace cuda {
namespace dev {

struct Words4 {
    unsigned w[4];
};

// 16 bytes at p: one 16-byte load (p 16-byte aligned) or eight 2-byte loads.
__device__ __forceinline__ Words4 load16(const unsigned char* p, bool wide) {
    Words4 r;
    if (wide) {
        const uint4 v = ld_u128(p);
        r.w[0] = v.x;
        r.w[1] = v.y;
        r.w[2] = v.z;
        r.w[3] = v.w;
    } else {
#pragma unroll
        for (int i = 0; i < 4; ++i) r.w[i] = ld_u32_a2(p + 4 * i);
    }
    return r;
}

__device__ __forceinline__ unsigned byte16(const Words4& q, int i) {
    return byte_of(q.w[i / 4], i % 4);
}

// Byte i (0..11, runtime) of the 12 packed scale bytes held in words w1..w3, by selects
// (a runtime index into a register array would go through local memory).
__device__ __forceinline__ unsigned scale_byte(unsigned w1, unsigned w2, unsigned w3, int i) {
    const unsigned w = i < 4 ? w1 : (i < 8 ? w2 : w3);
    return (w >> (8 * (i & 3))) & 0xffu;
}

// The 6-bit scale and min of sub-block j (0..7) of Q4_K / Q5_K (formats.md).
__device__ __forceinline__ void k_scale_min(unsigned w1, unsigned w2, unsigned w3, int j, float& sc, float& m) {
    unsigned s, mm;
    if (j < 4) {
        s = scale_byte(w1, w2, w3, j) & 63u;
        mm = scale_byte(w1, w2, w3, j + 4) & 63u;
    } else {
        s = (scale_byte(w1, w2, w3, j + 4) & 15u) | ((scale_byte(w1, w2, w3, j - 4) >> 6) << 4);
        mm = (scale_byte(w1, w2, w3, j + 4) >> 4) | ((scale_byte(w1, w2, w3, j) >> 6) << 4);
    }
    sc = static_cast<float>(s);
    m = static_cast<float>(mm);
}

// ---- f32, f16, bf16: a unit is 16 bytes of consecutive elements ----------------------

struct FmtF32 {
    static constexpr int kBlockElems = 4, kBlockBytes = 16, kUnits = 1, kRuns = 1, kRunLen = 4;
    static constexpr int kElemBytes = 4;
    static constexpr bool kCanWide = true, kScalarTail = true;
    __device__ static int run_col(int, int) { return 0; }
    using Raw = Words4;
    __device__ static Raw load(const unsigned char* b, int, bool wide) {
        if (wide) return load16(b, true);
        Raw r;
#pragma unroll
        for (int i = 0; i < 4; ++i) r.w[i] = ld_u32(b + 4 * i);
        return r;
    }
    __device__ static void decode(const Raw& r, int, float (&w)[4]) {
#pragma unroll
        for (int i = 0; i < 4; ++i) w[i] = __uint_as_float(r.w[i]);
    }
    __device__ static float elem(const unsigned char* row, long long col) {
        return __uint_as_float(ld_u32(row + 4 * col));
    }
};

template <bool BF16>
struct FmtHalf {
    static constexpr int kBlockElems = 8, kBlockBytes = 16, kUnits = 1, kRuns = 1, kRunLen = 8;
    static constexpr int kElemBytes = 2;
    static constexpr bool kCanWide = true, kScalarTail = true;
    __device__ static float cvt(unsigned short h) { return BF16 ? bf16_to_f32(h) : f16_to_f32(h); }
    __device__ static int run_col(int, int) { return 0; }
    using Raw = Words4;
    __device__ static Raw load(const unsigned char* b, int, bool wide) { return load16(b, wide); }
    __device__ static void decode(const Raw& q, int, float (&w)[8]) {
#pragma unroll
        for (int i = 0; i < 8; ++i) w[i] = cvt(static_cast<unsigned short>(q.w[i / 2] >> (16 * (i % 2))));
    }
    __device__ static float elem(const unsigned char* row, long long col) {
        return cvt(ld_u16(row + 2 * col));
    }
};
using FmtF16 = FmtHalf<false>;
using FmtBF16 = FmtHalf<true>;

// ---- 32-element blocks and Q1_0 (2-byte aligned blocks) --------------------------------

// Q8_0: f16 d; i8 qs[32]. Unit u (0..1): columns 16u .. 16u+15.
struct FmtQ8_0 {
    static constexpr int kBlockElems = 32, kBlockBytes = 34, kUnits = 2, kRuns = 1, kRunLen = 16;
    static constexpr bool kCanWide = false, kScalarTail = false;
    __device__ static int run_col(int u, int) { return 16 * u; }
    struct Raw {
        unsigned short d;
        Words4 q;
    };
    __device__ static Raw load(const unsigned char* b, int u, bool) { return Raw{ld_u16(b), load16(b + 2 + 16 * u, false)}; }
    __device__ static void decode(const Raw& r, int, float (&w)[16]) {
        const float d = f16_to_f32(r.d);
#pragma unroll
        for (int i = 0; i < 16; ++i) w[i] = d * static_cast<float>(static_cast<signed char>(byte16(r.q, i)));
    }
};

// Q4_0: f16 d; u8 qs[16]. Unit u (0..1): bytes 8u..8u+7; their low nibbles are columns
// 8u.., their high nibbles 16+8u..; x = d * (level - 8).
struct FmtQ4_0 {
    static constexpr int kBlockElems = 32, kBlockBytes = 18, kUnits = 2, kRuns = 2, kRunLen = 8;
    static constexpr bool kCanWide = false, kScalarTail = false;
    __device__ static int run_col(int u, int r) { return 8 * u + 16 * r; }
    struct Raw {
        unsigned short d;
        unsigned q0, q1;
    };
    __device__ static Raw load(const unsigned char* b, int u, bool) {
        return Raw{ld_u16(b), ld_u32_a2(b + 2 + 8 * u), ld_u32_a2(b + 6 + 8 * u)};
    }
    __device__ static void decode(const Raw& r, int, float (&w)[16]) {
        const float d = f16_to_f32(r.d);
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const unsigned byte = byte_of(i < 4 ? r.q0 : r.q1, i % 4);
            w[i] = d * static_cast<float>(static_cast<int>(byte & 15u) - 8);
            w[8 + i] = d * static_cast<float>(static_cast<int>(byte >> 4) - 8);
        }
    }
};

// Q1_0: f16 d; u8 qs[16]; weight j is bit j%8 of qs[j/8]: +d or -d. Unit u (0..3):
// columns 32u .. 32u+31 (the little-endian word of bytes 4u..4u+3, bit i = column 32u+i).
struct FmtQ1_0 {
    static constexpr int kBlockElems = 128, kBlockBytes = 18, kUnits = 4, kRuns = 1, kRunLen = 32;
    static constexpr bool kCanWide = false, kScalarTail = false;
    __device__ static int run_col(int u, int) { return 32 * u; }
    struct Raw {
        unsigned short d;
        unsigned bits;
    };
    __device__ static Raw load(const unsigned char* b, int u, bool) { return Raw{ld_u16(b), ld_u32_a2(b + 2 + 4 * u)}; }
    __device__ static void decode(const Raw& r, int, float (&w)[32]) {
        const float d = f16_to_f32(r.d);
#pragma unroll
        for (int i = 0; i < 32; ++i) w[i] = ((r.bits >> i) & 1u) ? d : -d;
    }
};

// ---- K-quants (256-element super-blocks) -----------------------------------------------

// Q4_K: f16 d; f16 dmin; u8 scales[12]; u8 qs[128]. Unit u (0..7): chunk c = u/2, bytes
// l = 16(u%2) .. +15 of qs[32c..]: low nibbles columns 64c + l (sub-block 2c), high
// nibbles 64c + 32 + l (sub-block 2c+1); x = d*sc*q - dmin*m.
struct FmtQ4_K {
    static constexpr int kBlockElems = 256, kBlockBytes = 144, kUnits = 8, kRuns = 2, kRunLen = 16;
    static constexpr bool kCanWide = true, kScalarTail = false;
    __device__ static int run_col(int u, int r) { return 64 * (u / 2) + 32 * r + 16 * (u % 2); }
    struct Raw {
        Words4 h;  // d, dmin | scales[0..11]
        Words4 q;
    };
    __device__ static Raw load(const unsigned char* b, int u, bool wide) {
        return Raw{load16(b, wide), load16(b + 16 + 32 * (u / 2) + 16 * (u % 2), wide)};
    }
    __device__ static void decode(const Raw& r, int u, float (&w)[32]) {
        const int c = u / 2;
        const Words4& h = r.h;
        const float d = f16_to_f32(static_cast<unsigned short>(h.w[0] & 0xffffu));
        const float dmin = f16_to_f32(static_cast<unsigned short>(h.w[0] >> 16));
        float sc0, m0, sc1, m1;
        k_scale_min(h.w[1], h.w[2], h.w[3], 2 * c, sc0, m0);
        k_scale_min(h.w[1], h.w[2], h.w[3], 2 * c + 1, sc1, m1);
        const float a0 = d * sc0, b0 = dmin * m0, a1 = d * sc1, b1 = dmin * m1;
#pragma unroll
        for (int i = 0; i < 16; ++i) {
            const unsigned byte = byte16(r.q, i);
            w[i] = fmaf(a0, static_cast<float>(byte & 15u), -b0);
            w[16 + i] = fmaf(a1, static_cast<float>(byte >> 4), -b1);
        }
    }
};

// Q5_K: f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]. Q4_K's units; the fifth
// bit of column 64c + l is bit 2c of qh[l], of 64c + 32 + l bit 2c+1.
struct FmtQ5_K {
    static constexpr int kBlockElems = 256, kBlockBytes = 176, kUnits = 8, kRuns = 2, kRunLen = 16;
    static constexpr bool kCanWide = true, kScalarTail = false;
    __device__ static int run_col(int u, int r) { return 64 * (u / 2) + 32 * r + 16 * (u % 2); }
    struct Raw {
        Words4 h, qh, q;
    };
    __device__ static Raw load(const unsigned char* b, int u, bool wide) {
        return Raw{load16(b, wide), load16(b + 16 + 16 * (u % 2), wide), load16(b + 48 + 32 * (u / 2) + 16 * (u % 2), wide)};
    }
    __device__ static void decode(const Raw& r, int u, float (&w)[32]) {
        const int c = u / 2;
        const Words4& h = r.h;
        const float d = f16_to_f32(static_cast<unsigned short>(h.w[0] & 0xffffu));
        const float dmin = f16_to_f32(static_cast<unsigned short>(h.w[0] >> 16));
        float sc0, m0, sc1, m1;
        k_scale_min(h.w[1], h.w[2], h.w[3], 2 * c, sc0, m0);
        k_scale_min(h.w[1], h.w[2], h.w[3], 2 * c + 1, sc1, m1);
        const float a0 = d * sc0, b0 = dmin * m0, a1 = d * sc1, b1 = dmin * m1;
#pragma unroll
        for (int i = 0; i < 16; ++i) {
            const unsigned byte = byte16(r.q, i), hb = byte16(r.qh, i);
            const unsigned lo = (byte & 15u) | (((hb >> (2 * c)) & 1u) << 4);
            const unsigned hi = (byte >> 4) | (((hb >> (2 * c + 1)) & 1u) << 4);
            w[i] = fmaf(a0, static_cast<float>(lo), -b0);
            w[16 + i] = fmaf(a1, static_cast<float>(hi), -b1);
        }
    }
};

// Q6_K: u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d (210 bytes, 2-byte aligned). Unit u
// (0..7): half h = u/4, l0 = 8(u%4); for i < 8, l = l0 + i, with ql, qh of half h:
//   run 0: column 128h + l      = ql[l] & 15      | ((qh[l] >> 0) & 3) << 4
//   run 1: column 128h + l + 32 = ql[l + 32] & 15 | ((qh[l] >> 2) & 3) << 4
//   run 2: column 128h + l + 64 = ql[l] >> 4      | ((qh[l] >> 4) & 3) << 4
//   run 3: column 128h + l + 96 = ql[l + 32] >> 4 | ((qh[l] >> 6) & 3) << 4
// x = d * scales[column / 16] * (q - 32).
struct FmtQ6_K {
    static constexpr int kBlockElems = 256, kBlockBytes = 210, kUnits = 8, kRuns = 4, kRunLen = 8;
    static constexpr bool kCanWide = false, kScalarTail = false;
    __device__ static int run_col(int u, int r) { return 128 * (u / 4) + 8 * (u % 4) + 32 * r; }
    struct Raw {
        unsigned a0, a1, b0, b1, h0, h1, s0, s1;
        unsigned short d;
    };
    __device__ static Raw load(const unsigned char* b, int u, bool) {
        const int h = u / 4, l0 = 8 * (u % 4);
        const unsigned char* ql = b + 64 * h + l0;
        const unsigned char* qh = b + 128 + 32 * h + l0;
        // scales[8h .. 8h+7] in s0, s1; run r uses index 8h + 2r + l0/16.
        return Raw{ld_u32_a2(ql),      ld_u32_a2(ql + 4),  ld_u32_a2(ql + 32),         ld_u32_a2(ql + 36),
                   ld_u32_a2(qh),      ld_u32_a2(qh + 4),  ld_u32_a2(b + 192 + 8 * h), ld_u32_a2(b + 196 + 8 * h),
                   ld_u16(b + 208)};
    }
    __device__ static void decode(const Raw& raw, int u, float (&w)[32]) {
        const int l0 = 8 * (u % 4);
        const unsigned a0 = raw.a0, a1 = raw.a1, b0 = raw.b0, b1 = raw.b1, h0 = raw.h0, h1 = raw.h1;
        const unsigned s0 = raw.s0, s1 = raw.s1;
        const float d = f16_to_f32(raw.d);
        const int hi = l0 / 16;
        float ds[4];
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const unsigned sb = byte_of(r < 2 ? s0 : s1, (2 * r + hi) & 3);
            ds[r] = d * static_cast<float>(static_cast<signed char>(sb));
        }
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const unsigned la = byte_of(i < 4 ? a0 : a1, i % 4);
            const unsigned lb = byte_of(i < 4 ? b0 : b1, i % 4);
            const unsigned hb = byte_of(i < 4 ? h0 : h1, i % 4);
            const int q0 = static_cast<int>((la & 15u) | (((hb >> 0) & 3u) << 4));
            const int q1 = static_cast<int>((lb & 15u) | (((hb >> 2) & 3u) << 4));
            const int q2 = static_cast<int>((la >> 4) | (((hb >> 4) & 3u) << 4));
            const int q3 = static_cast<int>((lb >> 4) | (((hb >> 6) & 3u) << 4));
            w[i] = ds[0] * static_cast<float>(q0 - 32);
            w[8 + i] = ds[1] * static_cast<float>(q1 - 32);
            w[16 + i] = ds[2] * static_cast<float>(q2 - 32);
            w[24 + i] = ds[3] * static_cast<float>(q3 - 32);
        }
    }
};

// Load and decode one unit (embed_rows: one unit per thread, nothing to overlap).
template <class F>
__device__ __forceinline__ void decode_unit(const unsigned char* block, int unit, bool wide,
                                            float (&w)[F::kRuns * F::kRunLen]) {
    F::decode(F::load(block, unit, wide), unit, w);
}

}  // namespace dev
}  // namespace cuda
}  // namespace inlay
