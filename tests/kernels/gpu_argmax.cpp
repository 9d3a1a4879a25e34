// argmax_rows against the host rule: the first index of the largest non-NaN value, -1
// when a row is all NaN.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "gpu_util.h"
#include "inlay_cuda_kernels.h"
#include "reference.h"

using namespace inlay::cuda;
using namespace inlay::cuda::test;

namespace {

int32_t host_argmax(const float* row, int64_t n) {
    int32_t at = -1;
    float best = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < n; ++j) {
        if (row[j] > best || (at < 0 && row[j] == best)) {
            best = row[j];
            at = static_cast<int32_t>(j);
        }
    }
    return at;
}

}  // namespace

TEST_CASE("argmax_rows: first of the largest, NaN never, -1 for all NaN", "[kernels][gpu][argmax]") {
    const uint64_t seed = test_seed();
    INFO("seed " << seed);
    Rng rng(seed);
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    for (const int64_t n_cols : {int64_t{1}, int64_t{37}, int64_t{512}, int64_t{32000}, int64_t{151936}}) {
        INFO(n_cols << " columns");
        const int64_t n_rows = 9, stride = n_cols + 3;
        std::vector<float> x(static_cast<size_t>(n_rows * stride), 0.0f);
        for (int64_t r = 0; r < n_rows; ++r) {
            const std::vector<float> u = uniform(static_cast<size_t>(n_cols), -20.0f, 20.0f, rng);
            std::copy(u.begin(), u.end(), x.begin() + r * stride);
        }
        auto at = [&](int64_t r, int64_t c) -> float& { return x[static_cast<size_t>(r * stride + c)]; };
        // Row 1: a tie between the last column and an early one (the early one wins).
        at(1, n_cols - 1) = 50.0f;
        at(1, n_cols / 3) = 50.0f;
        // Row 2: NaN everywhere but one value.
        for (int64_t c = 0; c < n_cols; ++c) at(2, c) = nan;
        at(2, n_cols / 2) = -3.0f;
        // Row 3: all NaN. Row 4: all -inf but NaN first (the first -inf wins).
        for (int64_t c = 0; c < n_cols; ++c) at(3, c) = nan;
        for (int64_t c = 0; c < n_cols; ++c) at(4, c) = -inf;
        at(4, 0) = nan;
        // Row 5: +inf twice. Row 6: the maximum in the padding must not count.
        at(5, n_cols / 4) = inf;
        at(5, n_cols - 1) = inf;
        for (int64_t c = n_cols; c < stride; ++c) at(6, c) = 1e30f;
        DeviceBytes d_x = upload(x);
        DeviceBytes d_ids(sizeof(int32_t) * static_cast<size_t>(n_rows + 1));
        CUDA_REQUIRE(cudaMemset(d_ids.get(), 0x55, d_ids.size()));
        CUDA_REQUIRE(argmax_rows(d_x.as<float>(), n_rows, n_cols, stride, d_ids.as<int32_t>(), nullptr));
        sync_ok();
        const std::vector<int32_t> ids = download<int32_t>(d_ids);
        for (int64_t r = 0; r < n_rows; ++r) {
            INFO("row " << r);
            CHECK(ids[static_cast<size_t>(r)] == host_argmax(x.data() + r * stride, n_cols));
        }
        CHECK(ids[3] == -1);
        if (n_cols > 1) CHECK(ids[1] == n_cols / 3);
        CHECK(ids[static_cast<size_t>(n_rows)] == 0x55555555);  // nothing written past the rows
    }
}
