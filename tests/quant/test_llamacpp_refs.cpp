// Against llama.cpp: ../shared/testdata/llamacpp-refs holds one random f32 model per
// architecture and llama-quantize's conversions of it. For every tensor of every
// converted file, compared with the same tensor of the f32 file:
//   Q8_0 / Q4_0 / Q1_0: our quantize_row gives llama.cpp's blocks byte for byte;
//   F16 / BF16 / F32:   the stored values are the f32 source rounded (and our
//                       quantize_row writes the same bits);
//   Q4_K / Q5_K / Q6_K: dequantize_row(llama.cpp's blocks) is within the format's
//                       error of the source, and our own quantizer's error on the same
//                       rows is no worse than 1.02x llama.cpp's;
// and the dot kernels on llama.cpp's blocks match a float64 dot of their dequantization.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/half.h"
#include "io/gguf_reader.h"
#include "quant/quantize.h"
#include "quant/vec_dot.h"
#include "quant_test_util.h"
#include "support/test_paths.h"

using namespace inlay;
using namespace inlay::test;

namespace {

const char* const kModels[] = {"llama-r256", "qwen3-r256"};
const char* const kVariants[] = {"f16", "bf16", "q8_0", "q4_0", "q1_0", "q4_k_m", "q6_k"};

const uint8_t* row_ptr(const TensorView& t, int64_t r) {
    return reinterpret_cast<const uint8_t*>(t.data) + static_cast<size_t>(r) * t.row_stride();
}

const float* f32_row(const TensorView& t, int64_t r) {
    return static_cast<const float*>(static_cast<const void*>(row_ptr(t, r)));
}

// Relative RMS error bound of llama.cpp's K-quants on Gaussian-like weights (its
// measured values on these files are below 0.09 / 0.045 / 0.025).
double k_quant_bound(DType t) {
    switch (t) {
        case DType::Q4_K: return 0.10;
        case DType::Q5_K: return 0.05;
        case DType::Q6_K: return 0.03;
        default: return 0.0;
    }
}

// float64 dot of dequantized rows vs the fast kernel, for `rows` rows of `w`.
void check_kernel_on(const TensorView& w, const TensorView& src, int64_t rows, std::mt19937& rng) {
    const int64_t n = w.row_length();
    const DType act = quant::vec_dot_type(w.type);
    std::normal_distribution<float> normal;
    std::vector<float> x(static_cast<size_t>(n)), xd(static_cast<size_t>(n)), wd(static_cast<size_t>(n));
    for (auto& v : x) v = normal(rng);
    Bytes xq(*row_bytes(act, n));
    quant::quantize_activations(act, x.data(), xq.data(), n);
    quant::dequantize_row(act, xq.data(), xd.data(), n);
    std::vector<float> got(static_cast<size_t>(rows));
    quant::vec_dot_rows(w.type, n, rows, got.data(), w.data, w.row_stride(), xq.data());
    for (int64_t r = 0; r < rows; ++r) {
        quant::dequantize_row(w.type, row_ptr(w, r), wd.data(), n);
        double expect = 0, abs_sum = 0;
        for (size_t i = 0; i < wd.size(); ++i) {
            expect += static_cast<double>(wd[i]) * xd[i];
            abs_sum += std::fabs(static_cast<double>(wd[i]) * xd[i]);
        }
        INFO(src.name << " row " << r);
        // as in test_vec_dot: the float-accumulation bound for float types, 1e-5 otherwise
        const double tol = std::max(1e-5, 2.0 * static_cast<double>(n + 8) * std::ldexp(1.0, -24));
        REQUIRE(std::fabs(got[static_cast<size_t>(r)] - expect) <= tol * abs_sum);
    }
}

}  // namespace

