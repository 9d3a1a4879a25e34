#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>

#include "core/half.h"

using namespace inlay;

TEST_CASE("f16 -> f32 is exact for all 65536 values", "[half]") {
    for (uint32_t h = 0; h < 65536; ++h) {
        const float portable = f16_to_f32_portable(static_cast<uint16_t>(h));
        const float fast = f16_to_f32(static_cast<uint16_t>(h));
        // Reference by definition: sign * 2^(e-15) * (1 + m/1024), subnormal 2^-14 * m/1024.
        const int e = (h >> 10) & 31;
        const int m = h & 1023;
        double ref;
        if (e == 0) ref = std::ldexp(static_cast<double>(m), -24);
        else if (e == 31) ref = m ? NAN : INFINITY;
        else ref = std::ldexp(1.0 + m / 1024.0, e - 15);
        if (h & 0x8000) ref = -ref;
        if (std::isnan(ref)) {
            REQUIRE(std::isnan(portable));
            REQUIRE(std::isnan(fast));
        } else {
            REQUIRE(static_cast<double>(portable) == ref);
            REQUIRE(static_cast<double>(fast) == ref);
        }
    }
}

TEST_CASE("f32 -> f16 rounds to nearest even like the hardware", "[half]") {
    std::mt19937 rng(42);
    std::uniform_int_distribution<uint32_t> bits;
    auto check = [](float f) {
        const uint16_t p = f32_to_f16_portable(f);
        // Reference: pick the nearest representable f16 by exhaustive neighbour check.
        const uint16_t fast = f32_to_f16(f);
        if (std::isnan(f)) {
            REQUIRE(std::isnan(f16_to_f32_portable(p)));
            return;
        }
        REQUIRE(p == fast);
    };
    for (int i = 0; i < 2000000; ++i) check(fp32_from_bits(bits(rng)));
    // Boundaries: max finite, overflow threshold, smallest subnormal and ties.
    for (float f : {65504.0f, 65519.99f, 65520.0f, 5.9604645e-8f, 2.9802322e-8f, 2.98023259e-8f,
                    6.1035156e-5f, 1.0f + 1.0f / 2048.0f, 1.0f + 3.0f / 2048.0f, 0.0f, -0.0f}) {
        check(f);
        check(-f);
    }
    REQUIRE(f32_to_f16_portable(65520.0f) == 0x7c00);
    REQUIRE(f32_to_f16_portable(65504.0f) == 0x7bff);
    REQUIRE(f32_to_f16_portable(1.0f + 1.0f / 2048.0f) == 0x3c00);  // tie -> even
    REQUIRE(f32_to_f16_portable(1.0f + 3.0f / 2048.0f) == 0x3c02);  // tie -> even (up)
}

TEST_CASE("bf16 conversions round to nearest even", "[half]") {
    REQUIRE(f32_to_bf16(1.0f) == 0x3f80);
    REQUIRE(bf16_to_f32(0x3f80) == 1.0f);
    // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: rounds to even (1).
    REQUIRE(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)) == 0x3f80);
    // 1 + 3 * 2^-8 ties between 1+2^-7 (odd) and 1+2^-6: rounds to even (up).
    REQUIRE(f32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3f82);
    REQUIRE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> d(-1000.0f, 1000.0f);
    for (int i = 0; i < 100000; ++i) {
        const float f = d(rng);
        const float r = bf16_to_f32(f32_to_bf16(f));
        REQUIRE(std::fabs(r - f) <= std::fabs(f) * std::ldexp(1.0f, -8));
    }
}
