// Helpers of the backend conformance suite: every test there is a template over the
// backend, run for each backend this build has (INLAY_TEST_BACKENDS), with data moved
// only through the concept's write/read so that a device backend runs the same code.
// The CPU backend is checked against float64 computations written out in the tests;
// every other backend against those and against the CPU backend, within its contract.
#pragma once

#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "backend/concepts.h"
#include "backend/cpu/cpu_backend.h"
#ifdef INLAY_TEST_CUDA
#include "backend/cuda/cuda_backend.h"
#endif
#include "core/error.h"
#include "quant/quantize.h"

namespace inlay::test {

// The backends the conformance templates are instantiated for: the CPU here; the GPU
// conformance program (tests/cuda_gpu) compiles the same tests for the CUDA backend.
#ifndef INLAY_TEST_BACKENDS
#define INLAY_TEST_BACKENDS ::inlay::CpuBackend
#endif

template <class B>
struct BackendFactory;

template <>
struct BackendFactory<CpuBackend> {
    static std::unique_ptr<CpuBackend> make(int n_threads = 2) { return std::make_unique<CpuBackend>(n_threads); }
};

#ifdef INLAY_TEST_CUDA
template <>
struct BackendFactory<CudaBackend> {
    static std::unique_ptr<CudaBackend> make(int = 0) { return std::make_unique<CudaBackend>(0); }
};
#endif

inline std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, scale);
    std::vector<float> v(n);
    for (auto& x : v) x = d(rng);
    return v;
}

template <Backend B>
typename B::Buffer upload(B& b, const std::vector<float>& v) {
    auto buf = b.alloc(static_cast<int64_t>(v.size()));
    b.write(buf, 0, v.data(), static_cast<int64_t>(v.size()));
    return buf;
}

template <Backend B>
std::vector<float> download(B& b, const typename B::Buffer& buf, int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    b.read(buf, 0, n, v.data());
    return v;
}

// A weight tensor in `type` made from random f32 values (rows of n_cols), with what the
// stored bytes mean per the format (the exact weights a reference multiplies with).
struct OwnedTensor {
    std::vector<std::byte> bytes;
    TensorView view;
    std::vector<double> dequantized;
};

inline OwnedTensor make_tensor(DType type, int64_t n_cols, int64_t n_rows, uint32_t seed, float scale = 0.5f) {
    OwnedTensor t;
    const auto values = random_floats(static_cast<size_t>(n_cols * n_rows), seed, scale);
    const size_t stride = *row_bytes(type, n_cols);
    t.bytes.resize(stride * static_cast<size_t>(n_rows));
    std::vector<float> back(static_cast<size_t>(n_cols));
    for (int64_t r = 0; r < n_rows; ++r) {
        quant::quantize_row(type, values.data() + r * n_cols, t.bytes.data() + static_cast<size_t>(r) * stride, n_cols);
        quant::dequantize_row(type, t.bytes.data() + static_cast<size_t>(r) * stride, back.data(), n_cols);
        t.dequantized.insert(t.dequantized.end(), back.begin(), back.end());
    }
    t.view.name = "w";
    t.view.type = type;
    t.view.n_dims = n_rows == 1 ? 1 : 2;
    t.view.ne = {n_cols, n_rows, 1, 1};
    t.view.data = t.bytes.data();
    t.view.nbytes = t.bytes.size();
    return t;
}

// An f32 vector tensor holding exactly `values`.
inline OwnedTensor vector_tensor(const std::vector<float>& values) {
    OwnedTensor t;
    t.bytes.resize(values.size() * sizeof(float));
    std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
    t.dequantized.assign(values.begin(), values.end());
    t.view.name = "v";
    t.view.type = DType::F32;
    t.view.n_dims = 1;
    t.view.ne = {static_cast<int64_t>(values.size()), 1, 1, 1};
    t.view.data = t.bytes.data();
    t.view.nbytes = t.bytes.size();
    return t;
}

// The batch prepared for `kv` (any vocabulary up to 2^20 tokens).
template <Backend B>
typename B::Batch prepare(B& b, const BatchBuilder& builder, const typename B::KvStorage& kv) {
    typename B::Batch batch;
    b.prepare_batch(builder.desc(),
                    BatchLimits{int64_t{1} << 20, kv.geometry().block_size, kv.n_blocks(), builder.n_tokens(),
                                builder.n_logit_rows()},
                    batch);
    return batch;
}

inline inlay_status status_of(auto&& fn) {
    try {
        fn();
        return INLAY_OK;
    } catch (const Error& e) {
        return e.status();
    }
}

}  // namespace inlay::test
