// Every dot kernel (fast and reference) against a float64 dot of the dequantized rows,
// and vec_dot_rows against per-row calls.
//
// Tolerance, relative to S = sum |w_i * x_i| of the dequantized values:
//   float types: 2 * (n + 8) * 2^-24 (the classic bound for n float additions);
//   quantized types: 2 * (n_blocks + 16) * 2^-24 (integer sums are exact; the float work
//   is a few products per block and one addition per block), plus the rounding of the
//   float dequantization itself (cancellation in d*sc*q - dmin*m): 4 * 2^-24 * S.
// Q4_1 / Q5_1 against Q8_1 use the activation block's stored s = f16(d * sum(q)) for the
// weights' offset m (as llama.cpp does), so their expected value is the float64 dot with
// m * d * sum(q) replaced by m * s, and S includes |m * s|.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "quant/cpu_tuning.h"
#include "quant/interleaved_rows.h"
#include "quant/quantize.h"
#include "quant/vec_dot.h"
#include "quant_test_util.h"

using namespace inlay;
using namespace inlay::test;

namespace {

struct Rows {
    Bytes w;
    Bytes x;
    std::vector<float> wf;
    std::vector<float> xf;
};

Rows make_rows(DType type, const std::vector<float>& w, const std::vector<float>& x) {
    const auto n = static_cast<int64_t>(w.size());
    const DType act = quant::vec_dot_type(type);
    Rows r{Bytes(*row_bytes(type, n)), Bytes(*row_bytes(act, n)), std::vector<float>(w.size()),
           std::vector<float>(w.size())};
    quant::quantize_row(type, w.data(), r.w.data(), n);
    quant::quantize_activations(act, x.data(), r.x.data(), n);
    quant::dequantize_row(type, r.w.data(), r.wf.data(), n);
    quant::dequantize_row(act, r.x.data(), r.xf.data(), n);
    return r;
}

template <class Fn>
inlay_status status_of(Fn&& fn) {
    try {
        fn();
    } catch (const Error& e) {
        return e.status();
    }
    return INLAY_OK;
}

double expect_dot(const std::vector<float>& a, const std::vector<float>& b) {
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * b[i];
    return s;
}

// For Q4_1 / Q5_1: sum over blocks of m * (s - d * sum(q)) (what the stored f16 s adds
// to the exact dot), and of |m * s| into abs_extra; 0 for other types.
double q8_1_s_correction(DType type, const void* w, const void* x, int64_t n, double& abs_extra) {
    abs_extra = 0;
    if (type != DType::Q4_1 && type != DType::Q5_1) return 0;
    const size_t wb = dtype_traits(type).block_bytes;
    const auto* wp = static_cast<const uint8_t*>(w);
    const auto* xp = static_cast<const uint8_t*>(x);
    double corr = 0;
    for (int64_t b = 0; b < n / 32; ++b) {
        const uint8_t* wblk = wp + static_cast<size_t>(b) * wb;
        const uint8_t* xblk = xp + static_cast<size_t>(b) * 36;
        const double m = f16_to_f32(get_u16(wblk + 2));
        const double d = f16_to_f32(get_u16(xblk)), stored = f16_to_f32(get_u16(xblk + 2));
        int sum = 0;
        for (int i = 0; i < 32; ++i) sum += static_cast<int8_t>(xblk[4 + i]);
        corr += m * (stored - d * sum);
        abs_extra += std::fabs(m * stored);
    }
    return corr;
}

// Types whose fast and reference kernels share one float order: llama.cpp's for the
// 32-element types and Q1_0, the super-block totals' for the K-quants.
bool same_order_type(DType t) {
    return t == DType::Q8_0 || t == DType::Q4_0 || t == DType::Q4_1 || t == DType::Q5_0 || t == DType::Q5_1 ||
           t == DType::Q1_0 || t == DType::Q4_K || t == DType::Q5_K || t == DType::Q6_K;
}

double tolerance(DType type, int64_t n, double abs_sum) {
    const double u = std::ldexp(1.0, -24);
    if (is_float_type(type)) return 2.0 * static_cast<double>(n + 8) * u * abs_sum + 1e-30;
    const double blocks = static_cast<double>(n / dtype_traits(type).block_elems);
    return (2.0 * (blocks + 16) + 4.0) * u * abs_sum + 1e-30;
}

void check_dot(DType type, const Rows& r, int64_t n) {
    double abs_extra = 0;
    double expect = q8_1_s_correction(type, r.w.data(), r.x.data(), n, abs_extra);
    double abs_sum = abs_extra;
    for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
        const double p = static_cast<double>(r.wf[i]) * r.xf[i];
        expect += p;
        abs_sum += std::fabs(p);
    }
    float fast = NAN, ref = NAN;
    quant::vec_dot_kernel(type)(n, &fast, r.w.data(), r.x.data());
    quant::vec_dot_kernel_reference(type)(n, &ref, r.w.data(), r.x.data());
    INFO(dtype_name(type) << " n=" << n << " expect " << expect << " sum|wx| " << abs_sum);
    REQUIRE(std::fabs(fast - expect) <= tolerance(type, n, abs_sum));
    REQUIRE(std::fabs(ref - expect) <= tolerance(type, n, abs_sum));
    // Documented: these follow one float order on both paths, so they agree bitwise.
    if (same_order_type(type)) REQUIRE(fast == ref);
}

}  // namespace

