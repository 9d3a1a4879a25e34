// sample_rows against a host reference written from its documented rule
// (inlay_cuda_kernels.h): penalties in place, greedy argmax, then top_k -> min_p -> top_p
// over the top_k sorted best first, and the draw over the survivors in index order.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#include "gpu_util.h"
#include "inlay_cuda_kernels.h"
#include "reference.h"

using namespace inlay::cuda;
using namespace inlay::cuda::test;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// x - (float(count) * f + p) with every operation rounded (volatile: no fused multiply-add).
float penalise(float x, int count, const SampleRowParams& p) {
    volatile float v = x > 0.0f ? x / p.repeat_penalty : x * p.repeat_penalty;
    volatile float freq = static_cast<float>(count) * p.frequency_penalty;
    volatile float sum = freq + p.presence_penalty;
    return v - sum;
}

double weight(float v, float max_v, double inv_temp) {
    if (v == max_v) return 1.0;
    return std::exp((static_cast<double>(v) - static_cast<double>(max_v)) * inv_temp);
}

int32_t reference_sample(std::vector<float>& row, const SampleRowParams& p, const std::vector<PenaltyPair>& pairs) {
    for (int i = 0; i < p.penalty_count; ++i) {
        const PenaltyPair& e = pairs[static_cast<size_t>(p.penalty_begin + i)];
        row[static_cast<size_t>(e.token)] = penalise(row[static_cast<size_t>(e.token)], e.count, p);
    }
    std::vector<int32_t> order;
    for (size_t i = 0; i < row.size(); ++i)
        if (!std::isnan(row[i])) order.push_back(static_cast<int32_t>(i));
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
        const float va = row[static_cast<size_t>(a)], vb = row[static_cast<size_t>(b)];
        return va > vb || (va == vb && a < b);
    });
    if (order.empty()) return -1;
    if (p.temperature <= 0.0f) return order[0];
    order.resize(std::min<size_t>(order.size(), static_cast<size_t>(p.top_k)));
    auto v = [&](int32_t id) { return row[static_cast<size_t>(id)]; };
    const float max_v = v(order[0]);
    if (max_v == -kInf) return order[0];
    size_t n = order.size();
    double mass = 0.0;
    for (const int32_t id : order) mass += weight(v(id), max_v, 1.0);
    if (p.min_p > 0.0f) {
        size_t keep = 1;
        while (keep < n && (v(order[keep]) == max_v ||
                            static_cast<double>(v(order[keep])) - static_cast<double>(max_v) >= p.log_min_p))
            ++keep;
        n = keep;
    }
    if (p.top_p < 1.0f) {
        const double target = static_cast<double>(p.top_p) * mass;
        double sum = 0.0;
        for (size_t i = 0; i < n; ++i) {
            sum += weight(v(order[i]), max_v, 1.0);
            if (sum >= target) {
                n = i + 1;
                break;
            }
        }
    }
    order.resize(n);
    std::sort(order.begin(), order.end());
    std::vector<double> w;
    double total = 0.0;
    for (const int32_t id : order) total += w.emplace_back(weight(v(id), max_v, p.inv_temperature));
    const double target = p.u * total;
    double sum = 0.0;
    size_t last_positive = 0;
    for (size_t i = 0; i < n; ++i) {
        sum += w[i];
        if (w[i] > 0.0) last_positive = i;
        if (sum > target) return order[i];
    }
    return order[last_positive];
}

}  // namespace

