#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

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

namespace {

// The value of f16 magnitude code c (0 .. 0x7c00) by definition, as a double; code 0x7c00
// (infinity) stands for 2^16, the value a 16th exponent would give: IEEE 754 rounds to
// infinity exactly when that value would be the nearest (from 65520 up).
double f16_magnitude(uint32_t c) {
    const int e = static_cast<int>(c >> 10);
    const int m = static_cast<int>(c & 1023);
    if (e == 0) return std::ldexp(static_cast<double>(m), -24);
    return std::ldexp(1.0 + m / 1024.0, e - 15);
}

// Reference f32 -> f16, written from the definition and independent of core/half.h: the
// two f16 values around |f| by binary search over the ordered codes, the nearer one,
// the one with an even code on a tie. NaN is left to the caller.
uint16_t reference_f32_to_f16(float f) {
    static const std::vector<double> values = [] {
        std::vector<double> v;
        for (uint32_t c = 0; c <= 0x7c00; ++c) v.push_back(f16_magnitude(c));
        return v;
    }();
    const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
    const double x = std::fabs(static_cast<double>(f));
    if (x >= values.back()) return static_cast<uint16_t>(sign | 0x7c00);
    // The largest code whose value is <= x, and the next one up.
    const auto lo = static_cast<uint32_t>(std::upper_bound(values.begin(), values.end(), x) - values.begin() - 1);
    const double below = x - values[lo], above = values[lo + 1] - x;
    const uint32_t code = below < above ? lo : above < below ? lo + 1 : (lo % 2 == 0 ? lo : lo + 1);
    return static_cast<uint16_t>(sign | code);
}

bool f16_is_nan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }

// Both conversions (the portable one and the one the build uses, F16C where targeted)
// against the reference, bit for bit. Counts mismatches and reports the first few (a
// Catch2 assertion per value would dominate the run time).
struct F16Checker {
    int64_t checked = 0;
    int64_t wrong = 0;
    void operator()(float f) {
        ++checked;
        const uint16_t portable = f32_to_f16_portable(f);
        const uint16_t fast = f32_to_f16(f);
        bool ok;
        uint16_t want = 0;
        if (std::isnan(f)) {
            ok = f16_is_nan(portable) && f16_is_nan(fast) && (portable & 0x8000) == (fast & 0x8000);
        } else {
            want = reference_f32_to_f16(f);
            ok = portable == want && fast == want;
        }
        if (!ok && ++wrong <= 10)
            FAIL_CHECK("f32 0x" << std::hex << fp32_to_bits(f) << " (" << std::dec << f << "): portable 0x" << std::hex
                                << portable << ", f32_to_f16 0x" << fast << ", reference 0x" << want);
    }
};

}  // namespace

TEST_CASE("f32 -> f16 equals a reference rounding to nearest even", "[half]") {
    // Every f16 value, the midpoint to its successor (a tie: the even code wins) and the
    // floats just below and above that midpoint (the nearer side wins), both signs: every
    // rounding boundary of the format, subnormals, 65504 and the overflow at 65520 included.
    F16Checker check;
    for (uint32_t c = 0; c < 0x7c00; ++c) {
        const double mid = (f16_magnitude(c) + f16_magnitude(c + 1)) / 2;  // 12 bits: exact in f32
        const auto midf = static_cast<float>(mid);
        REQUIRE(static_cast<double>(midf) == mid);
        for (const float f : {static_cast<float>(f16_magnitude(c)), midf, std::nextafter(midf, 0.0f),
                              std::nextafter(midf, INFINITY)}) {
            check(f);
            check(-f);
        }
    }
    for (const float f : {INFINITY, -INFINITY, NAN, -NAN, 1e10f, -1e10f, 1e-30f, -1e-30f, 0.0f, -0.0f}) check(f);
    // Random bit patterns (every exponent, NaNs included).
    std::mt19937 rng(42);
    std::uniform_int_distribution<uint32_t> bits;
    for (int i = 0; i < 2000000; ++i) check(fp32_from_bits(bits(rng)));
    INFO(check.checked << " floats checked");
    REQUIRE(check.wrong == 0);
    // A few values worked out by hand, so that the reference is checked too.
    REQUIRE(reference_f32_to_f16(65520.0f) == 0x7c00);
    REQUIRE(reference_f32_to_f16(65519.996f) == 0x7bff);
    REQUIRE(reference_f32_to_f16(65504.0f) == 0x7bff);
    REQUIRE(reference_f32_to_f16(1.0f + 1.0f / 2048.0f) == 0x3c00);  // tie -> even (down)
    REQUIRE(reference_f32_to_f16(1.0f + 3.0f / 2048.0f) == 0x3c02);  // tie -> even (up)
    REQUIRE(reference_f32_to_f16(2.9802322e-8f) == 0x0000);          // 2^-25, half the smallest subnormal: tie -> 0
    REQUIRE(reference_f32_to_f16(2.98023259e-8f) == 0x0001);         // just above it
    REQUIRE(reference_f32_to_f16(-6.1035156e-5f) == 0x8400);         // smallest normal
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
