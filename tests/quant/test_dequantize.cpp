// dequantize_row on hand-built blocks against the format definitions written out
// longhand from raw byte offsets (docs/formats.md; Q5_K / Q6_K from llama.cpp's layout),
// computed in double. The library's block structs are not used here.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "quant/quantize.h"
#include "quant_test_util.h"

using namespace inlay;
using namespace inlay::test;

namespace {

constexpr int kBlocks = 3;  // several blocks per row, to check the block stride

double h(const uint8_t* p) { return f16_to_f32(get_u16(p)); }

struct Expected {
    double value;
    double magnitude;  // sum of |terms|, for the rounding tolerance
};

// Builds kBlocks random blocks of `type` (d fields random finite f16 written by `fix`),
// dequantizes them and compares with `expect(block_bytes, i)` for every element i.
void check_type(DType type, std::mt19937& rng, const std::function<void(uint8_t*)>& fix,
                const std::function<Expected(const uint8_t*, int)>& expect) {
    const auto& t = dtype_traits(type);
    Bytes row(t.block_bytes * kBlocks);
    fill_random(rng, row.u8(), row.size);
    for (int b = 0; b < kBlocks; ++b) fix(row.u8() + b * t.block_bytes);
    const int64_t n = t.block_elems * kBlocks;
    std::vector<float> out(static_cast<size_t>(n));
    quant::dequantize_row(type, row.data(), out.data(), n);
    for (int b = 0; b < kBlocks; ++b) {
        for (int i = 0; i < t.block_elems; ++i) {
            const Expected e = expect(row.u8() + b * t.block_bytes, i);
            const double got = out[static_cast<size_t>(b * t.block_elems + i)];
            INFO(dtype_name(type) << " block " << b << " element " << i);
            // float arithmetic on at most three rounded products
            REQUIRE(std::fabs(got - e.value) <= 4.0 * std::ldexp(e.magnitude, -24));
        }
    }
}

// The 6-bit scale / min of sub-block j, longhand from formats.md.
void k_scale_min(const uint8_t* q, int j, int& sc, int& m) {
    if (j < 4) {
        sc = q[j] & 63;
        m = q[j + 4] & 63;
    } else {
        sc = (q[j + 4] & 15) | ((q[j - 4] >> 6) << 4);
        m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

}  // namespace

TEST_CASE("dequantize_row matches the format definitions", "[quant][dequantize]") {
    std::mt19937 rng(1234);
    for (int rep = 0; rep < 20; ++rep) {
        auto fix_d0 = [&](uint8_t* blk) { put_u16(blk, random_f16(rng, true)); };

        check_type(DType::Q8_0, rng, fix_d0, [](const uint8_t* blk, int i) {
            const double v = h(blk) * static_cast<int8_t>(blk[2 + i]);
            return Expected{v, std::fabs(v)};
        });
        check_type(DType::Q4_0, rng, fix_d0, [](const uint8_t* blk, int i) {
            const int byte = blk[2 + i % 16];
            const int q = i < 16 ? (byte & 15) : (byte >> 4);
            const double v = h(blk) * (q - 8);
            return Expected{v, std::fabs(v)};
        });
        check_type(DType::Q1_0, rng, fix_d0, [](const uint8_t* blk, int i) {
            const bool bit = (blk[2 + i / 8] >> (i % 8)) & 1;
            const double v = bit ? h(blk) : -h(blk);
            return Expected{v, std::fabs(v)};
        });
        auto fix_dmin = [&](uint8_t* blk) {
            put_u16(blk, random_f16(rng));
            put_u16(blk + 2, random_f16(rng));
        };
        auto fix_dm = [&](uint8_t* blk) {  // Q4_1 / Q5_1 / Q8_1: d and m (or s) of either sign
            put_u16(blk, random_f16(rng, true));
            put_u16(blk + 2, random_f16(rng, true));
        };
        // Q4_1 (llama.cpp's block_q4_1): f16 d, f16 m, 16 bytes of nibbles.
        check_type(DType::Q4_1, rng, fix_dm, [](const uint8_t* blk, int i) {
            const int byte = blk[4 + i % 16];
            const int q = i < 16 ? (byte & 15) : (byte >> 4);
            const double a = h(blk) * q, b = h(blk + 2);
            return Expected{a + b, std::fabs(a) + std::fabs(b)};
        });
        // Q5_0: f16 d, u32 qh (little-endian; bit i is bit 4 of level i), 16 bytes of nibbles.
        check_type(DType::Q5_0, rng, fix_d0, [](const uint8_t* blk, int i) {
            const uint32_t qh = blk[2] | blk[3] << 8 | blk[4] << 16 | static_cast<uint32_t>(blk[5]) << 24;
            const int byte = blk[6 + i % 16];
            const int q = (i < 16 ? (byte & 15) : (byte >> 4)) + 16 * ((qh >> i) & 1);
            const double v = h(blk) * (q - 16);
            return Expected{v, std::fabs(v)};
        });
        // Q5_1: f16 d, f16 m, u32 qh, 16 bytes of nibbles; no -16, plus m.
        check_type(DType::Q5_1, rng, fix_dm, [](const uint8_t* blk, int i) {
            const uint32_t qh = blk[4] | blk[5] << 8 | blk[6] << 16 | static_cast<uint32_t>(blk[7]) << 24;
            const int byte = blk[8 + i % 16];
            const int q = (i < 16 ? (byte & 15) : (byte >> 4)) + 16 * ((qh >> i) & 1);
            const double a = h(blk) * q, b = h(blk + 2);
            return Expected{a + b, std::fabs(a) + std::fabs(b)};
        });
        // Q8_1: f16 d, f16 s (not part of the values), 32 int8 quants.
        check_type(DType::Q8_1, rng, fix_dm, [](const uint8_t* blk, int i) {
            const double v = h(blk) * static_cast<int8_t>(blk[4 + i]);
            return Expected{v, std::fabs(v)};
        });
        check_type(DType::Q4_K, rng, fix_dmin, [](const uint8_t* blk, int i) {
            const int c = i / 64, l = i % 32, upper = (i % 64) / 32;
            int sc, m;
            k_scale_min(blk + 4, 2 * c + upper, sc, m);
            const int byte = blk[16 + 32 * c + l];
            const int q = upper ? byte >> 4 : byte & 15;
            const double a = h(blk) * sc * q, b = h(blk + 2) * m;
            return Expected{a - b, std::fabs(a) + std::fabs(b)};
        });
        check_type(DType::Q5_K, rng, fix_dmin, [](const uint8_t* blk, int i) {
            const int c = i / 64, l = i % 32, upper = (i % 64) / 32;
            int sc, m;
            k_scale_min(blk + 4, 2 * c + upper, sc, m);
            const int byte = blk[48 + 32 * c + l];
            const int high = (blk[16 + l] >> (2 * c + upper)) & 1;
            const int q = (upper ? byte >> 4 : byte & 15) + 16 * high;
            const double a = h(blk) * sc * q, b = h(blk + 2) * m;
            return Expected{a - b, std::fabs(a) + std::fabs(b)};
        });
        check_type(
            DType::Q6_K, rng, [&](uint8_t* blk) { put_u16(blk + 208, random_f16(rng, true)); },
            [](const uint8_t* blk, int i) {
                const int half = i / 128, r = i % 128, k = r / 32, l = r % 32;
                const int lbyte = blk[64 * half + l + 32 * (k & 1)];
                const int low = k < 2 ? lbyte & 15 : lbyte >> 4;
                const int high = (blk[128 + 32 * half + l] >> (2 * k)) & 3;
                const int sc = static_cast<int8_t>(blk[192 + i / 16]);
                const double v = h(blk + 208) * sc * ((low | (high << 4)) - 32);
                return Expected{v, std::fabs(v)};
            });
        check_type(
            DType::Q8_K, rng,
            [&](uint8_t* blk) {
                const float d = f16_to_f32(random_f16(rng, true)) * 1.2345f;
                std::memcpy(blk, &d, 4);
            },
            [](const uint8_t* blk, int i) {
                float d;
                std::memcpy(&d, blk, 4);
                const double v = static_cast<double>(d) * static_cast<int8_t>(blk[4 + i]);
                return Expected{v, std::fabs(v)};
            });
    }
}

TEST_CASE("dequantize_row of float types", "[quant][dequantize]") {
    std::mt19937 rng(99);
    std::vector<uint16_t> bits(4096);
    for (auto& b : bits) b = static_cast<uint16_t>(rng());
    std::vector<float> out(bits.size());
    quant::dequantize_row(DType::BF16, bits.data(), out.data(), static_cast<int64_t>(bits.size()));
    for (size_t i = 0; i < bits.size(); ++i) {
        // bf16 is the upper half of an f32
        const uint32_t expect = static_cast<uint32_t>(bits[i]) << 16;
        REQUIRE(fp32_to_bits(out[i]) == expect);
    }
    quant::dequantize_row(DType::F16, bits.data(), out.data(), static_cast<int64_t>(bits.size()));
    for (size_t i = 0; i < bits.size(); ++i) {
        const float ref = f16_to_f32_portable(bits[i]);
        if (std::isnan(ref)) REQUIRE(std::isnan(out[i]));
        else REQUIRE(out[i] == ref);
    }
}

TEST_CASE("row conversions reject bad lengths and types", "[quant][errors]") {
    std::vector<float> f(512);
    std::vector<uint8_t> buf(4096);
    auto status_of = [](auto&& fn) {
        try {
            fn();
        } catch (const Error& e) {
            return e.status();
        }
        return INLAY_OK;
    };
    for (DType t : kAllTypes) {
        const int64_t block = dtype_traits(t).block_elems;
        INFO(dtype_name(t));
        REQUIRE(status_of([&] { quant::quantize_row(t, f.data(), buf.data(), -block); }) == INLAY_ERR_INVALID_ARGUMENT);
        REQUIRE(status_of([&] { quant::quantize_row(t, f.data(), buf.data(), 0); }) == INLAY_OK);
        REQUIRE(status_of([&] { quant::dequantize_row(t, nullptr, f.data(), block); }) == INLAY_ERR_INVALID_ARGUMENT);
        if (block > 1) {
            REQUIRE(status_of([&] { quant::quantize_row(t, f.data(), buf.data(), block + 1); }) ==
                    INLAY_ERR_INVALID_ARGUMENT);
            REQUIRE(status_of([&] { quant::dequantize_row(t, buf.data(), f.data(), block / 2); }) ==
                    INLAY_ERR_INVALID_ARGUMENT);
        }
    }
    const auto bogus = static_cast<DType>(77);
    REQUIRE(status_of([&] { quant::quantize_row(bogus, f.data(), buf.data(), 32); }) == INLAY_ERR_INVALID_ARGUMENT);
    REQUIRE(status_of([&] { quant::dequantize_row(bogus, buf.data(), f.data(), 32); }) == INLAY_ERR_INVALID_ARGUMENT);
}
