// embed_rows and gemv against float64 dequantization (reference.cpp, from formats.md).
// UNVERIFIED until run on a GPU (see gpu_main.cpp).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "gpu_util.h"
#include "inlay_cuda_kernels.h"
#include "reference.h"

using namespace inlay::cuda;
using namespace inlay::cuda::test;

namespace {

const char* format_name(WeightFormat f) {
    switch (f) {
        case WeightFormat::f32:
            return "f32";
        case WeightFormat::f16:
            return "f16";
        case WeightFormat::bf16:
            return "bf16";
        case WeightFormat::q8_0:
            return "q8_0";
        case WeightFormat::q4_0:
            return "q4_0";
        case WeightFormat::q4_k:
            return "q4_k";
        case WeightFormat::q5_k:
            return "q5_k";
        case WeightFormat::q6_k:
            return "q6_k";
        case WeightFormat::q1_0:
            return "q1_0";
    }
    return "?";
}

const WeightFormat kFormats[] = {WeightFormat::f32,  WeightFormat::f16,  WeightFormat::bf16,
                                 WeightFormat::q8_0, WeightFormat::q4_0, WeightFormat::q4_k,
                                 WeightFormat::q5_k, WeightFormat::q6_k, WeightFormat::q1_0};

// Column counts per format: a small one and a large one (for f32/f16/bf16 not a multiple
// of the 16-byte unit, so the row tail path runs).
std::vector<int64_t> test_cols(WeightFormat f) {
    switch (weight_block_elems(f)) {
        case 1:
            return {263, 2052};
        case 32:
            return {96, 2048};
        case 128:
            return {384, 2048};
        default:
            return {768, 2048};
    }
}

// A table of random rows with row_stride = row bytes + pad; aligned = 16-byte multiple
// stride (16-byte loads where the format allows), otherwise only the element alignment.
struct Table {
    int64_t n_rows = 0, n_cols = 0;
    size_t row_stride = 0;
    std::vector<uint8_t> bytes;
    std::vector<std::vector<double>> values;  // dequantized, [row][col]
};

Table make_table(WeightFormat f, int64_t n_rows, int64_t n_cols, bool aligned, Rng& rng) {
    Table t;
    t.n_rows = n_rows;
    t.n_cols = n_cols;
    const size_t row_bytes =
        weight_block_elems(f) == 1 ? static_cast<size_t>(n_cols * weight_block_bytes(f)) : weight_row_bytes(f, n_cols);
    const size_t elem_align = f == WeightFormat::f32 ? 4 : 2;
    if (aligned) {
        t.row_stride = (row_bytes + 15) / 16 * 16;
    } else {
        t.row_stride = row_bytes + elem_align;
        if (t.row_stride % 16 == 0) t.row_stride += elem_align;
    }
    t.bytes.resize(t.row_stride * static_cast<size_t>(n_rows));
    for (uint8_t& b : t.bytes) b = static_cast<uint8_t>(rng());  // padding included
    for (int64_t r = 0; r < n_rows; ++r) {
        const std::vector<uint8_t> row = random_row(f, n_cols, rng);
        std::copy(row.begin(), row.end(), t.bytes.begin() + static_cast<std::ptrdiff_t>(r * t.row_stride));
        t.values.push_back(dequantize_row(f, row.data(), n_cols));
    }
    return t;
}

// Q4_K/Q5_K values are one fused multiply-add (d*sc*q - dmin*m) rounded once to f32:
// within 2^-24 relative (we allow 2^-23). Every other format's value is an exact f32
// (f16/bf16/f32 elements; d * level products of at most 24 significant bits).
double embed_tolerance(WeightFormat f, double ref) {
    return f == WeightFormat::q4_k || f == WeightFormat::q5_k ? std::ldexp(std::fabs(ref), -23) : 0.0;
}

}  // namespace

