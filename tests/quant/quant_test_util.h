// Helpers shared by the quant tests: random rows and raw blocks, byte buffers.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "core/half.h"

namespace inlay::test {

inline constexpr DType kWeightTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q8_0, DType::Q4_0,
                                         DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q1_0, DType::Q4_K,
                                         DType::Q5_K, DType::Q6_K};
inline constexpr DType kAllTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q8_0, DType::Q8_1,
                                      DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q1_0,
                                      DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q8_K};
// Quantized activation types (vec_dot_type results).
inline constexpr DType kActivationQuantTypes[] = {DType::Q8_0, DType::Q8_1, DType::Q8_K};

inline bool is_float_type(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

// Gaussian values with a per-row scale, plus occasional outliers (as in real weights).
inline std::vector<float> random_row(std::mt19937& rng, int64_t n, float scale = 1.0f) {
    std::normal_distribution<float> normal(0.0f, scale);
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& x : v) {
        x = normal(rng);
        if (unit(rng) < 0.01f) x *= 8.0f;
    }
    return v;
}

// A byte buffer with storage aligned for any block type (Q8_K needs 4 bytes).
struct Bytes {
    std::vector<uint32_t> words;
    size_t size = 0;
    explicit Bytes(size_t n) : words((n + 3) / 4), size(n) {}
    void* data() { return words.data(); }
    [[nodiscard]] const void* data() const { return words.data(); }
    uint8_t* u8() { return static_cast<uint8_t*>(data()); }
    [[nodiscard]] const uint8_t* u8() const { return static_cast<const uint8_t*>(data()); }
    [[nodiscard]] bool operator==(const Bytes& o) const { return size == o.size && std::memcmp(data(), o.data(), size) == 0; }
};

// Random bytes.
inline void fill_random(std::mt19937& rng, uint8_t* p, size_t n) {
    std::uniform_int_distribution<int> byte(0, 255);
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(byte(rng));
}

// A random finite f16 of magnitude in [2^-10, 1) (random sign when `sign`).
inline uint16_t random_f16(std::mt19937& rng, bool sign = false) {
    std::uniform_real_distribution<float> mag(-10.0f, 0.0f);
    float v = std::exp2(mag(rng));
    if (sign && (rng() & 1)) v = -v;
    return f32_to_f16(v);
}

inline void put_u16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }
inline uint16_t get_u16(const uint8_t* p) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
}

}  // namespace inlay::test
