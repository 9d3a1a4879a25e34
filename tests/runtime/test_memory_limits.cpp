// Sizes beyond the device's memory are refused with INLAY_ERR_OUT_OF_MEMORY before any
// allocation is tried: a KV pool (an absurd context length or budget) and a forward-pass
// workspace (an absurd batch size). Without the checks the pool's blocks would be
// allocated one by one until the OOM killer ends the process.
#include <catch2/catch.hpp>

#include <string>

#include "core/error.h"
#include "runtime_test_util.h"

using namespace inlay;
using namespace inlay::test;

namespace {

std::shared_ptr<const Model> default_model() { return load_model_file(source_dir() / "models" / "default-f32.gguf", 1); }

// The status and message of what `body` throws (INLAY_OK when nothing is thrown).
template <class Body>
std::pair<inlay_status, std::string> outcome(Body&& body) {
    try {
        body();
    } catch (const Error& e) {
        return {e.status(), e.what()};
    }
    return {INLAY_OK, ""};
}

}  // namespace

TEST_CASE("a KV pool larger than the device's memory is refused before allocating", "[memory]") {
    const auto model = default_model();
    const Executor& ex = model->executor();
    const size_t total = ex.memory_info().total_bytes;
    REQUIRE(total > 0);
    const size_t block_bytes = ex.kv_block_bytes(ex.kv_geometry(16, DType::F16));
    KvPoolOptions o;
    o.budget_blocks = static_cast<int64_t>(total / block_bytes) + 1;  // one block more than the machine holds
    const auto [status, message] = outcome([&] { (void)make_kv_pool(ex, o); });
    CHECK(status == INLAY_ERR_OUT_OF_MEMORY);
    CHECK(message.find(std::to_string(o.budget_blocks) + " blocks") != std::string::npos);
    CHECK(message.find(std::to_string(total)) != std::string::npos);

    // A pool that fits is still made.
    o.budget_blocks = 8;
    CHECK(make_kv_pool(ex, o)->n_blocks() == 8);
}

TEST_CASE("a workspace larger than the device's memory is refused before allocating", "[memory]") {
    const auto model = default_model();
    const Executor& ex = model->executor();
    const int64_t tokens = int64_t{1} << 40;
    const auto [status, message] = outcome([&] { (void)ex.new_workspace(tokens, 128); });
    CHECK(status == INLAY_ERR_OUT_OF_MEMORY);
    CHECK(message.find("forward pass of " + std::to_string(tokens) + " tokens") != std::string::npos);
    CHECK(ex.new_workspace(4096, 128)->max_tokens() == 4096);
}

TEST_CASE("a budget in bytes is cut at max_blocks; a budget in blocks is not", "[memory]") {
    KvPoolOptions o;
    o.budget_bytes = int64_t{1} << 40;
    o.max_blocks = 1000;
    CHECK(kv_budget_blocks(o, 4096) == 1000);
    o.max_blocks = 0;
    CHECK(kv_budget_blocks(o, 4096) == (int64_t{1} << 28));
    o.budget_bytes = 0;
    o.budget_blocks = 5000;
    o.max_blocks = 1000;
    CHECK(kv_budget_blocks(o, 4096) == 5000);
    // The block size changes the block count of a byte budget, not its bytes.
    o.budget_blocks = 0;
    o.budget_bytes = 1 << 20;
    o.max_blocks = kMaxDeviceBudgetBlocks;
    CHECK(kv_budget_blocks(o, 512) == 2048);
}
