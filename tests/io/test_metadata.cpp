#include <catch2/catch.hpp>

#include "core/error.h"
#include "io/metadata.h"

using namespace inlay;

TEST_CASE("typed getters convert what fits and name the key otherwise", "[metadata]") {
    Metadata md;
    REQUIRE(md.add("b", MetadataValue::from_bool(true)));
    REQUIRE(md.add("u32", MetadataValue::from_int(ValueType::U32, 7)));
    REQUIRE(md.add("u64", MetadataValue::from_u64(uint64_t{1} << 63)));
    REQUIRE(md.add("u64small", MetadataValue::from_int(ValueType::U64, 5)));
    REQUIRE(md.add("f", MetadataValue::from_float(ValueType::F32, 0.5)));
    REQUIRE(md.add("s", MetadataValue::from_string("x")));
    REQUIRE_FALSE(md.add("s", MetadataValue::from_string("dup")));

    REQUIRE(md.get_bool("b"));
    REQUIRE(md.get_bool_opt("b").value());
    REQUIRE(md.get_int("b") == 1);
    REQUIRE(md.get_int("u32") == 7);
    REQUIRE(md.get_int("u64small") == 5);
    REQUIRE(md.get_float("u32") == 7.0);
    REQUIRE(md.get_float("f") == 0.5);
    REQUIRE(md.get_string("s") == "x");
    REQUIRE_FALSE(md.get_int_opt("absent").has_value());

    auto status_of = [](auto&& fn) {
        try {
            fn();
        } catch (const Error& e) {
            return e.status();
        }
        return INLAY_OK;
    };
    REQUIRE(status_of([&] { (void)md.get_int("absent"); }) == INLAY_ERR_MISSING);
    REQUIRE(status_of([&] { (void)md.get_int("u64"); }) == INLAY_ERR_BAD_FORMAT);  // > INT64_MAX
    REQUIRE(status_of([&] { (void)md.get_int("s"); }) == INLAY_ERR_BAD_FORMAT);
    REQUIRE(status_of([&] { (void)md.get_bool("f"); }) == INLAY_ERR_BAD_FORMAT);
    REQUIRE(status_of([&] { (void)md.get_int_in("u32", 8, 10); }) == INLAY_ERR_BAD_FORMAT);
    try {
        (void)md.get_string("u32");
        FAIL("expected an error");
    } catch (const Error& e) {
        REQUIRE_THAT(e.what(), Catch::Contains("'u32'") && Catch::Contains("expected string"));
    }
}
