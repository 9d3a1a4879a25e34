// e^x in float by Cephes' expf method: x = n ln2 + r with n = round(x log2 e) and ln 2 in
// two parts (so n * ln2_hi is exact), a degree-6 polynomial in r, times 2^n from the
// exponent bits. Under 1 ulp over [kExpMin, kExpMax] (tests/backend/test_attention_tiles.cpp).
// One definition for CPU attention (backend/cpu/attention_simd.h, whose vector paths
// apply the same constants lane by lane) and the draft model's confidence
// (speculative/rejection.cpp).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace inlay::expf_poly {

inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kLn2Hi = 0.693359375f;
inline constexpr float kLn2Lo = -2.12194440e-4f;
inline constexpr float kExpMax = 88.0f;
inline constexpr float kExpMin = -87.33654475f;  // ln(2^-126)
inline constexpr float kP0 = 1.9875691500e-4f, kP1 = 1.3981999507e-3f, kP2 = 8.3334519073e-3f,
                       kP3 = 4.1665795894e-2f, kP4 = 1.6666665459e-1f, kP5 = 5.0000001201e-1f;

// e^x for x in [kExpMin, kExpMax] (not NaN): no clamps and no branches, so that a loop
// calling it vectorises.
inline float exp_in_range(float x) {
    const float n = std::nearbyint(x * kLog2e);
    float r = std::fma(-n, kLn2Hi, x);
    r = std::fma(-n, kLn2Lo, r);
    float p = kP0;
    p = std::fma(p, r, kP1);
    p = std::fma(p, r, kP2);
    p = std::fma(p, r, kP3);
    p = std::fma(p, r, kP4);
    p = std::fma(p, r, kP5);
    const float y = std::fma(p, r * r, r) + 1.0f;
    const auto bits = static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23;
    float two_n;
    std::memcpy(&two_n, &bits, sizeof two_n);
    return y * two_n;
}

}  // namespace inlay::expf_poly
