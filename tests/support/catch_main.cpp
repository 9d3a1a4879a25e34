// The main of every Catch2 test program. A program may define inlay_test_skip_reason()
// (a device precondition such as "a CUDA device is present"): when it returns a reason,
// the program prints it and exits with 77, which ctest reports as skipped; that skip
// stands even with INLAY_TEST_NO_SKIP=1 (a missing device is not a missing input).
// After the run it prints how many cases skipped for a missing input
// (inlay::test::skip_missing), and why.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "support/skip.h"

__attribute__((weak)) const char* inlay_test_skip_reason() { return nullptr; }

namespace inlay::test {
std::vector<std::string>& skipped_cases();  // skipped_cases.cpp
}  // namespace inlay::test

int main(int argc, char** argv) {
    if (const char* why = inlay_test_skip_reason()) {
        std::printf("SKIPPED: %s\n", why);
        inlay_test_log_skip(INLAY_BINARY_DIR, INLAY_SKIP_DEVICE, why);
        return 77;
    }
    const int rc = Catch::Session().run(argc, argv);
    const auto& skipped = inlay::test::skipped_cases();
    std::printf("inlay: %zu test case(s) skipped for a missing input\n", skipped.size());
    for (const std::string& s : skipped) std::printf("  skipped %s\n", s.c_str());
    return rc;
}