TEST_CASE("vec_dot_type pairs weights with activations", "[quant][vec_dot]") {
    using quant::vec_dot_type;
    REQUIRE(vec_dot_type(DType::F32) == DType::F32);
    REQUIRE(vec_dot_type(DType::F16) == DType::F16);
    REQUIRE(vec_dot_type(DType::BF16) == DType::BF16);
    REQUIRE(vec_dot_type(DType::Q8_0) == DType::Q8_0);
    REQUIRE(vec_dot_type(DType::Q4_0) == DType::Q8_0);
    REQUIRE(vec_dot_type(DType::Q5_0) == DType::Q8_0);
    REQUIRE(vec_dot_type(DType::Q4_1) == DType::Q8_1);
    REQUIRE(vec_dot_type(DType::Q5_1) == DType::Q8_1);
    REQUIRE(vec_dot_type(DType::Q1_0) == DType::Q8_0);
    REQUIRE(vec_dot_type(DType::Q4_K) == DType::Q8_K);
    REQUIRE(vec_dot_type(DType::Q5_K) == DType::Q8_K);
    REQUIRE(vec_dot_type(DType::Q6_K) == DType::Q8_K);
    REQUIRE(status_of([] { (void)vec_dot_type(DType::Q8_K); }) == INLAY_ERR_UNSUPPORTED);
    REQUIRE(status_of([] { (void)quant::vec_dot_kernel(DType::Q8_K); }) == INLAY_ERR_UNSUPPORTED);
    REQUIRE(status_of([] { (void)vec_dot_type(DType::Q8_1); }) == INLAY_ERR_UNSUPPORTED);
    REQUIRE(status_of([] { (void)quant::vec_dot_kernel_reference(DType::Q8_1); }) == INLAY_ERR_UNSUPPORTED);
    REQUIRE(status_of([] { (void)quant::vec_dot_kernel(static_cast<DType>(5)); }) == INLAY_ERR_INVALID_ARGUMENT);
    REQUIRE(status_of([&] { quant::quantize_activations_reference(DType::Q8_1, nullptr, nullptr, 32); }) ==
            INLAY_ERR_INVALID_ARGUMENT);
    REQUIRE(status_of([&] { quant::quantize_activations(static_cast<DType>(5), nullptr, nullptr, 32); }) ==
            INLAY_ERR_INVALID_ARGUMENT);
    float out[2];
    std::vector<uint8_t> buf(4096);
    REQUIRE(status_of([&] { quant::vec_dot_rows(DType::Q4_K, 100, 1, out, buf.data(), 144, buf.data()); }) ==
            INLAY_ERR_INVALID_ARGUMENT);
    REQUIRE(status_of([&] { quant::vec_dot_rows(DType::Q4_K, 256, -1, out, buf.data(), 144, buf.data()); }) ==
            INLAY_ERR_INVALID_ARGUMENT);
    REQUIRE(status_of([&] { quant::vec_dot_rows(DType::Q4_K, 256, 1, out, nullptr, 144, buf.data()); }) ==
            INLAY_ERR_INVALID_ARGUMENT);
    REQUIRE(status_of([&] { quant::vec_dot_rows(DType::Q4_K, 256, 0, out, nullptr, 144, nullptr); }) == INLAY_OK);
    REQUIRE(status_of([&] { quant::quantize_activations(DType::Q8_K, nullptr, buf.data(), 256); }) ==
            INLAY_ERR_INVALID_ARGUMENT);
    REQUIRE(status_of([&] { quant::quantize_activations(DType::Q8_0, nullptr, buf.data(), 48); }) ==
            INLAY_ERR_INVALID_ARGUMENT);
}

TEST_CASE("dot kernels match a float64 dot of the dequantized rows", "[quant][vec_dot]") {
    std::mt19937 rng(2024);
    for (DType type : kWeightTypes) {
        const int64_t block = std::max<int64_t>(dtype_traits(type).block_elems,
                                                dtype_traits(quant::vec_dot_type(type)).block_elems);
        std::vector<int64_t> lengths = {block, 2 * block, 3 * block, 2048, 4096, 5 * 1024 + 512};
        if (is_float_type(type)) lengths.insert(lengths.end(), {1, 7, 8, 31, 33, 100, 1001});
        for (int64_t n : lengths) {
            if (n % block != 0) continue;
            for (int rep = 0; rep < 6; ++rep) {
                const float ws = std::exp2(static_cast<float>(rep) - 3.0f);
                const Rows r = make_rows(type, random_row(rng, n, ws), random_row(rng, n, 1.0f / ws));
                check_dot(type, r, n);
            }
        }
    }
}