TEST_CASE("llama.cpp's quantized files agree with our codecs", "[quant][llamacpp]") {
    std::mt19937 rng(8);
    for (const char* model : kModels) {
        const auto f32_path = testdata(std::string("llamacpp-refs/") + model + "-f32.gguf");
        INLAY_REQUIRE_FILE_OR_SKIP(f32_path);
        const auto source = GgufFile::open(f32_path.string());
        std::map<std::string, int> checked;      // "variant type" -> tensors
        std::map<std::string, double> worst_ratio;  // K-quant type -> max of our RMS error / llama.cpp's
        for (const char* variant : kVariants) {
            const auto path = testdata(std::string("llamacpp-refs/") + model + "-" + variant + ".gguf");
            INLAY_REQUIRE_FILE_OR_SKIP(path);
            const auto file = GgufFile::open(path.string());
            for (const TensorView& t : file->tensors()) {
                const TensorView& src = source->require(t.name);
                INFO(path.filename().string() << ": " << t.name << " (" << dtype_name(t.type) << ")");
                REQUIRE(src.type == DType::F32);
                REQUIRE(src.ne == t.ne);
                const int64_t n = t.row_length();
                const size_t rb = *row_bytes(t.type, n);
                REQUIRE(t.row_stride() == rb);
                Bytes ours(rb);
                std::vector<float> deq(static_cast<size_t>(n));
                double sq_err = 0, sq_val = 0, sq_ours = 0;
                for (int64_t r = 0; r < t.n_rows(); ++r) {
                    const float* x = f32_row(src, r);
                    quant::dequantize_row(t.type, row_ptr(t, r), deq.data(), n);
                    switch (t.type) {
                        case DType::F32:
                        case DType::F16:
                        case DType::BF16:
                        case DType::Q8_0:
                        case DType::Q4_0:
                        case DType::Q1_0:
                            quant::quantize_row(t.type, x, ours.data(), n);
                            REQUIRE(std::memcmp(ours.data(), row_ptr(t, r), rb) == 0);
                            break;
                        default: {
                            std::vector<float> mine(static_cast<size_t>(n));
                            quant::quantize_row(t.type, x, ours.data(), n);
                            quant::dequantize_row(t.type, ours.data(), mine.data(), n);
                            for (size_t i = 0; i < deq.size(); ++i) {
                                sq_err += (static_cast<double>(deq[i]) - x[i]) * (static_cast<double>(deq[i]) - x[i]);
                                sq_ours += (static_cast<double>(mine[i]) - x[i]) * (static_cast<double>(mine[i]) - x[i]);
                                sq_val += static_cast<double>(x[i]) * x[i];
                            }
                            break;
                        }
                    }
                    // Independent of our encoder: the stored floats are the source rounded.
                    for (size_t i = 0; i < deq.size() && (t.type == DType::F16 || t.type == DType::BF16); ++i) {
                        const float rounded = t.type == DType::F16 ? f16_to_f32_portable(f32_to_f16_portable(x[i]))
                                                                   : bf16_to_f32(f32_to_bf16(x[i]));
                        REQUIRE(deq[i] == rounded);
                    }
                }
                if (sq_val > 0) {
                    const double rel = std::sqrt(sq_err / sq_val);
                    const double rel_ours = std::sqrt(sq_ours / sq_val);
                    INFO("llama.cpp relative RMS error " << rel << ", ours " << rel_ours);
                    REQUIRE(rel <= k_quant_bound(t.type));
                    REQUIRE(rel_ours <= 1.02 * rel);
                    auto& worst = worst_ratio[std::string(dtype_name(t.type))];
                    worst = std::max(worst, rel_ours / rel);
                }
                if (t.type != DType::F32) check_kernel_on(t, src, std::min<int64_t>(t.n_rows(), 16), rng);
                ++checked[std::string(variant) + " " + std::string(dtype_name(t.type))];
            }
        }
        std::string summary;
        for (const auto& [k, v] : checked) summary += k + ":" + std::to_string(v) + " ";
        for (const auto& [k, v] : worst_ratio) summary += "| " + k + " worst RMS error ours/llama.cpp " + std::to_string(v) + " ";
        WARN(model << " tensors checked: " << summary);
        REQUIRE(checked["q8_0 q8_0"] > 0);
        REQUIRE(checked["q4_0 q4_0"] > 0);
        REQUIRE(checked["q1_0 q1_0"] > 0);
        REQUIRE(checked["q4_k_m q4_K"] > 0);
        REQUIRE(checked["q6_k q6_K"] > 0);
    }
}
