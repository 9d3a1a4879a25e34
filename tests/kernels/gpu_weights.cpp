// embed_rows, dequantize_rows_f16, round_to_half and gemv against float64 dequantization
// (reference.cpp, from formats.md).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
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

// Runs `body` on a random table of n_rows rows for every format, both column counts of
// test_cols and both stride kinds, with the case named in the test's messages.
template <class Body>
void for_each_table(int64_t n_rows, Rng& rng, Body&& body) {
    for (WeightFormat f : kFormats)
        for (int64_t n_cols : test_cols(f))
            for (bool aligned : {true, false}) {
                INFO(format_name(f) << ", " << n_cols << " columns, " << (aligned ? "aligned" : "narrow") << " rows");
                body(f, make_table(f, n_rows, n_cols, aligned, rng));
            }
}

}  // namespace

TEST_CASE("embed_rows dequantizes rows of every format", "[kernels][gpu][embed]") {
    const uint64_t seed = test_seed();
    INFO("seed " << seed);
    Rng rng(seed);
    for_each_table(19, rng, [&](WeightFormat f, const Table& table) {
        const int64_t n_cols = table.n_cols;
        std::vector<int32_t> ids = {3, 0, 18, 7, 7, 11, -1, 25, 2};  // -1 and 25 are clamped
        const int64_t n_tokens = static_cast<int64_t>(ids.size());
        const int64_t out_stride = n_cols + 5;
        DeviceBytes d_table = upload(table.bytes);
        DeviceBytes d_ids = upload(ids);
        DeviceBytes d_out(sizeof(float) * static_cast<size_t>(n_tokens * out_stride));
        DeviceBytes d_flag = upload(std::vector<int>{0});
        d_out.poison();
        CUDA_REQUIRE(embed_rows(d_table.get(), f, table.n_rows, n_cols, table.row_stride, d_ids.as<int32_t>(), n_tokens,
                                d_out.as<float>(), out_stride, d_flag.as<int>(), nullptr));
        sync_ok();
        const std::vector<float> out = download<float>(d_out);
        CHECK(download<int>(d_flag)[0] == 1);
        int bad = 0;
        for (int64_t t = 0; t < n_tokens; ++t) {
            const int32_t id = std::clamp<int32_t>(ids[static_cast<size_t>(t)], 0, 18);
            for (int64_t c = 0; c < out_stride; ++c) {
                const float g = out[static_cast<size_t>(t * out_stride + c)];
                if (c >= n_cols) {
                    if (!is_poison(g) && bad++ < 5) FAIL_CHECK("padding written at token " << t << " col " << c);
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
        CUDA_REQUIRE(embed_rows(d_table.get(), f, table.n_rows, n_cols, table.row_stride, d_ids.as<int32_t>(), 6,
                                d_out.as<float>(), out_stride, d_flag.as<int>(), nullptr));
        sync_ok();
        CHECK(download<int>(d_flag)[0] == 0);
    });
}

TEST_CASE("gemv equals the float64 dot products for 1..8 tokens in every format", "[kernels][gpu][gemv]") {
    const uint64_t seed = test_seed();
    INFO("seed " << seed);
    Rng rng(seed);
    const int64_t n_rows = 37;  // not a multiple of the 4 rows of a CTA
    for_each_table(n_rows, rng, [&](WeightFormat f, const Table& table) {
        const int64_t n_cols = table.n_cols;
        const int64_t x_stride = (n_cols + 3) / 4 * 4 + 4;
        const int64_t y_stride = n_rows + 3;
        const std::vector<float> x = uniform(static_cast<size_t>(8 * x_stride), -1.0f, 1.0f, rng);
        DeviceBytes d_w = upload(table.bytes);
        DeviceBytes d_x = upload(x);
        DeviceBytes d_y(sizeof(float) * static_cast<size_t>(8 * y_stride));
        for (int32_t n_tokens = 1; n_tokens <= 8; ++n_tokens) {
            INFO(n_tokens << " tokens");
            d_y.poison();
            CUDA_REQUIRE(gemv(d_w.get(), f, n_rows, n_cols, table.row_stride, d_x.as<float>(), x_stride, n_tokens,
                              d_y.as<float>(), y_stride, nullptr));
            sync_ok();
            const std::vector<float> y = download<float>(d_y);
            int bad = 0;
            for (int64_t t = 0; t < 8; ++t)
                for (int64_t r = 0; r < y_stride; ++r) {
                    const float g = y[static_cast<size_t>(t * y_stride + r)];
                    if (t >= n_tokens || r >= n_rows) {
                        if (!is_poison(g) && bad++ < 5) FAIL_CHECK("written outside: token " << t << " row " << r);
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
                        FAIL_CHECK("token " << t << " row " << r << ": " << g << " vs " << ref << " (tol " << tol
                                            << ")");
                }
            CHECK(bad == 0);
        }
    });
}

TEST_CASE("dequantize_rows_f16 gives every format's rows as binary16", "[kernels][gpu][embed]") {
    const uint64_t seed = test_seed();
    INFO("seed " << seed);
    Rng rng(seed);
    for_each_table(19, rng, [&](WeightFormat f, const Table& table) {
        const int64_t n_cols = table.n_cols;
        const int64_t out_stride = n_cols + 5;
        DeviceBytes d_table = upload(table.bytes);
        DeviceBytes d_out(sizeof(uint16_t) * static_cast<size_t>(table.n_rows * out_stride));
        d_out.poison();  // 0xffff: an f16 NaN
        CUDA_REQUIRE(dequantize_rows_f16(d_table.get(), f, table.n_rows, n_cols, table.row_stride, d_out.get(),
                                         out_stride, nullptr));
        sync_ok();
        const std::vector<uint16_t> out = download<uint16_t>(d_out);
        int bad = 0;
        for (int64_t r = 0; r < table.n_rows; ++r)
            for (int64_t c = 0; c < out_stride; ++c) {
                const uint16_t g = out[static_cast<size_t>(r * out_stride + c)];
                if (c >= n_cols) {
                    if (g != 0xffff && bad++ < 5) FAIL_CHECK("padding written at row " << r << " col " << c);
                    continue;
                }
                // The f32 value (exact, or within 2^-23 for Q4_K/Q5_K) rounded once to
                // f16: exactly the f16 nearest the reference, or (K-quants) one f16
                // step from it when the f32 rounding crossed a tie.
                const double ref = table.values[static_cast<size_t>(r)][static_cast<size_t>(c)];
                const double want = f16_to_double(double_to_f16(ref));
                const double got = f16_to_double(g);
                const double tol = embed_tolerance(f, ref) > 0 ? std::ldexp(std::fabs(ref), -10) + 0x1p-24 : 0.0;
                if (!(std::fabs(got - want) <= tol) && bad++ < 5)
                    FAIL_CHECK("row " << r << " col " << c << ": " << got << " vs " << want << " (" << ref << ")");
            }
        CHECK(bad == 0);
    });
}

TEST_CASE("round_to_half rounds to nearest even, f16 saturating, NaN kept", "[kernels][gpu][embed]") {
    const uint64_t seed = test_seed();
    INFO("seed " << seed);
    Rng rng(seed);
    std::vector<float> x = uniform(1003, -3.0f, 3.0f, rng);
    const float specials[] = {0.0f,
                              -0.0f,
                              1e5f,
                              -1e5f,
                              65519.0f,
                              65520.0f,
                              3e38f,
                              1e-8f,
                              -3e-6f,
                              1e-30f,
                              std::numeric_limits<float>::quiet_NaN(),
                              std::numeric_limits<float>::infinity(),
                              1.0f + 0x1p-11f,
                              1.0f + 0x1p-8f};
    x.insert(x.end(), std::begin(specials), std::end(specials));
    const auto n = static_cast<int64_t>(x.size());
    DeviceBytes d_x = upload(x);
    DeviceBytes d_out(sizeof(uint16_t) * static_cast<size_t>(n + 3));
    for (HalfType type : {HalfType::f16, HalfType::bf16}) {
        INFO((type == HalfType::f16 ? "f16" : "bf16"));
        d_out.poison();
        CUDA_REQUIRE(round_to_half(d_x.as<float>(), n, type, d_out.get(), nullptr));
        sync_ok();
        const std::vector<uint16_t> out = download<uint16_t>(d_out);
        int bad = 0;
        for (int64_t i = 0; i < n; ++i) {
            const float v = x[static_cast<size_t>(i)];
            const uint16_t g = out[static_cast<size_t>(i)];
            uint16_t want;
            if (type == HalfType::f16) {
                want = double_to_f16(std::isnan(v) ? v : std::clamp<double>(v, -65504.0, 65504.0));
                if (std::isnan(v)) {  // any NaN
                    if (!((g & 0x7c00) == 0x7c00 && (g & 0x3ff) != 0) && bad++ < 5) FAIL_CHECK(i << ": NaN lost");
                    continue;
                }
            } else {
                uint32_t bits;
                std::memcpy(&bits, &v, sizeof bits);
                if (std::isnan(v)) {
                    if (!((g & 0x7f80) == 0x7f80 && (g & 0x7f) != 0) && bad++ < 5) FAIL_CHECK(i << ": NaN lost");
                    continue;
                }
                want = static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
            }
            if (g != want && bad++ < 5) FAIL_CHECK(i << ": " << v << " gave 0x" << std::hex << g << " not 0x" << want);
        }
        for (int64_t i = n; i < n + 3; ++i)
            if (out[static_cast<size_t>(i)] != 0xffff && bad++ < 5) FAIL_CHECK("written past the end at " << i);
        CHECK(bad == 0);
    }
}