TEST_CASE("dot kernels on random block bytes and extreme quants", "[quant][vec_dot]") {
    // Random bit patterns reach every level (including Q4_0's -8, Q6_K's -32 and int8
    // scales of -128); the activations include +-127 everywhere to probe 16-bit overflow.
    std::mt19937 rng(77);
    for (DType type : {DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q1_0, DType::Q4_K,
                       DType::Q5_K, DType::Q6_K}) {
        const DType act = quant::vec_dot_type(type);
        const int64_t n = 1024;
        const auto& wt = dtype_traits(type);
        const auto& at = dtype_traits(act);
        for (int rep = 0; rep < 48; ++rep) {
            Rows r{Bytes(*row_bytes(type, n)), Bytes(*row_bytes(act, n)), std::vector<float>(n), std::vector<float>(n)};
            fill_random(rng, r.w.u8(), r.w.size);
            // weights: random bytes, or all bits set (every level and scale at its maximum);
            // activations: random, all +127 or all -127
            const int pattern = rep % 6;
            if (pattern % 2 == 1) std::memset(r.w.u8(), 0xff, r.w.size);
            const int x_mode = pattern / 2;
            for (size_t b = 0; b < r.w.size / wt.block_bytes; ++b) {
                uint8_t* blk = r.w.u8() + b * wt.block_bytes;
                if (type == DType::Q6_K) {
                    put_u16(blk + 208, random_f16(rng, true));
                } else if (type == DType::Q4_1 || type == DType::Q5_1) {
                    put_u16(blk, random_f16(rng, true));      // d
                    put_u16(blk + 2, random_f16(rng, true));  // m
                } else {
                    put_u16(blk, random_f16(rng, type != DType::Q4_K && type != DType::Q5_K));
                    if (type == DType::Q4_K || type == DType::Q5_K) put_u16(blk + 2, random_f16(rng));
                }
            }
            // Activations: random quants in -127..127 with a consistent bsums field for Q8_K.
            std::uniform_int_distribution<int> q(-127, 127);
            for (size_t b = 0; b < r.x.size / at.block_bytes; ++b) {
                uint8_t* blk = r.x.u8() + b * at.block_bytes;
                const int nq = static_cast<int>(at.block_elems);
                const int qoff = act == DType::Q8_0 ? 2 : 4;
                for (int i = 0; i < nq; ++i) {
                    const int v = x_mode == 1 ? 127 : x_mode == 2 ? -127 : q(rng);
                    blk[qoff + i] = static_cast<uint8_t>(static_cast<int8_t>(v));
                }
                if (act == DType::Q8_K) {
                    const float d = 0.01f * static_cast<float>(b + 1);
                    std::memcpy(blk, &d, 4);
                    for (int j = 0; j < 16; ++j) {
                        int s = 0;
                        for (int i = 0; i < 16; ++i) s += static_cast<int8_t>(blk[4 + 16 * j + i]);
                        const auto s16 = static_cast<int16_t>(s);
                        std::memcpy(blk + 260 + 2 * j, &s16, 2);
                    }
                } else {
                    put_u16(blk, random_f16(rng));
                    if (act == DType::Q8_1) {  // s = d * sum(q), as the format defines it
                        int s = 0;
                        for (int i = 0; i < nq; ++i) s += static_cast<int8_t>(blk[qoff + i]);
                        put_u16(blk + 2, f32_to_f16(f16_to_f32(get_u16(blk)) * static_cast<float>(s)));
                    }
                }
            }
            quant::dequantize_row(type, r.w.data(), r.wf.data(), n);
            quant::dequantize_row(act, r.x.data(), r.xf.data(), n);
            INFO("pattern " << pattern << " rep " << rep);
            check_dot(type, r, n);
        }
    }
}

