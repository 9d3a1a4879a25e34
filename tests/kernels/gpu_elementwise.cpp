// rms_norm, add_rms_norm, swiglu and swiglu_fused against float64.
// UNVERIFIED until run on a GPU (see gpu_main.cpp).
#include <cmath>
#include <vector>

#include "gpu_util.h"
#include "inlay_cuda_kernels.h"
#include "reference.h"

using namespace inlay::cuda;
using namespace inlay::cuda::test;

namespace {

// RMSNorm: the f32 sum of n squares (about n/256 sequential fmaf per thread, then 5 + 8
// additions) is within (n/256 + 16) * 2^-24 relative of exact; sqrt, the division and
// the two products add a few 2^-24 more. 1e-5 relative covers n <= 8192 with room.
constexpr double kNormRel = 1e-5;
// silu(g) * u in f32: expf (2 ulp), 1 + e, the division and the product (1/2 ulp each):
// well within 1e-6 relative.
constexpr double kSiluRel = 1e-6;

double silu_ref(double g) {
    return g / (1.0 + std::exp(-g));
}

}  // namespace

TEST_CASE("rms_norm and add_rms_norm", "[kernels][gpu][norm]") {
    const uint64_t seed = test_seed();
    INFO("seed " << seed);
    Rng rng(seed);
    for (int64_t n_cols : {4096, 1030, 3, 8192})
        for (bool add : {false, true})
            for (bool in_place : {false, true}) {
                INFO(n_cols << " columns, " << (add ? "add_rms_norm" : "rms_norm") << (in_place ? ", in place" : ""));
                const int64_t n_rows = 5, x_stride = n_cols + 4, y_stride = n_cols + 8;
                const int64_t out_stride = in_place ? x_stride : n_cols + 12;
                const float eps = 1e-6f;
                const std::vector<float> x = uniform(static_cast<size_t>(n_rows * x_stride), -2.0f, 2.0f, rng);
                const std::vector<float> y = uniform(static_cast<size_t>(n_rows * y_stride), -2.0f, 2.0f, rng);
                const std::vector<float> w = uniform(static_cast<size_t>(n_cols), 0.5f, 1.5f, rng);
                DeviceBytes d_x = upload(x), d_y = upload(y), d_w = upload(w);
                DeviceBytes d_out(sizeof(float) * static_cast<size_t>(n_rows * out_stride));
                float* out = in_place ? d_x.as<float>() : d_out.as<float>();
                if (!in_place) d_out.poison();
                if (add)
                    CUDA_REQUIRE(add_rms_norm(d_x.as<float>(), x_stride, d_y.as<float>(), y_stride, d_w.as<float>(),
                                              n_rows, n_cols, eps, out, out_stride, nullptr));
                else
                    CUDA_REQUIRE(rms_norm(d_x.as<float>(), x_stride, d_w.as<float>(), n_rows, n_cols, eps, out,
                                          out_stride, nullptr));
                sync_ok();
                const std::vector<float> gx = download<float>(d_x);
                const std::vector<float> go = in_place ? gx : download<float>(d_out);
                int bad = 0;
                for (int64_t r = 0; r < n_rows; ++r) {
                    std::vector<double> v(static_cast<size_t>(n_cols));
                    double ss = 0.0;
                    for (int64_t c = 0; c < n_cols; ++c) {
                        double xv = x[static_cast<size_t>(r * x_stride + c)];
                        if (add) {
                            xv += y[static_cast<size_t>(r * y_stride + c)];
                            // x is updated in place: the f32 sum, one rounding.
                            if (!in_place) {
                                const double gxv = gx[static_cast<size_t>(r * x_stride + c)];
                                if (!(std::fabs(gxv - xv) <= std::ldexp(std::fabs(xv), -24)) && bad++ < 5)
                                    FAIL_CHECK("x row " << r << " col " << c << ": " << gxv << " vs " << xv);
                            }
                        }
                        v[static_cast<size_t>(c)] = xv;
                        ss += xv * xv;
                    }
                    const double scale = 1.0 / std::sqrt(ss / static_cast<double>(n_cols) + eps);
                    for (int64_t c = 0; c < out_stride; ++c) {
                        const float g = go[static_cast<size_t>(r * out_stride + c)];
                        if (c >= n_cols) {
                            if (!in_place && !is_poison(g) && bad++ < 5) FAIL_CHECK("padding written: row " << r);
                            continue;
                        }
                        const double ref = v[static_cast<size_t>(c)] * scale * w[static_cast<size_t>(c)];
                        if (!(std::fabs(g - ref) <= kNormRel * std::fabs(ref)) && bad++ < 5)
                            FAIL_CHECK("row " << r << " col " << c << ": " << g << " vs " << ref);
                    }
                }
                CHECK(bad == 0);
            }
}

