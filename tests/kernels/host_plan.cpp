// The attention split planner (a pure host function) and the scratch size.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>

#include "inlay_cuda_kernels.h"

using namespace inlay::cuda;

TEST_CASE("the split plan covers the longest context with non-empty splits", "[kernels][plan]") {
    int checked = 0, split = 0;
    for (int64_t len : {1, 15, 16, 17, 255, 256, 257, 511, 512, 513, 1000, 4096, 32768, 131072, 1000003})
        for (int64_t ctas : {1, 2, 3, 8, 32, 64, 131, 264, 1000})
            for (int32_t sms : {1, 20, 108, 132})
                for (int32_t block : {8, 16, 32})
                    for (int32_t max_splits : {1, 2, 32, 64})
                        for (int32_t min_keys : {1, 64, 256}) {
                            const AttentionSplitPlan p =
                                plan_attention_split(len, ctas, sms, block, max_splits, min_keys);
                            INFO("len " << len << " ctas " << ctas << " sms " << sms << " block " << block
                                        << " max_splits " << max_splits << " min_keys " << min_keys << " -> "
                                        << p.n_splits << " x " << p.keys_per_split);
                            ++checked;
                            REQUIRE(p.n_splits >= 1);
                            REQUIRE(p.n_splits <= std::max(1, max_splits));
                            if (p.n_splits == 1) {
                                REQUIRE(p.keys_per_split == 0);
                                continue;
                            }
                            ++split;
                            REQUIRE(p.keys_per_split % block == 0);
                            REQUIRE(p.keys_per_split >= std::max<int64_t>(min_keys, block));
                            REQUIRE(static_cast<int64_t>(p.n_splits) * p.keys_per_split >= len);     // covered
                            REQUIRE(static_cast<int64_t>(p.n_splits - 1) * p.keys_per_split < len);  // none empty
                            REQUIRE(ctas < 2 * static_cast<int64_t>(sms));  // only when the GPU is not full
                            REQUIRE(static_cast<int64_t>(p.n_splits) <=
                                    (2 * static_cast<int64_t>(sms) + ctas - 1) / ctas);
                        }
    CHECK(checked > 10000);
    CHECK(split > 1000);
}

TEST_CASE("split plans for typical decode batches", "[kernels][plan]") {
    // One sequence, 8 kv heads, 4096 keys on 132 SMs: 33 splits wanted, 16 allowed by the
    // 256-key minimum.
    AttentionSplitPlan p = plan_attention_split(4096, 8, 132, 16);
    CHECK(p.n_splits == 16);
    CHECK(p.keys_per_split == 256);
    // A short context is never split.
    p = plan_attention_split(300, 8, 132, 16);
    CHECK(p.n_splits == 1);
    // A full GPU is never split.
    p = plan_attention_split(131072, 264, 132, 16);
    CHECK(p.n_splits == 1);
    // The cap.
    p = plan_attention_split(1 << 20, 1, 132, 16);
    CHECK(p.n_splits == 32);
    CHECK(p.keys_per_split == 32768);
    // More SMs never mean fewer splits.
    int32_t last = 0;
    for (int32_t sms = 1; sms <= 256; ++sms) {
        const int32_t n = plan_attention_split(65536, 4, sms, 16).n_splits;
        CHECK(n >= last);
        last = n;
    }
    // Degenerate inputs give the whole context.
    CHECK(plan_attention_split(0, 8, 132, 16).n_splits == 1);
    CHECK(plan_attention_split(4096, 0, 132, 16).n_splits == 1);
    CHECK(plan_attention_split(4096, 8, 0, 16).n_splits == 1);
    CHECK(plan_attention_split(4096, 8, 132, 0).n_splits == 1);
}

TEST_CASE("attention scratch size", "[kernels][plan]") {
    CHECK(attention_scratch_floats(3, 8, 128, 5) == 3u * 8u * 5u * (128u + 2u));
    CHECK(attention_scratch_floats(0, 8, 128, 5) == 0);
    CHECK(attention_scratch_floats(1, 1, 64, 1) == 66);
}
