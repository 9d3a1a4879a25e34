// IEEE binary16 (f16) and bfloat16 conversions. Exact round-to-nearest-even in both
// directions, with hardware F16C instructions where the build targets them.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace inlay {

inline float fp32_from_bits(uint32_t w) { return std::bit_cast<float>(w); }
inline uint32_t fp32_to_bits(float f) { return std::bit_cast<uint32_t>(f); }

// Portable f16 -> f32 (exact for every input, including subnormals, inf and NaN).
inline float f16_to_f32_portable(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0) {
        if (mant == 0) return fp32_from_bits(sign);
        // subnormal: value = mant * 2^-24
        int e = -1;
        do {
            ++e;
            mant <<= 1;
        } while ((mant & 0x400u) == 0);
        mant &= 0x3ffu;
        return fp32_from_bits(sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | (mant << 13));
    }
    if (exp == 31) return fp32_from_bits(sign | 0x7f800000u | (mant << 13));
    return fp32_from_bits(sign | ((exp + 127 - 15) << 23) | (mant << 13));
}

// Portable f32 -> f16, round to nearest even; overflow gives inf, NaN stays NaN.
inline uint16_t f32_to_f16_portable(float f) {
    const uint32_t x = fp32_to_bits(f);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t abs = x & 0x7fffffffu;
    if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
    if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
    if (abs < 0x38800000u) {
        // result is subnormal or zero: value / 2^-24, rounded to nearest even
        if (abs < 0x33000000u) return static_cast<uint16_t>(sign);  // < 2^-25: zero
        const uint32_t e = abs >> 23;
        const uint32_t m = (abs & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126 - e;  // 14 + (113 - e) ... bits to drop
        const uint32_t q = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1);
        const uint32_t half = 1u << (shift - 1);
        uint32_t r = q + ((rem > half || (rem == half && (q & 1))) ? 1 : 0);
        return static_cast<uint16_t>(sign | r);
    }
    uint32_t r = abs - 0x38000000u;  // rebias exponent 127 -> 15 (in place)
    const uint32_t rem = r & 0x1fffu;
    r >>= 13;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1))) ++r;
    return static_cast<uint16_t>(sign | r);
}

inline float f16_to_f32(uint16_t h) {
#if defined(__F16C__)
    return _cvtsh_ss(h);
#else
    return f16_to_f32_portable(h);
#endif
}

inline uint16_t f32_to_f16(float f) {
#if defined(__F16C__)
    // _cvtss_sh is a macro with a compound literal in clang's headers (-Wc99-extensions).
    return static_cast<uint16_t>(_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT), 0));
#else
    return f32_to_f16_portable(f);
#endif
}

inline float bf16_to_f32(uint16_t b) { return fp32_from_bits(static_cast<uint32_t>(b) << 16); }

// Round to nearest even; NaN stays a quiet NaN.
inline uint16_t f32_to_bf16(float f) {
    const uint32_t x = fp32_to_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
    return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace inlay
