// Float64 references for the GPU kernel tests, written from the format definitions in
// shared/docs/formats.md (not from the kernels), plus the random inputs they run on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "inlay_cuda_kernels.h"

namespace inlay::cuda::test {

using Rng = std::mt19937_64;

// IEEE binary16 <-> double (round to nearest even on the way in).
double f16_to_double(uint16_t h);
uint16_t double_to_f16(double x);
// bfloat16 is the upper half of a binary32.
double bf16_to_double(uint16_t h);

// A random row of n_cols weights in `format`: every field random, the f16 scales finite
// and of moderate size (so that the dequantized values are O(1)).
std::vector<uint8_t> random_row(WeightFormat format, int64_t n_cols, Rng& rng);

// The n_cols values of a stored row.
std::vector<double> dequantize_row(WeightFormat format, const uint8_t* row, int64_t n_cols);

// Uniform floats in [lo, hi).
std::vector<float> uniform(size_t n, float lo, float hi, Rng& rng);

// The seed of a test case: INLAY_TEST_SEED if set, else fresh from std::random_device.
uint64_t test_seed();

}  // namespace inlay::cuda::test