TEST_CASE("embed_rows dequantizes rows of every format", "[kernels][gpu][embed]") {
    const uint64_t seed = test_seed();
    INFO("seed " << seed);
    Rng rng(seed);
    for (WeightFormat f : kFormats)
        for (int64_t n_cols : test_cols(f))
            for (bool aligned : {true, false}) {
                INFO(format_name(f) << ", " << n_cols << " columns, " << (aligned ? "aligned" : "narrow") << " rows");
                const Table table = make_table(f, 19, n_cols, aligned, rng);
                std::vector<int32_t> ids = {3, 0, 18, 7, 7, 11, -1, 25, 2};  // -1 and 25 are clamped
                const int64_t n_tokens = static_cast<int64_t>(ids.size());
                const int64_t out_stride = n_cols + 5;
                DeviceBytes d_table = upload(table.bytes);
                DeviceBytes d_ids = upload(ids);
                DeviceBytes d_out(sizeof(float) * static_cast<size_t>(n_tokens * out_stride));
                DeviceBytes d_flag = upload(std::vector<int>{0});
                d_out.poison();
                CUDA_REQUIRE(embed_rows(d_table.get(), f, table.n_rows, n_cols, table.row_stride, d_ids.as<int32_t>(),
                                        n_tokens, d_out.as<float>(), out_stride, d_flag.as<int>(), nullptr));
                sync_ok();
                const std::vector<float> out = download<float>(d_out);
                CHECK(download<int>(d_flag)[0] == 1);
                int bad = 0;
                for (int64_t t = 0; t < n_tokens; ++t) {
                    const int32_t id = std::clamp<int32_t>(ids[static_cast<size_t>(t)], 0, 18);
                    for (int64_t c = 0; c < out_stride; ++c) {
                        const float g = out[static_cast<size_t>(t * out_stride + c)];
                        if (c >= n_cols) {
                            if (!is_poison(g) && bad++ < 5)
                                FAIL_CHECK("padding written at token " << t << " col " << c);
                            continue;
                        }
                        const double r = table.values[static_cast<size_t>(id)][static_cast<size_t>(c)];
                        if (!(std::fabs(g - r) <= embed_tolerance(f, r)) && bad++ < 5)
                            FAIL_CHECK("token " << t << " (row " << id << ") col " << c << ": " << g << " vs " << r);
                    }
                }
                CHECK(bad == 0);
                // In-range ids leave the flag alone.
                CUDA_REQUIRE(cudaMemset(d_flag.get(), 0, sizeof(int)));
                CUDA_REQUIRE(embed_rows(d_table.get(), f, table.n_rows, n_cols, table.row_stride, d_ids.as<int32_t>(),
                                        6, d_out.as<float>(), out_stride, d_flag.as<int>(), nullptr));
                sync_ok();
                CHECK(download<int>(d_flag)[0] == 0);
            }
}

TEST_CASE("gemv equals the float64 dot products for 1..8 tokens in every format", "[kernels][gpu][gemv]") {
    const uint64_t seed = test_seed();
    INFO("seed " << seed);
    Rng rng(seed);
    const int64_t n_rows = 37;  // not a multiple of the 4 rows of a CTA
    for (WeightFormat f : kFormats)
        for (int64_t n_cols : test_cols(f))
            for (bool aligned : {true, false}) {
                INFO(format_name(f) << ", " << n_cols << " columns, " << (aligned ? "aligned" : "narrow") << " rows");
                const Table table = make_table(f, n_rows, n_cols, aligned, rng);
                const int64_t x_stride = (n_cols + 3) / 4 * 4 + 4;
                const int64_t y_stride = n_rows + 3;
                const std::vector<float> x = uniform(static_cast<size_t>(8 * x_stride), -1.0f, 1.0f, rng);
                DeviceBytes d_w = upload(table.bytes);
                DeviceBytes d_x = upload(x);
                DeviceBytes d_y(sizeof(float) * static_cast<size_t>(8 * y_stride));
                for (int32_t n_tokens = 1; n_tokens <= 8; ++n_tokens) {
                    INFO(n_tokens << " tokens");
                    d_y.poison();
                    CUDA_REQUIRE(gemv(d_w.get(), f, n_rows, n_cols, table.row_stride, d_x.as<float>(), x_stride,
                                      n_tokens, d_y.as<float>(), y_stride, nullptr));
                    sync_ok();
                    const std::vector<float> y = download<float>(d_y);
                    int bad = 0;
                    for (int64_t t = 0; t < 8; ++t)
                        for (int64_t r = 0; r < y_stride; ++r) {
                            const float g = y[static_cast<size_t>(t * y_stride + r)];
                            if (t >= n_tokens || r >= n_rows) {
                                if (!is_poison(g) && bad++ < 5)
                                    FAIL_CHECK("written outside: token " << t << " row " << r);
                                continue;
                            }
                            double ref = 0.0, mag = 0.0;
                            for (int64_t c = 0; c < n_cols; ++c) {
                                const double p = table.values[static_cast<size_t>(r)][static_cast<size_t>(c)] *
                                                 x[static_cast<size_t>(t * x_stride + c)];
                                ref += p;
                                mag += std::fabs(p);
                            }
                            // Each lane sums about n_cols / 32 products with fmaf (plus at most one
                            // 32-weight unit and the tail), then 5 butterfly additions; each weight is
                            // within 2^-24 of exact: a standard (k + slack) * 2^-24 * sum|w x| bound.
                            const double tol = static_cast<double>(n_cols / 32 + 64) * std::ldexp(mag, -24);
                            if (!(std::fabs(g - ref) <= tol) && bad++ < 5)
                                FAIL_CHECK("token " << t << " row " << r << ": " << g << " vs " << ref << " (tol "
                                                    << tol << ")");
                        }
                    CHECK(bad == 0);
                }
            }
}
