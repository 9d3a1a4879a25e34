// Float64 references for the GPU kernel tests (see reference.h).
#include "reference.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

namespace inlay::cuda::test {
namespace {

uint16_t u16(const uint8_t* p) {
    return static_cast<uint16_t>(p[0] | (p[1] << 8));
}

void put_u16(uint8_t* p, uint16_t v) {
    p[0] = static_cast<uint8_t>(v & 0xff);
    p[1] = static_cast<uint8_t>(v >> 8);
}

// A positive or negative f16 scale of magnitude in [lo, hi).
uint16_t random_scale(Rng& rng, double lo, double hi, bool allow_negative) {
    std::uniform_real_distribution<double> mag(lo, hi);
    double d = mag(rng);
    if (allow_negative && (rng() & 1)) d = -d;
    return double_to_f16(d);
}

void fill_random(uint8_t* p, size_t n, Rng& rng) {
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(rng());
}

// The 6-bit scale and min of sub-block j of a Q4_K/Q5_K super-block (formats.md).
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

double f16_to_double(uint16_t h) {
    const int sign = h >> 15, exp = (h >> 10) & 31, man = h & 1023;
    double v;
    if (exp == 0)
        v = std::ldexp(man, -24);
    else if (exp == 31)
        v = man ? NAN : INFINITY;
    else
        v = std::ldexp(1024 + man, exp - 25);
    return sign ? -v : v;
}

uint16_t double_to_f16(double x) {
    // Exact for the values used here: rounds |x| to the f16 grid with nearest-even.
    uint16_t sign = std::signbit(x) ? 0x8000 : 0;
    double a = std::fabs(x);
    if (std::isnan(x)) return 0x7e00;
    if (a >= 65520.0) return static_cast<uint16_t>(sign | 0x7c00);
    int e;
    std::frexp(a, &e);         // a = f * 2^e, f in [0.5, 1)
    int exp = e - 1;           // a in [2^exp, 2^(exp+1))
    if (exp < -14) exp = -14;  // subnormal spacing 2^-24
    const double ulp = std::ldexp(1.0, exp - 10);
    double q = std::nearbyint(a / ulp);  // nearest even (default rounding mode)
    double r = q * ulp;
    if (r >= 65520.0) return static_cast<uint16_t>(sign | 0x7c00);
    // Re-encode r.
    if (r < std::ldexp(1.0, -14)) return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::ldexp(r, 24)));
    std::frexp(r, &e);
    const int be = e - 1 + 15;
    const int man = static_cast<int>(std::ldexp(r, -(e - 1)) * 1024.0) - 1024;
    return static_cast<uint16_t>(sign | (be << 10) | man);
}