TEST_CASE("sample_rows: the host's chain and draw, penalties in place", "[kernels][gpu][sample]") {
    const uint64_t seed = test_seed();
    INFO("seed " << seed);
    Rng rng(seed);
    auto pick = [&](auto... values) {
        const std::vector<std::common_type_t<decltype(values)...>> v{values...};
        return v[rng() % v.size()];
    };
    const float nan = std::numeric_limits<float>::quiet_NaN();
    int compared = 0;
    for (const int64_t n_cols : {int64_t{1}, int64_t{37}, int64_t{3001}, int64_t{151936}}) {
        const int64_t n_rows = 24, stride = n_cols + 5;
        for (int round = 0; round < 3; ++round) {
            INFO(n_cols << " columns, round " << round);
            std::vector<float> x(static_cast<size_t>(n_rows * stride), 1e30f);  // padding: never read
            const bool coarse = round == 1;
            for (int64_t r = 0; r < n_rows; ++r) {
                for (int64_t c = 0; c < n_cols; ++c) {
                    const uint64_t u = rng() % 1000;
                    float v = coarse ? static_cast<float>(static_cast<int>(rng() % 33) - 16) * 0.25f
                                     : static_cast<float>(static_cast<int64_t>(rng() % 4000001) - 2000000) * 1e-5f;
                    if (u == 0) v = nan;
                    else if (u == 1) v = -kInf;
                    else if (u == 2 && n_cols > 50) v = kInf;
                    x[static_cast<size_t>(r * stride + c)] = v;
                }
            }
            auto at = [&](int64_t r, int64_t c) -> float& { return x[static_cast<size_t>(r * stride + c)]; };
            for (int64_t c = 0; c < n_cols; ++c) at(0, c) = nan;  // all NaN: -1
            for (int64_t c = 0; c < n_cols; ++c) at(1, c) = -kInf;  // all -inf after a NaN
            at(1, 0) = nan;
            if (n_cols > 2) at(2, n_cols - 1) = -0.0f, at(2, 1) = 0.0f;

            std::vector<SampleRowParams> params(static_cast<size_t>(n_rows));
            std::vector<PenaltyPair> pairs;
            for (int64_t r = 0; r < n_rows; ++r) {
                SampleRowParams& p = params[static_cast<size_t>(r)];
                p = SampleRowParams{};
                p.temperature = r % 5 == 4 ? 0.0f : pick(0.3f, 0.8f, 1.0f, 1.7f);
                p.top_k = std::min(pick(1, 3, 40, 1024), kSampleMaxTopK);
                p.top_p = pick(1.0f, 0.5f, 0.9f);
                p.min_p = pick(0.0f, 0.05f, 0.2f);
                p.inv_temperature = 1.0 / static_cast<double>(p.temperature);
                p.log_min_p = p.min_p > 0.0f ? std::log(static_cast<double>(p.min_p)) : 0.0;
                p.u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
                p.repeat_penalty = pick(1.0f, 1.3f);
                p.frequency_penalty = pick(0.0f, 0.25f);
                p.presence_penalty = pick(0.0f, -0.5f);
                p.penalty_begin = static_cast<int32_t>(pairs.size());
                std::vector<int32_t> tokens(static_cast<size_t>(n_cols));
                std::iota(tokens.begin(), tokens.end(), 0);
                std::shuffle(tokens.begin(), tokens.end(), rng);
                tokens.resize(std::min<size_t>(tokens.size(), rng() % 70));
                for (const int32_t t : tokens) pairs.push_back({t, static_cast<int32_t>(1 + rng() % 4)});
                p.penalty_count = static_cast<int32_t>(tokens.size());
            }
            DeviceBytes d_x = upload(x), d_params = upload(params);
            DeviceBytes d_pairs = upload(pairs.empty() ? std::vector<PenaltyPair>{{0, 1}} : pairs);
            DeviceBytes d_ids(sizeof(int32_t) * static_cast<size_t>(n_rows + 1));
            CUDA_REQUIRE(cudaMemset(d_ids.get(), 0x55, d_ids.size()));
            CUDA_REQUIRE(sample_rows(d_x.as<float>(), n_rows, n_cols, stride, d_params.as<SampleRowParams>(),
                                     d_pairs.as<PenaltyPair>(), d_ids.as<int32_t>(), nullptr));
            sync_ok();
            const std::vector<int32_t> ids = download<int32_t>(d_ids);
            const std::vector<float> after = download<float>(d_x);
            for (int64_t r = 0; r < n_rows; ++r) {
                const SampleRowParams& p = params[static_cast<size_t>(r)];
                INFO("row " << r << ": T=" << p.temperature << " k=" << p.top_k << " p=" << p.top_p
                            << " min_p=" << p.min_p << " u=" << p.u);
                std::vector<float> row(x.begin() + r * stride, x.begin() + r * stride + n_cols);
                const int32_t want = reference_sample(row, p, pairs);
                CHECK(ids[static_cast<size_t>(r)] == want);
                for (int64_t c = 0; c < stride; ++c) {
                    const float got = after[static_cast<size_t>(r * stride + c)];
                    const float exp = c < n_cols ? row[static_cast<size_t>(c)] : 1e30f;
                    if (!(std::isnan(got) && std::isnan(exp))) REQUIRE(std::memcmp(&got, &exp, sizeof got) == 0);
                }
                ++compared;
            }
            CHECK(ids[0] == -1);
            if (n_cols > 1) CHECK(ids[1] == 1);
            CHECK(ids[static_cast<size_t>(n_rows)] == 0x55555555);  // nothing written past the rows
        }
    }
    CHECK(compared == 4 * 3 * 24);
}