TEST_CASE("vec_dot_rows equals per-row dots", "[quant][vec_dot]") {
    std::mt19937 rng(31337);
    // 1536: an even number of blocks of every size; 1568: 49 blocks of 32, so the kernels
    // taking two blocks at a time (Q4_0 / Q5_0 with AVX-512) end on a single one.
    for (int64_t n : {int64_t{1536}, int64_t{1568}}) {
        for (DType type : kWeightTypes) {
            if (!row_bytes(type, n)) continue;  // 1568 is no multiple of the K-quants' 256 or Q1_0's 128
            const auto rb = *row_bytes(type, n);
            for (int64_t n_rows : {1, 2, 3, 4, 5, 7, 8, 13}) {
                for (size_t pad : {size_t{0}, size_t{4}}) {  // padded rows: the stride is honoured
                    const size_t stride = rb + pad;
                    Bytes w(stride * static_cast<size_t>(n_rows));
                    for (int64_t r = 0; r < n_rows; ++r) {
                        const auto row = random_row(rng, n);
                        quant::quantize_row(type, row.data(), w.u8() + static_cast<size_t>(r) * stride, n);
                    }
                    const auto xf = random_row(rng, n);
                    const DType act = quant::vec_dot_type(type);
                    Bytes x(*row_bytes(act, n));
                    quant::quantize_activations(act, xf.data(), x.data(), n);
                    std::vector<float> got(static_cast<size_t>(n_rows) + 1, 12345.0f);
                    quant::vec_dot_rows(type, n, n_rows, got.data(), w.data(), stride, x.data());
                    REQUIRE(got.back() == 12345.0f);  // nothing written past n_rows
                    std::vector<float> wf(static_cast<size_t>(n)), xd(static_cast<size_t>(n));
                    quant::dequantize_row(act, x.data(), xd.data(), n);
                    for (int64_t r = 0; r < n_rows; ++r) {
                        const uint8_t* wr = w.u8() + static_cast<size_t>(r) * stride;
                        float one = NAN;
                        quant::vec_dot_kernel(type)(n, &one, wr, x.data());
                        quant::dequantize_row(type, wr, wf.data(), n);
                        double abs_sum = 0;
                        const double corr = q8_1_s_correction(type, wr, x.data(), n, abs_sum);
                        for (size_t i = 0; i < wf.size(); ++i) abs_sum += std::fabs(static_cast<double>(wf[i]) * xd[i]);
                        INFO(dtype_name(type) << " n " << n << " rows " << n_rows << " row " << r);
                        // Documented: bitwise equal (same arithmetic per row whatever the grouping).
                        REQUIRE(got[static_cast<size_t>(r)] == one);
                        REQUIRE(std::fabs(one - (expect_dot(wf, xd) + corr)) <= tolerance(type, n, abs_sum));
                    }
                }
            }
        }
    }
}

// The block-sum order, written out from the raw bytes: one float fused with each block's
// whole integer sum and d_w * d_x (llama.cpp's repacked Q4_0 kernels; for Q8_0 ours, where
// ggml's x86 vec_dot keeps eight lanes, lane k holding products 4k..4k+3, each fused with
// the block's scale and summed as ((l0+l4) + (l2+l6)) + ((l1+l5) + (l3+l7))).
TEST_CASE("Q8_0, Q4_0 and Q5_0 dots sum in block-sum order", "[quant][vec_dot]") {
    std::mt19937 rng(404);
    int order_matters = 0;
    for (int rep = 0; rep < 300; ++rep) {
        const int64_t n = 32 * (1 + rep % 64);
        for (DType type : {DType::Q8_0, DType::Q4_0, DType::Q5_0}) {
            const Rows r = make_rows(type, random_row(rng, n, 0.05f), random_row(rng, n));
            const size_t wb = dtype_traits(type).block_bytes;
            float lanes[8] = {}, single = 0.0f, sequential = 0.0f;
            for (int64_t b = 0; b < n / 32; ++b) {
                const uint8_t* w = r.w.u8() + static_cast<size_t>(b) * wb;
                const uint8_t* x = r.x.u8() + static_cast<size_t>(b) * 34;
                const float scale = f16_to_f32(get_u16(w)) * f16_to_f32(get_u16(x));
                int block_sum = 0;
                for (int k = 0; k < 8; ++k) {
                    int lane = 0;
                    for (int i = 4 * k; i < 4 * k + 4; ++i) {
                        int wq = 0;
                        if (type == DType::Q8_0) {
                            wq = static_cast<int8_t>(w[2 + i]);
                        } else if (type == DType::Q4_0) {
                            wq = (i < 16 ? w[2 + i % 16] & 15 : w[2 + i % 16] >> 4) - 8;
                        } else {  // Q5_0: d, u32 qh (bit i: bit 4 of level i), then the nibbles
                            uint32_t qh = 0;
                            std::memcpy(&qh, w + 2, 4);
                            const int nibble = i < 16 ? w[6 + i % 16] & 15 : w[6 + i % 16] >> 4;
                            wq = (nibble | static_cast<int>(((qh >> i) & 1u) << 4)) - 16;
                        }
                        lane += wq * static_cast<int8_t>(x[2 + i]);
                    }
                    lanes[k] = std::fma(static_cast<float>(lane), scale, lanes[k]);
                    block_sum += lane;
                }
                single = std::fma(static_cast<float>(block_sum), scale, single);
                volatile float term = static_cast<float>(block_sum) * scale;  // an order llama.cpp does not use
                sequential = sequential + term;
            }
            const float lane_sum =
                ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) + ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]));
            const float expect = single;
            float got = NAN, rows = NAN;
            quant::vec_dot_kernel(type)(n, &got, r.w.data(), r.x.data());
            quant::vec_dot_rows(type, n, 1, &rows, r.w.data(), wb, r.x.data());
            INFO(dtype_name(type) << " n=" << n);
            REQUIRE(got == expect);
            REQUIRE(rows == expect);
            order_matters += sequential != expect;
            order_matters += lane_sum != expect;
        }
    }
    CHECK(order_matters > 0);  // the check can tell orders apart
}

