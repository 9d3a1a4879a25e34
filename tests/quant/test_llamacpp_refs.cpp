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
// With llama.cpp's quantizer (tools/llamacpp's llamacpp-quantize, llama_model_quantize of
// llama.cpp's prebuilt library), its Q4_1, Q5_0 and Q5_1 conversions of the same models
// are checked byte for byte too, and so are its conversions of a random SmolLM2-135M-
// shaped file (rows of 576, not a multiple of 256) that make_tiny_gguf.py writes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/half.h"
#include "io/gguf_reader.h"
#include "quant/quantize.h"
#include "quant/vec_dot.h"
#include "quant_test_util.h"
#include "support/llamacpp.h"
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
        // Q4_1 / Q5_1 take the weights' offset m through the activations' f16 s = d * sum(q):
        // their exact value has m * s where the float64 dot has m * d * sum(q).
        if (w.type == DType::Q4_1 || w.type == DType::Q5_1) {
            const size_t wb = dtype_traits(w.type).block_bytes;
            for (int64_t b = 0; b < n / 32; ++b) {
                const uint8_t* wblk = row_ptr(w, r) + static_cast<size_t>(b) * wb;
                const uint8_t* xblk = xq.u8() + static_cast<size_t>(b) * 36;
                int sum = 0;
                for (int i = 0; i < 32; ++i) sum += static_cast<int8_t>(xblk[4 + i]);
                const double m = f16_to_f32(get_u16(wblk + 2)), s = f16_to_f32(get_u16(xblk + 2));
                expect += m * (s - f16_to_f32(get_u16(xblk)) * sum);
                abs_sum += std::fabs(m * s);
            }
        }
        // as in test_vec_dot: the float-accumulation bound for float types, 1e-5 otherwise
        const double tol = std::max(1e-5, 2.0 * static_cast<double>(n + 8) * std::ldexp(1.0, -24));
        REQUIRE(std::fabs(got[static_cast<size_t>(r)] - expect) <= tol * abs_sum);
    }
}

// Runs llamacpp-quantize; REQUIREs success.
void llamacpp_quantize(const std::filesystem::path& in, const std::filesystem::path& out, const std::string& type,
                       int threads) {
    const std::string cmd = "'" + llamacpp_tool("quantize").string() + "' '" + in.string() + "' '" + out.string() + "' " +
                            type + " " + std::to_string(threads) + " > '" + out.string() + ".log' 2>&1";
    INFO(cmd);
    const int rc = std::system(cmd.c_str());
    INFO(read_file(out.string() + ".log"));
    REQUIRE(rc == 0);
}