double bf16_to_double(uint16_t h) {
    const uint32_t bits = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

std::vector<uint8_t> random_row(WeightFormat format, int64_t n_cols, Rng& rng) {
    const int64_t elems = weight_block_elems(format), bytes = weight_block_bytes(format);
    const int64_t n_blocks = n_cols / elems;  // floats: elems == 1
    std::vector<uint8_t> row(static_cast<size_t>(n_blocks * bytes));
    std::uniform_real_distribution<float> val(-1.0f, 1.0f);
    for (int64_t b = 0; b < n_blocks; ++b) {
        uint8_t* p = row.data() + b * bytes;
        switch (format) {
            case WeightFormat::f32: {
                const float f = val(rng);
                std::memcpy(p, &f, 4);
                break;
            }
            case WeightFormat::f16:
                put_u16(p, double_to_f16(val(rng)));
                break;
            case WeightFormat::bf16: {
                const float f = val(rng);
                uint32_t bits;
                std::memcpy(&bits, &f, 4);
                put_u16(p, static_cast<uint16_t>(bits >> 16));
                break;
            }
            case WeightFormat::q8_0:  // f16 d; i8 qs[32]
                fill_random(p + 2, 32, rng);
                put_u16(p, random_scale(rng, 1.0 / 256, 1.0 / 64, true));
                break;
            case WeightFormat::q4_0:  // f16 d; u8 qs[16]
                fill_random(p + 2, 16, rng);
                put_u16(p, random_scale(rng, 1.0 / 16, 1.0 / 4, true));
                break;
            case WeightFormat::q1_0:  // f16 d; u8 qs[16]
                fill_random(p + 2, 16, rng);
                put_u16(p, random_scale(rng, 0.01, 1.0, true));
                break;
            case WeightFormat::q4_k:  // f16 d; f16 dmin; u8 scales[12]; u8 qs[128]
                fill_random(p + 4, 140, rng);
                put_u16(p, random_scale(rng, 1.0 / 2048, 1.0 / 256, true));
                put_u16(p + 2, random_scale(rng, 1.0 / 2048, 1.0 / 256, true));
                break;
            case WeightFormat::q5_k:  // f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]
                fill_random(p + 4, 172, rng);
                put_u16(p, random_scale(rng, 1.0 / 4096, 1.0 / 512, true));
                put_u16(p + 2, random_scale(rng, 1.0 / 4096, 1.0 / 512, true));
                break;
            case WeightFormat::q6_k:  // u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d
                fill_random(p, 208, rng);
                put_u16(p + 208, random_scale(rng, 1.0 / 8192, 1.0 / 1024, true));
                break;
        }
    }
    return row;
}

std::vector<double> dequantize_row(WeightFormat format, const uint8_t* row, int64_t n_cols) {
    std::vector<double> x(static_cast<size_t>(n_cols));
    const int64_t elems = weight_block_elems(format), bytes = weight_block_bytes(format);
    for (int64_t b = 0; b < n_cols / elems; ++b) {
        const uint8_t* p = row + b * bytes;
        double* o = x.data() + b * elems;
        switch (format) {
            case WeightFormat::f32: {
                float f;
                std::memcpy(&f, p, 4);
                o[0] = f;
                break;
            }
            case WeightFormat::f16:
                o[0] = f16_to_double(u16(p));
                break;
            case WeightFormat::bf16:
                o[0] = bf16_to_double(u16(p));
                break;
            case WeightFormat::q8_0: {  // x = d * qs[i]
                const double d = f16_to_double(u16(p));
                for (int i = 0; i < 32; ++i) o[i] = d * static_cast<int8_t>(p[2 + i]);
                break;
            }
            case WeightFormat::q4_0: {  // x[i] = d*((qs[i]&15)-8), x[i+16] = d*((qs[i]>>4)-8)
                const double d = f16_to_double(u16(p));
                for (int i = 0; i < 16; ++i) {
                    o[i] = d * ((p[2 + i] & 15) - 8);
                    o[i + 16] = d * ((p[2 + i] >> 4) - 8);
                }
                break;
            }
            case WeightFormat::q1_0: {  // bit (j % 8) of qs[j / 8]: +d or -d
                const double d = f16_to_double(u16(p));
                for (int j = 0; j < 128; ++j) o[j] = ((p[2 + j / 8] >> (j % 8)) & 1) ? d : -d;
                break;
            }
            case WeightFormat::q4_k: {
                const double d = f16_to_double(u16(p)), dmin = f16_to_double(u16(p + 2));
                const uint8_t* sc = p + 4;
                const uint8_t* qs = p + 16;
                for (int c = 0; c < 4; ++c) {
                    int s0, m0, s1, m1;
                    k_scale_min(sc, 2 * c, s0, m0);
                    k_scale_min(sc, 2 * c + 1, s1, m1);
                    for (int l = 0; l < 32; ++l) {
                        o[64 * c + l] = d * s0 * (qs[32 * c + l] & 15) - dmin * m0;
                        o[64 * c + 32 + l] = d * s1 * (qs[32 * c + l] >> 4) - dmin * m1;
                    }
                }
                break;
            }
            case WeightFormat::q5_k: {  // Q4_K plus bit 2c / 2c+1 of qh[l]
                const double d = f16_to_double(u16(p)), dmin = f16_to_double(u16(p + 2));
                const uint8_t* sc = p + 4;
                const uint8_t* qh = p + 16;
                const uint8_t* qs = p + 48;
                for (int c = 0; c < 4; ++c) {
                    int s0, m0, s1, m1;
                    k_scale_min(sc, 2 * c, s0, m0);
                    k_scale_min(sc, 2 * c + 1, s1, m1);
                    for (int l = 0; l < 32; ++l) {
                        const int lo = (qs[32 * c + l] & 15) | (((qh[l] >> (2 * c)) & 1) << 4);
                        const int hi = (qs[32 * c + l] >> 4) | (((qh[l] >> (2 * c + 1)) & 1) << 4);
                        o[64 * c + l] = d * s0 * lo - dmin * m0;
                        o[64 * c + 32 + l] = d * s1 * hi - dmin * m1;
                    }
                }
                break;
            }
            case WeightFormat::q6_k: {  // two halves of 128; x = d * scales[v / 16] * (q - 32)
                const double d = f16_to_double(u16(p + 208));
                const auto* scales = reinterpret_cast<const int8_t*>(p + 192);
                for (int h = 0; h < 2; ++h) {
                    const uint8_t* ql = p + 64 * h;
                    const uint8_t* qh = p + 128 + 32 * h;
                    for (int l = 0; l < 32; ++l) {
                        const int q[4] = {
                            (ql[l] & 15) | (((qh[l] >> 0) & 3) << 4), (ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4),
                            (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4), (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)};
                        for (int r = 0; r < 4; ++r) {
                            const int v = 128 * h + l + 32 * r;
                            o[v] = d * scales[v / 16] * (q[r] - 32);
                        }
                    }
                }
                break;
            }
        }
    }
    return x;
}

std::vector<float> uniform(size_t n, float lo, float hi, Rng& rng) {
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
}

uint64_t test_seed() {
    if (const char* s = std::getenv("INLAY_TEST_SEED")) return std::strtoull(s, nullptr, 0);
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

}  // namespace inlay::cuda::test
