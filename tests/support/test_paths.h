// Where tests find their inputs, and how they skip when an input is absent.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

namespace inlay::test {

// ../shared beside the source tree (INLAY_SHARED_DIR at configure time).
std::filesystem::path shared_dir();
// shared_dir() / "testdata" / relative
std::filesystem::path testdata(const std::string& relative);
// Where scratch_dir makes its directories: the build tree's test-scratch (in a subfolder
// named by INLAY_TEST_SCRATCH_TAG when that is set).
std::filesystem::path scratch_root();
// A fresh, empty directory for this test's files under scratch_root().
std::filesystem::path scratch_dir(const std::string& name);
// The build directory (for built examples and tools).
std::filesystem::path binary_dir();
std::filesystem::path source_dir();
// The whole content of a file (binary); throws std::runtime_error when it cannot be opened.
std::string read_file(const std::filesystem::path& path);

// A test case that cannot run here because an input (testdata, a tool, a toolchain) is
// missing: WARNs "SKIPPED: why" and counts the skip (support/skip.h); with
// INLAY_TEST_NO_SKIP=1 (CI) it is a failure of the case instead, with the same message.
// The caller stops the case (or the part that needs the input) after it.
void skip_missing(const std::string& why);
// The skips of this program so far, "test case: why" (defined and printed at the end by
// catch_main.cpp).
std::vector<std::string>& skipped_cases();

}  // namespace inlay::test

// Skips the rest of the current test case (see skip_missing) with `why`.
#define INLAY_SKIP(why)                    \
    do {                                   \
        ::inlay::test::skip_missing(why);  \
        return;                            \
    } while (0)

// Skips the rest of the current test case when `path` does not exist (shared/testdata
// is optional outside CI; CI sets INLAY_TEST_NO_SKIP=1, which makes this a failure).
#define INLAY_REQUIRE_FILE_OR_SKIP(path)                                                       \
    do {                                                                                       \
        if (!std::filesystem::exists(path)) {                                                  \
            INLAY_SKIP((path).string() + " is absent (set INLAY_SHARED_DIR)");                 \
        }                                                                                      \
    } while (0)