TEST_CASE("swiglu on two buffers", "[kernels][gpu][swiglu]") {
    const uint64_t seed = test_seed();
    INFO("seed " << seed);
    Rng rng(seed);
    for (int64_t n : {10007, 4096, 1})
        for (int64_t offset : {0, 1}) {  // offset 1: not 16-byte aligned, the scalar path
            INFO(n << " elements, offset " << offset);
            const std::vector<float> g = uniform(static_cast<size_t>(n + 1), -20.0f, 20.0f, rng);
            const std::vector<float> u = uniform(static_cast<size_t>(n + 1), -3.0f, 3.0f, rng);
            DeviceBytes d_g = upload(g), d_u = upload(u);
            CUDA_REQUIRE(swiglu(d_g.as<float>() + offset, d_u.as<float>() + offset, n, nullptr));
            sync_ok();
            const std::vector<float> out = download<float>(d_g);
            int bad = 0;
            for (int64_t i = 0; i < n + 1; ++i) {
                const auto k = static_cast<size_t>(i);
                const bool inside = i >= offset && i < offset + n;
                const double ref = inside ? silu_ref(g[k]) * u[k] : g[k];
                const double tol = inside ? kSiluRel * std::fabs(ref) + 1e-37 : 0.0;
                if (!(std::fabs(out[k] - ref) <= tol) && bad++ < 5)
                    FAIL_CHECK("element " << i << ": " << out[k] << " vs " << ref);
            }
            CHECK(bad == 0);
        }
}

TEST_CASE("add: x += y, bitwise the f32 sum, nothing outside [0, n) touched", "[kernels][gpu][add]") {
    const uint64_t seed = test_seed();
    INFO("seed " << seed);
    Rng rng(seed);
    for (int64_t n : {int64_t{1} << 20, int64_t{10007}, int64_t{1}}) {
        INFO(n << " elements");
        const std::vector<float> x = uniform(static_cast<size_t>(n + 1), -100.0f, 100.0f, rng);
        const std::vector<float> y = uniform(static_cast<size_t>(n + 1), -1.0f, 1.0f, rng);
        DeviceBytes d_x = upload(x), d_y = upload(y);
        CUDA_REQUIRE(add(d_x.as<float>(), d_y.as<float>(), n, nullptr));
        sync_ok();
        const std::vector<float> out = download<float>(d_x);
        int bad = 0;
        for (int64_t i = 0; i < n + 1; ++i) {
            const auto k = static_cast<size_t>(i);
            const float ref = i < n ? x[k] + y[k] : x[k];
            if (!(out[k] == ref) && bad++ < 5) FAIL_CHECK("element " << i << ": " << out[k] << " vs " << ref);
        }
        CHECK(bad == 0);
    }
}

TEST_CASE("swiglu_fused on one [gate | up] buffer", "[kernels][gpu][swiglu]") {
    const uint64_t seed = test_seed();
    INFO("seed " << seed);
    Rng rng(seed);
    for (bool in_place : {false, true}) {
        INFO((in_place ? "in place" : "separate output"));
        const int64_t n_tokens = 3, n_ff = 1000, in_stride = 2 * n_ff + 8;
        const int64_t out_stride = in_place ? in_stride : n_ff + 3;
        const std::vector<float> gu = uniform(static_cast<size_t>(n_tokens * in_stride), -12.0f, 12.0f, rng);
        DeviceBytes d_gu = upload(gu);
        DeviceBytes d_out(sizeof(float) * static_cast<size_t>(n_tokens * out_stride));
        if (!in_place) d_out.poison();
        float* out = in_place ? d_gu.as<float>() : d_out.as<float>();
        CUDA_REQUIRE(swiglu_fused(d_gu.as<float>(), in_stride, n_tokens, n_ff, out, out_stride, nullptr));
        sync_ok();
        const std::vector<float> got = download<float>(in_place ? d_gu : d_out);
        int bad = 0;
        for (int64_t t = 0; t < n_tokens; ++t)
            for (int64_t j = 0; j < out_stride; ++j) {
                const float g = got[static_cast<size_t>(t * out_stride + j)];
                if (j >= n_ff) {
                    // in place: the up half and the padding are untouched; else: poison
                    const bool ok = in_place ? g == gu[static_cast<size_t>(t * in_stride + j)] : is_poison(g);
                    if (!ok && bad++ < 5) FAIL_CHECK("written outside: token " << t << " col " << j);
                    continue;
                }
                const double ref = silu_ref(gu[static_cast<size_t>(t * in_stride + j)]) *
                                   gu[static_cast<size_t>(t * in_stride + n_ff + j)];
                if (!(std::fabs(g - ref) <= kSiluRel * std::fabs(ref) + 1e-37) && bad++ < 5)
                    FAIL_CHECK("token " << t << " col " << j << ": " << g << " vs " << ref);
            }
        CHECK(bad == 0);
    }
}