// vec_dot_tile: every (row, token) result bitwise equal to vec_dot_kernel's, whatever
// the tile shape leaves over (rows and tokens not multiples of the tile), with padded
// weight, activation and result strides; nothing written outside the results.
TEST_CASE("vec_dot_tile equals per-row, per-token dots", "[quant][vec_dot]") {
    std::mt19937 rng(4242);
    for (DType type : kWeightTypes) {
        const DType act = quant::vec_dot_type(type);
        // Float types take any n: 1003 exercises the 8-wide and scalar tails. 224: an odd
        // number of 32-element blocks (the tiles that take blocks in pairs end on one).
        std::vector<int64_t> lengths{1536, is_float_type(type) ? 1003 : 256};
        if (dtype_traits(type).block_elems == 32) lengths.push_back(224);
        for (int64_t n : lengths) {
            const size_t w_stride = *row_bytes(type, n) + 4;
            const size_t x_stride = *row_bytes(act, n) + 4;
            const int64_t max_rows = 13, max_tokens = 100;  // 100: past a float tile's token chunk (96)
            Bytes w(w_stride * max_rows), x(x_stride * max_tokens);
            for (int64_t r = 0; r < max_rows; ++r) {
                const auto row = random_row(rng, n);
                quant::quantize_row(type, row.data(), w.u8() + static_cast<size_t>(r) * w_stride, n);
            }
            if (type == DType::Q8_0) {  // row 0: raw quants, -128 included (llama-quantize never writes it)
                for (int64_t b = 0; b < n / 32; ++b) {
                    uint8_t* blk = w.u8() + static_cast<size_t>(b) * 34;
                    fill_random(rng, blk + 2, 32);
                    blk[2] = 0x80;
                }
            }
            for (int64_t t = 0; t < max_tokens; ++t) {
                const auto xf = random_row(rng, n);
                quant::quantize_activations(act, xf.data(), x.u8() + static_cast<size_t>(t) * x_stride, n);
            }
            for (int64_t n_rows : {1, 2, 3, 4, 5, 8, 13}) {
                for (int64_t n_tokens : {1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 100}) {  // 8 | 9: the streamed products end, the row-per-lane tiles start
                    const size_t result_stride = static_cast<size_t>(n_rows) + 3;
                    std::vector<float> got(result_stride * static_cast<size_t>(n_tokens), 12345.0f);
                    quant::vec_dot_tile(type, n, n_rows, n_tokens, got.data(), result_stride, w.data(), w_stride,
                                        x.data(), x_stride);
                    // The same through a pack built once for the batch (as CpuBackend::matmul does).
                    const quant::TilePack pack(type, n, n_tokens, x.data(), x_stride);
                    std::vector<float> packed(got.size(), 12345.0f);
                    quant::vec_dot_tile(type, n, n_rows, n_tokens, packed.data(), result_stride, w.data(), w_stride,
                                        x.data(), x_stride, &pack);
                    REQUIRE(std::memcmp(packed.data(), got.data(), got.size() * sizeof(float)) == 0);
                    for (int64_t t = 0; t < n_tokens; ++t) {
                        for (size_t r = 0; r < result_stride; ++r) {
                            const float value = got[static_cast<size_t>(t) * result_stride + r];
                            INFO(dtype_name(type) << " n " << n << " rows " << n_rows << " tokens " << n_tokens
                                                  << " row " << r << " token " << t);
                            if (r >= static_cast<size_t>(n_rows)) {
                                REQUIRE(value == 12345.0f);
                                continue;
                            }
                            float one = NAN;
                            quant::vec_dot_kernel(type)(n, &one, w.u8() + r * w_stride,
                                                        x.u8() + static_cast<size_t>(t) * x_stride);
                            REQUIRE(value == one);
                        }
                    }
                }
            }
        }
    }
}

