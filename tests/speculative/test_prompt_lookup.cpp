// Prompt lookup: the longest ending that occurred before, its most recent occurrence,
// the tokens that followed, bounded by the request.
#include <catch2/catch.hpp>

#include "speculative/prompt_lookup.h"

using namespace inlay;

TEST_CASE("prompt lookup proposes what followed the most recent earlier occurrence", "[speculative][lookup]") {
    std::vector<int32_t> out;
    LookupOptions o;  // n-grams of 3 down to 2
    // "1 2 3 4 5 ... 1 2 3": the ending 1 2 3 occurred at the start; 4 5 6 followed.
    const std::vector<int32_t> a = {1, 2, 3, 4, 5, 6, 9, 1, 2, 3};
    REQUIRE(propose_by_lookup(a, 3, o, out) == 3);
    REQUIRE(out == std::vector<int32_t>{4, 5, 6});
    REQUIRE(propose_by_lookup(a, 10, o, out) == 7);  // up to the end of the context
    REQUIRE(out == std::vector<int32_t>{4, 5, 6, 9, 1, 2, 3});
    // The most recent occurrence wins.
    const std::vector<int32_t> b = {7, 8, 1, 7, 8, 2, 7, 8};
    REQUIRE(propose_by_lookup(b, 2, o, out) == 2);
    REQUIRE(out == std::vector<int32_t>{2, 7});
    // The longest ending wins over a more recent shorter one: 5 7 8 (3-gram) at the start.
    const std::vector<int32_t> c = {5, 7, 8, 11, 7, 8, 12, 5, 7, 8};
    REQUIRE(propose_by_lookup(c, 1, o, out) == 1);
    REQUIRE(out == std::vector<int32_t>{11});
    // No earlier occurrence of any ending of 2 or more tokens; a 1-gram needs ngram_min 1.
    const std::vector<int32_t> d = {1, 2, 3, 4, 2};
    REQUIRE(propose_by_lookup(d, 4, o, out) == 0);
    REQUIRE(out.empty());
    LookupOptions one = o;
    one.ngram_min = 1;
    REQUIRE(propose_by_lookup(d, 4, one, out) == 3);
    REQUIRE(out == std::vector<int32_t>{3, 4, 2});
    // Nothing asked, nothing to look in.
    REQUIRE(propose_by_lookup(a, 0, o, out) == 0);
    REQUIRE(propose_by_lookup(std::vector<int32_t>{}, 4, o, out) == 0);
    REQUIRE(propose_by_lookup(std::vector<int32_t>{3}, 4, one, out) == 0);
}
