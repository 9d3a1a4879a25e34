// BatchBuilder's flat (CSR) description of a ragged batch, and the KV geometry's
// canonical block size, computed from the definitions.
#include "backend_test_util.h"

using namespace inlay;
using namespace inlay::test;

TEST_CASE("BatchBuilder lays a ragged batch out flat", "[batch]") {
    BatchBuilder bb;
    const int32_t a = bb.add_sequence(std::vector<int32_t>{4, 1, 7}, 9);
    const int32_t c = bb.add_sequence(std::vector<int32_t>{}, 0);
    const int32_t d = bb.add_sequence(std::vector<int32_t>{2}, 3);
    REQUIRE(a == 0);
    REQUIRE(c == 1);
    REQUIRE(d == 2);
    bb.add_tokens(a, std::vector<int32_t>{10, 11, 12}, 6, 2);
    bb.add_token(20, 2, d, true);
    const BatchDesc desc = bb.desc();
    REQUIRE(desc.n_tokens() == 4);
    REQUIRE(desc.n_seqs() == 3);
    REQUIRE(std::vector<int32_t>(desc.tokens.begin(), desc.tokens.end()) == std::vector<int32_t>{10, 11, 12, 20});
    REQUIRE(std::vector<int32_t>(desc.positions.begin(), desc.positions.end()) == std::vector<int32_t>{6, 7, 8, 2});
    REQUIRE(std::vector<int32_t>(desc.seq_of_token.begin(), desc.seq_of_token.end()) == std::vector<int32_t>{0, 0, 0, 2});
    REQUIRE(std::vector<int32_t>(desc.kv_indptr.begin(), desc.kv_indptr.end()) == std::vector<int32_t>{0, 3, 3, 4});
    REQUIRE(std::vector<int32_t>(desc.kv_indices.begin(), desc.kv_indices.end()) == std::vector<int32_t>{4, 1, 7, 2});
    REQUIRE(std::vector<int32_t>(desc.kv_len.begin(), desc.kv_len.end()) == std::vector<int32_t>{9, 0, 3});
    REQUIRE(std::vector<int32_t>(desc.logit_rows.begin(), desc.logit_rows.end()) == std::vector<int32_t>{1, 2, 3});
    REQUIRE(desc.block_table(0).size() == 3);
    REQUIRE(desc.block_table(1).empty());
    REQUIRE(desc.block_table(2)[0] == 2);
    validate_batch(desc, BatchLimits{100, 4, 8, 4, 3});
    REQUIRE(status_of([&] { validate_batch(desc, BatchLimits{100, 4, 7, 4, 3}); }) == INLAY_ERR_INTERNAL);  // block 7
    REQUIRE(status_of([&] { validate_batch(desc, BatchLimits{100, 4, 8, 4, 2}); }) == INLAY_ERR_INTERNAL);  // 3 rows
    REQUIRE(status_of([&] { validate_batch(desc, BatchLimits{20, 4, 8, 4, 3}); }) == INLAY_ERR_INVALID_TOKEN);
    REQUIRE_FALSE(desc.has_fed_tokens());
    bb.clear();
    REQUIRE(bb.desc().n_tokens() == 0);
    REQUIRE(bb.desc().kv_indptr.size() == 1);
}

TEST_CASE("fed tokens name rows of the step before; their count is checked", "[batch]") {
    BatchBuilder bb;
    const int32_t a = bb.add_sequence(std::vector<int32_t>{3}, 2);
    const int32_t b = bb.add_sequence(std::vector<int32_t>{5}, 1);
    bb.add_token(40, 0, a);           // before the first fed token: -1 is filled in for it
    bb.add_fed_token(2, 1, a, true);  // the id of row 2 of the previous step
    bb.add_fed_token(0, 0, b, true);
    const BatchDesc desc = bb.desc();
    REQUIRE(desc.has_fed_tokens());
    REQUIRE(std::vector<int32_t>(desc.fed_rows.begin(), desc.fed_rows.end()) == std::vector<int32_t>{-1, 2, 0});
    REQUIRE(std::vector<int32_t>(desc.tokens.begin(), desc.tokens.end()) == std::vector<int32_t>{40, 0, 0});
    REQUIRE(std::vector<int32_t>(desc.logit_rows.begin(), desc.logit_rows.end()) == std::vector<int32_t>{1, 2});
    validate_batch(desc, BatchLimits{100, 4, 8, 4, 3, 3});
    // The previous step chose 2 ids (or none): row 2 is not there.
    REQUIRE(status_of([&] { validate_batch(desc, BatchLimits{100, 4, 8, 4, 3, 2}); }) == INLAY_ERR_INTERNAL);
    REQUIRE(status_of([&] { validate_batch(desc, BatchLimits{100, 4, 8, 4, 3, 0}); }) == INLAY_ERR_INTERNAL);
    // A token added after a fed one gets its own -1; clear() forgets the fed rows.
    bb.add_token(41, 1, b);
    REQUIRE(bb.desc().fed_rows.size() == 4);
    REQUIRE(bb.desc().fed_rows[3] == -1);
    bb.clear();
    REQUIRE_FALSE(bb.desc().has_fed_tokens());
}

TEST_CASE("kv_canonical_block_bytes follows the canonical layout", "[batch]") {
    REQUIRE(kv_canonical_block_bytes(KvGeometry{3, 2, 64, 16, DType::F16}) == size_t{3} * 2 * 2 * 16 * 64 * 2);
    REQUIRE(kv_canonical_block_bytes(KvGeometry{1, 1, 8, 4, DType::F32}) == size_t{2} * 4 * 8 * 4);
    REQUIRE(status_of([] { (void)kv_canonical_block_bytes(KvGeometry{1, 1, 8, 4, DType::Q8_0}); }) == INLAY_ERR_UNSUPPORTED);
    REQUIRE(status_of([] { (void)kv_canonical_block_bytes(KvGeometry{0, 1, 8, 4, DType::F16}); }) == INLAY_ERR_INVALID_ARGUMENT);
    REQUIRE(status_of([] { (void)kv_canonical_block_bytes(KvGeometry{1, 1, 8, int64_t{1} << 40, DType::F16}); }) ==
            INLAY_ERR_INVALID_ARGUMENT);
}
