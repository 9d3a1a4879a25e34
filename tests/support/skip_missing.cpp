// skip_missing: the Catch2 side of a skip for a missing input (see test_paths.h). In a
// file of its own because it needs Catch2's implementation, which programs that only use
// the fixtures and paths (the fuzz regression runners, with a main of their own) lack.
#include <catch2/catch.hpp>

#include "support/skip.h"
#include "support/test_paths.h"

namespace inlay::test {

void skip_missing(const std::string& why) {
    if (inlay_test_no_skip()) {
        FAIL_CHECK("SKIPPED: " << why << " (a failure: INLAY_TEST_NO_SKIP=1 forbids skipping)");
        return;
    }
    WARN("SKIPPED: " << why);
    const std::string entry = Catch::getResultCapture().getCurrentTestName() + ": " + why;
    skipped_cases().push_back(entry);
    inlay_test_log_skip(binary_dir().c_str(), INLAY_SKIP_MISSING, entry.c_str());
}

}  // namespace inlay::test