// A random f16 model of SmolLM2-135M's shape (rows of 576 and 1536; kSmolLayers layers,
// a smaller vocabulary to keep it quick), written once per run by make_tiny_gguf.py.
constexpr int kSmolLayers = 8;
std::filesystem::path smollm_f16() {
    static const std::filesystem::path path = [] {
        const auto p = scratch_dir("quant_llamacpp_smollm_source") / "smollm-f16.gguf";
        make_tiny_gguf(p, "--preset smollm-135m --dtype f16 --tied --vocab 8192 --layers " + std::to_string(kSmolLayers));
        return p;
    }();
    return path;
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

namespace {

// Compares every row of `t` (a tensor of a llama-quantize output) with quantize_row of
// the f32 values `source_row(r)` gives; returns the number of rows compared.
template <class SourceRow>
int64_t compare_rows(const TensorView& t, SourceRow source_row) {
    const int64_t n = t.row_length();
    const size_t rb = *row_bytes(t.type, n);
    REQUIRE(t.row_stride() == rb);
    Bytes ours(rb);
    std::vector<float> x(static_cast<size_t>(n));
    for (int64_t r = 0; r < t.n_rows(); ++r) {
        source_row(r, x.data());
        quant::quantize_row(t.type, x.data(), ours.data(), n);
        if (std::memcmp(ours.data(), row_ptr(t, r), rb) != 0) {
            FAIL_CHECK(t.name << " (" << dtype_name(t.type) << ") row " << r << " differs from llama-quantize's");
            return r;
        }
    }
    return t.n_rows();
}

}  // namespace

TEST_CASE("llama-quantize's Q4_1, Q5_0 and Q5_1 files agree with our codecs", "[quant][llamacpp][peer]") {
    INLAY_REQUIRE_LLAMACPP_OR_SKIP();
    const auto dir = scratch_dir("quant_llamacpp_legacy");
    std::mt19937 rng(9);
    for (const char* model : kModels) {
        const auto f32_path = testdata(std::string("llamacpp-refs/") + model + "-f32.gguf");
        INLAY_REQUIRE_FILE_OR_SKIP(f32_path);
        const auto source = GgufFile::open(f32_path.string());
        for (const auto& [name, type] :
             {std::pair{"Q4_1", DType::Q4_1}, {"Q5_0", DType::Q5_0}, {"Q5_1", DType::Q5_1}}) {
            const auto out = dir / (std::string(model) + "-" + name + ".gguf");
            llamacpp_quantize(f32_path, out, name, 1);
            const auto file = GgufFile::open(out.string());
            int tensors = 0;
            for (const TensorView& t : file->tensors()) {
                if (t.type != type) continue;  // norms stay f32, the output matrix becomes Q6_K
                INFO(model << " " << name << ": " << t.name);
                const TensorView& src = source->require(t.name);
                REQUIRE(src.ne == t.ne);
                REQUIRE(compare_rows(t, [&](int64_t r, float* x) {
                            std::memcpy(x, f32_row(src, r), static_cast<size_t>(t.row_length()) * sizeof(float));
                        }) == t.n_rows());
                check_kernel_on(t, src, std::min<int64_t>(t.n_rows(), 16), rng);
                ++tensors;
            }
            WARN(model << " " << name << ": " << tensors << " tensors byte-identical to llama-quantize's");
            CHECK(tensors >= 10);
        }
    }
}

// A random SmolLM2-135M-shaped model (rows of 576, not a multiple of 256) as f16 and as
// llama-quantize's Q4_K_M of that file, which falls back to Q5_0 (for Q4_K) and Q8_0 (for
// Q6_K) there. The f16 values sit on a coarse grid, so x / d often lands exactly on a
// rounding tie: this catches any fused multiply-add in our quantizers.
TEST_CASE("SmolLM2-135M Q4_K_M: llama-quantize's Q5_0 and Q8_0 tensors equal our quantize_row",
          "[quant][llamacpp][models]") {
    INLAY_REQUIRE_LLAMACPP_OR_SKIP();
    const std::filesystem::path source_path = smollm_f16();
    const std::filesystem::path q_path = scratch_dir("quant_llamacpp_smollm_q4_k_m") / "smollm-q4_k_m.gguf";
    llamacpp_quantize(source_path, q_path, "Q4_K_M", 2);
    const auto source = GgufFile::open(source_path.string());
    const auto file = GgufFile::open(q_path.string());
    std::mt19937 rng(10);
    std::map<std::string, int> tensors;
    for (const TensorView& t : file->tensors()) {
        if (t.type != DType::Q5_0 && t.type != DType::Q8_0) continue;
        const TensorView& src = source->require(t.name);
        INFO(t.name << " (" << dtype_name(t.type) << ")");
        REQUIRE(src.type == DType::F16);
        REQUIRE(src.ne == t.ne);
        const size_t src_rb = *row_bytes(DType::F16, t.row_length());
        REQUIRE(compare_rows(t, [&](int64_t r, float* x) {
                    quant::dequantize_row(DType::F16, src.data + static_cast<size_t>(r) * src_rb, x, t.row_length());
                }) == t.n_rows());
        check_kernel_on(t, src, std::min<int64_t>(t.n_rows(), 8), rng);
        ++tensors[std::string(dtype_name(t.type))];
    }
    WARN("smollm-q4_k_m tensors byte-identical to llama-quantize's: q5_0 " << tensors["q5_0"] << ", q8_0 "
                                                                           << tensors["q8_0"]);
    REQUIRE(tensors["q5_0"] > 0);
}

TEST_CASE("llama-quantize's Q5_0 of SmolLM2-135M's f16 file equals our quantize_row",
          "[quant][llamacpp][peer][models]") {
    INLAY_REQUIRE_LLAMACPP_OR_SKIP();
    const std::filesystem::path source_path = smollm_f16();
    const auto out = scratch_dir("quant_llamacpp_smollm") / "smollm-q5_0.gguf";
    llamacpp_quantize(source_path, out, "Q5_0", 2);
    const auto source = GgufFile::open(source_path.string());
    const auto file = GgufFile::open(out.string());
    int tensors = 0;
    for (const TensorView& t : file->tensors()) {
        if (t.type != DType::Q5_0) continue;
        const TensorView& src = source->require(t.name);
        INFO(t.name);
        const size_t src_rb = *row_bytes(DType::F16, t.row_length());
        REQUIRE(compare_rows(t, [&](int64_t r, float* x) {
                    quant::dequantize_row(DType::F16, src.data + static_cast<size_t>(r) * src_rb, x, t.row_length());
                }) == t.n_rows());
        ++tensors;
    }
    WARN("smollm Q5_0: " << tensors << " tensors byte-identical to llama-quantize's");
    REQUIRE(tensors >= 7 * kSmolLayers);  // every matrix of every layer (210 of the 30-layer model)
}