// The tiles of the integer types (AMX where the CPU has it) on random block bytes: every
// level and scale, Q6_K's -128 scales included, and activations at +-127, over full
// 16 x 16 tiles and their remainders, bitwise equal to the row kernel per (row, token).
TEST_CASE("vec_dot_tile on random blocks equals per-row dots", "[quant][vec_dot]") {
    std::mt19937 rng(909);
    for (DType type : {DType::Q8_0, DType::Q4_0, DType::Q5_0, DType::Q1_0, DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
        const DType act = quant::vec_dot_type(type);
        const int64_t n = 768, n_rows = 37, n_tokens = 35;
        const size_t w_stride = *row_bytes(type, n), x_stride = *row_bytes(act, n);
        for (int pattern = 0; pattern < 3; ++pattern) {
            Bytes w(w_stride * n_rows), x(x_stride * n_tokens);
            fill_random(rng, w.u8(), w.size);
            if (pattern == 1) std::memset(w.u8(), 0xff, w.size);  // every level and scale at its maximum
            const size_t block = dtype_traits(type).block_bytes;
            for (size_t b = 0; b < w.size / block; ++b) {  // finite scales
                uint8_t* blk = w.u8() + b * block;
                if (type == DType::Q6_K) {
                    put_u16(blk + 208, random_f16(rng, true));
                } else {
                    put_u16(blk, random_f16(rng, true));
                    if (type == DType::Q4_K || type == DType::Q5_K) put_u16(blk + 2, random_f16(rng));
                }
            }
            for (int64_t t = 0; t < n_tokens; ++t) {
                auto xf = random_row(rng, n);
                if (pattern == 2 && t % 2 == 0)  // quants of +-127 throughout
                    for (auto& v : xf) v = v < 0 ? -1.0f : 1.0f;
                quant::quantize_activations(act, xf.data(), x.u8() + static_cast<size_t>(t) * x_stride, n);
            }
            for (int64_t tokens : {int64_t{4}, int64_t{16}, n_tokens}) {
                std::vector<float> got(static_cast<size_t>(n_rows * tokens), 12345.0f);
                const quant::TilePack pack(type, n, tokens, x.data(), x_stride);
                quant::vec_dot_tile(type, n, n_rows, tokens, got.data(), static_cast<size_t>(n_rows), w.data(), w_stride,
                                    x.data(), x_stride, &pack);
                for (int64_t t = 0; t < tokens; ++t) {
                    for (int64_t r = 0; r < n_rows; ++r) {
                        float one = NAN;
                        quant::vec_dot_kernel(type)(n, &one, w.u8() + static_cast<size_t>(r) * w_stride,
                                                    x.u8() + static_cast<size_t>(t) * x_stride);
                        INFO(dtype_name(type) << " pattern " << pattern << " tokens " << tokens << " row " << r
                                              << " token " << t);
                        REQUIRE(got[static_cast<size_t>(t * n_rows + r)] == one);
                    }
                }
            }
        }
    }
}

// The sixteen-row tiles (AVX-512 VNNI) regroup their weight rows a chunk at a time into
// a stack buffer (Q8_0 / Q4_0 / Q5_0 / Q1_0: 48 blocks of 32, the rows' sums carried in the results;
// Q4_K / Q5_K / Q6_K: 4 super-blocks, the floats on the stack): both sides of a boundary and
// many chunks, with a partial group of rows, bitwise equal to the row kernel.
TEST_CASE("vec_dot_tile rows at and past the tiles' regrouping buffers", "[quant][vec_dot]") {
    std::mt19937 rng(5151);
    const std::pair<DType, std::vector<int64_t>> cases[] = {
        {DType::Q4_K, {4 * 256, 5 * 256, 65 * 256}},
        {DType::Q5_K, {4 * 256, 65 * 256}},
        {DType::Q6_K, {4 * 256, 9 * 256}},
        {DType::Q8_0, {48 * 32, 49 * 32, 97 * 32}},
        {DType::Q4_0, {48 * 32, 49 * 32, 97 * 32}},
        {DType::Q5_0, {48 * 32, 97 * 32}},
        {DType::Q1_0, {12 * 128, 13 * 128, 32 * 128}},
    };
    for (const auto& [type, lengths] : cases) {
        for (int64_t n : lengths) {
            const DType act = quant::vec_dot_type(type);
            const int64_t n_rows = 19, n_tokens = 17;
            const size_t w_stride = *row_bytes(type, n), x_stride = *row_bytes(act, n);
            Bytes w(w_stride * n_rows), x(x_stride * n_tokens);
            for (int64_t r = 0; r < n_rows; ++r)
                quant::quantize_row(type, random_row(rng, n).data(), w.u8() + static_cast<size_t>(r) * w_stride, n);
            for (int64_t t = 0; t < n_tokens; ++t)
                quant::quantize_activations(act, random_row(rng, n).data(), x.u8() + static_cast<size_t>(t) * x_stride,
                                            n);
            std::vector<float> got(static_cast<size_t>(n_rows * n_tokens), 12345.0f);
            quant::vec_dot_tile(type, n, n_rows, n_tokens, got.data(), static_cast<size_t>(n_rows), w.data(), w_stride,
                                x.data(), x_stride);
            for (int64_t t = 0; t < n_tokens; ++t) {
                for (int64_t r = 0; r < n_rows; ++r) {
                    float one = NAN;
                    quant::vec_dot_kernel(type)(n, &one, w.u8() + static_cast<size_t>(r) * w_stride,
                                                x.u8() + static_cast<size_t>(t) * x_stride);
                    INFO(dtype_name(type) << " n " << n << " row " << r << " token " << t);
                    REQUIRE(got[static_cast<size_t>(t * n_rows + r)] == one);
                }
            }
        }
    }
}

TEST_CASE("vec_dot_tile rejects bad arguments", "[quant][vec_dot]") {
    float out[4];
    std::vector<uint8_t> buf(4096);
    REQUIRE(status_of([&] { quant::vec_dot_tile(DType::Q8_0, 48, 1, 1, out, 1, buf.data(), 34, buf.data(), 34); }) ==
            INLAY_ERR_INVALID_ARGUMENT);
    REQUIRE(status_of([&] { quant::vec_dot_tile(DType::Q8_0, 32, 1, -1, out, 1, buf.data(), 34, buf.data(), 34); }) ==
            INLAY_ERR_INVALID_ARGUMENT);
    REQUIRE(status_of([&] { quant::vec_dot_tile(DType::Q8_0, 32, 2, 2, out, 2, buf.data(), 34, nullptr, 34); }) ==
            INLAY_ERR_INVALID_ARGUMENT);
    REQUIRE(status_of([&] { quant::vec_dot_tile(DType::Q8_K, 256, 1, 1, out, 1, buf.data(), 292, buf.data(), 292); }) ==
            INLAY_ERR_UNSUPPORTED);
    REQUIRE(status_of([&] { quant::vec_dot_tile(DType::Q8_0, 32, 0, 3, nullptr, 1, nullptr, 34, nullptr, 34); }) ==
            INLAY_OK);
    // A pack must be the one made for these activations: type, length and token count.
    const quant::TilePack pack(DType::Q8_0, 64, 2, buf.data(), 68);
    float four[4];
    REQUIRE(status_of([&] { quant::vec_dot_tile(DType::Q8_0, 64, 1, 3, four, 1, buf.data(), 68, buf.data(), 68, &pack); }) ==
            INLAY_ERR_INVALID_ARGUMENT);
    REQUIRE(status_of([&] { quant::vec_dot_tile(DType::Q8_0, 32, 1, 2, four, 1, buf.data(), 34, buf.data(), 34, &pack); }) ==
            INLAY_ERR_INVALID_ARGUMENT);
    REQUIRE(status_of([&] { quant::vec_dot_tile(DType::Q4_0, 64, 1, 2, four, 1, buf.data(), 36, buf.data(), 68, &pack); }) ==
            INLAY_ERR_INVALID_ARGUMENT);
    REQUIRE(status_of([&] { quant::vec_dot_tile(DType::Q8_0, 64, 1, 2, four, 1, buf.data(), 68, buf.data(), 68, &pack); }) ==
            INLAY_OK);
}

// The ctest runs quant_intel_tuning, quant_amd_tuning and quant_zen5_tuning take each
// profile's row kernels whatever this CPU is; this checks that the setting reaches them.
TEST_CASE("cpu_tuning: INLAY_CPU_TUNING picks the profile's choices", "[quant][vec_dot]") {
    const quant::CpuTuning& t = quant::cpu_tuning();
    const char* name = std::getenv("INLAY_CPU_TUNING");
    const std::string profile = name ? name : "";
    INFO("INLAY_CPU_TUNING=" << profile);
    if (profile == "intel") {
        CHECK(t.block_prefetch_to_l2);
        CHECK(t.q8_0_rows_in_eights);
    } else if (profile == "amd") {
        CHECK_FALSE(t.block_prefetch_to_l2);
        CHECK_FALSE(t.q8_0_rows_in_eights);
    } else if (profile == "zen5") {
        CHECK_FALSE(t.block_prefetch_to_l2);
        CHECK(t.q8_0_rows_in_eights);
    } else {
        // One profile's set: L2 prefetches only together with the eights.
        CHECK((!t.block_prefetch_to_l2 || t.q8_0_rows_in_eights));
    }
}

// The interleaved layout (quant/interleaved_rows.h; Q8_0, Q4_0, Q5_0, Q1_0 and the K-quants): every (row, token)
// bitwise equal to vec_dot_kernel on the stored rows, for any token count (one pass of
// up to 8 tokens and the passes after it), an odd number of blocks, random block bytes
// (every level and fifth bit; Q8_0's -128), and nothing written beside the results. Where the build
// or CPU has no such layout (no AVX-512 VNNI, or AMX), it is refused with a clear error.
TEST_CASE("vec_dot_interleaved equals the stored rows' dots", "[quant][vec_dot]") {
    std::mt19937 rng(1616);
    for (DType type : {DType::Q8_0, DType::Q4_0, DType::Q5_0, DType::Q1_0, DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
        const bool kquant = dtype_traits(type).block_elems == 256;
        // Odd block counts (224, 768, 640) end on a block the paired and chunked loops leave over.
        const std::vector<int64_t> widths = kquant                  ? std::vector<int64_t>{1536, 768, 256}
                                            : type == DType::Q1_0 ? std::vector<int64_t>{1536, 640, 128}
                                                                  : std::vector<int64_t>{1536, 224, 32};
        for (int64_t n : widths) {
            const int64_t n_rows = 48, max_tokens = 70;
            const DType act = quant::vec_dot_type(type);
            const size_t w_stride = *row_bytes(type, n) + 6, x_stride = *row_bytes(act, n) + 4;
            if (!quant::interleaved_rows_supported(type, n, n_rows)) {
                Bytes w(w_stride * static_cast<size_t>(n_rows)), out(quant::interleaved_bytes(type, n, n_rows) + 1);
                REQUIRE(status_of([&] { quant::interleave_rows(type, n, n_rows, w.data(), w_stride, out.data()); }) ==
                        INLAY_ERR_INVALID_ARGUMENT);
                WARN("interleaved " << dtype_name(type) << " layout not available on this build or CPU: refusal checked");
                continue;
            }
            REQUIRE_FALSE(quant::interleaved_rows_supported(type, n, 40));  // rows must come in sixteens
            for (int pattern = 0; pattern < 2; ++pattern) {
                Bytes w(w_stride * static_cast<size_t>(n_rows)), x(x_stride * static_cast<size_t>(max_tokens));
                for (int64_t r = 0; r < n_rows; ++r) {
                    uint8_t* row = w.u8() + static_cast<size_t>(r) * w_stride;
                    if (pattern == 0) {
                        const auto values = random_row(rng, n);
                        quant::quantize_row(type, values.data(), row, n);
                    } else {  // random bytes, finite scales (K-quants: d, dmin; Q6_K's d last)
                        fill_random(rng, row, w_stride);
                        const auto& traits = dtype_traits(type);
                        for (int64_t b = 0; b < n / traits.block_elems; ++b) {
                            uint8_t* block = row + static_cast<size_t>(b) * traits.block_bytes;
                            if (type == DType::Q6_K) {
                                put_u16(block + traits.block_bytes - 2, random_f16(rng, true));
                            } else {
                                put_u16(block, random_f16(rng, true));
                                if (kquant) put_u16(block + 2, random_f16(rng, true));
                            }
                        }
                    }
                }
                for (int64_t t = 0; t < max_tokens; ++t) {
                    const auto xf = random_row(rng, n);
                    quant::quantize_activations(act, xf.data(), x.u8() + static_cast<size_t>(t) * x_stride, n);
                }
                Bytes packed(quant::interleaved_bytes(type, n, n_rows));
                quant::interleave_rows(type, n, n_rows, w.data(), w_stride, packed.data());
                // Every stored row comes back from the records byte for byte (embedding lookups).
                const size_t row_size = *row_bytes(type, n);
                std::vector<uint8_t> back(row_size);
                for (int64_t r = 0; r < n_rows; ++r) {
                    quant::interleaved_stored_row(type, n, packed.data(), r, back.data());
                    INFO(dtype_name(type) << " n " << n << " row " << r);
                    REQUIRE(std::memcmp(back.data(), w.u8() + static_cast<size_t>(r) * w_stride, row_size) == 0);
                }
                // 70: the K-quant prompt tiles' second block of 64 tokens.
                for (int64_t tokens : {1, 2, 3, 7, 8, 9, 19, 70}) {
                    // Rows 16..47 alone too: a call may start at any group.
                    for (int64_t first_group : {0, 1}) {
                        const int64_t rows = n_rows - 16 * first_group;
                        const size_t result_stride = static_cast<size_t>(rows) + 5;
                        std::vector<float> got(result_stride * static_cast<size_t>(tokens), 12345.0f);
                        quant::vec_dot_interleaved(
                            type, n, rows, tokens, got.data(), result_stride,
                            packed.u8() + static_cast<size_t>(first_group) * quant::interleaved_group_bytes(type, n),
                            x.data(), x_stride);
                        for (int64_t t = 0; t < tokens; ++t) {
                            for (size_t r = 0; r < result_stride; ++r) {
                                const float value = got[static_cast<size_t>(t) * result_stride + r];
                                INFO(dtype_name(type) << " n " << n << " pattern " << pattern << " tokens " << tokens
                                                      << " first group " << first_group << " row " << r << " token " << t);
                                if (r >= static_cast<size_t>(rows)) {
                                    REQUIRE(value == 12345.0f);
                                    continue;
                                }
                                float one = NAN;
                                const size_t stored_row = r + static_cast<size_t>(16 * first_group);
                                quant::vec_dot_kernel(type)(n, &one, w.u8() + stored_row * w_stride,
                                                            x.u8() + static_cast<size_t>(t) * x_stride);
                                REQUIRE(value == one);
                            }
                        }
                    }
                }
            }
        }
    }
    float out[16];
    Bytes buf(4096);
    REQUIRE(status_of([&] { quant::vec_dot_interleaved(DType::Q4_1, 32, 16, 1, out, 16, buf.data(), buf.data(), 34); }) ==
            INLAY_ERR_INVALID_ARGUMENT);
    REQUIRE(status_of([&] { quant::vec_dot_interleaved(DType::Q4_0, 32, 16, -1, out, 16, buf.data(), buf.data(), 34); }) ==
            INLAY_ERR_INVALID_ARGUMENT);
    REQUIRE(status_of([&] { quant::vec_dot_interleaved(DType::Q4_0, 48, 16, 1, out, 16, buf.data(), buf.data(), 34); }) ==
            INLAY_ERR_INVALID_ARGUMENT);
}
