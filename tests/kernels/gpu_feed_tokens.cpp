// feed_tokens: a pipelined step's tokens copied from the step before's ids on the device.
#include <algorithm>
#include <vector>

#include "gpu_util.h"
#include "inlay_cuda_kernels.h"

using namespace inlay::cuda;
using namespace inlay::cuda::test;

TEST_CASE("feed_tokens copies fed rows' ids, -1 as 0, and leaves the others", "[kernels][gpu][feed]") {
    const std::vector<int32_t> ids{17, -1, 4, 250};  // row 1 was all NaN
    for (const int64_t n : {int64_t{1}, int64_t{7}, int64_t{300}}) {
        INFO(n << " tokens");
        std::vector<int32_t> tokens(static_cast<size_t>(n)), fed(static_cast<size_t>(n));
        std::vector<int32_t> want(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
            const auto k = static_cast<size_t>(i);
            tokens[k] = 1000 + static_cast<int32_t>(i);
            fed[k] = i % 3 == 0 ? -1 : static_cast<int32_t>(i % 4);
            want[k] = fed[k] < 0 ? tokens[k] : std::max(ids[static_cast<size_t>(fed[k])], 0);
        }
        DeviceBytes d_tokens = upload(tokens), d_fed = upload(fed), d_ids = upload(ids);
        CUDA_REQUIRE(feed_tokens(d_tokens.as<int32_t>(), d_fed.as<int32_t>(), n, d_ids.as<int32_t>(), nullptr));
        sync_ok();
        CHECK(download<int32_t>(d_tokens) == want);
    }
}
