// Where tests find their inputs, and how they skip when an input is absent.
#pragma once

#include <filesystem>
#include <string>

#include <catch2/catch.hpp>

namespace inlay::test {

// ../shared beside the source tree (INLAY_SHARED_DIR at configure time).
std::filesystem::path shared_dir();
// shared_dir() / "testdata" / relative
std::filesystem::path testdata(const std::string& relative);
// A fresh, empty directory for this test's files under the build tree.
std::filesystem::path scratch_dir(const std::string& name);
// The build directory (for built examples and tools).
std::filesystem::path binary_dir();
std::filesystem::path source_dir();
// The whole content of a file (binary); throws std::runtime_error when it cannot be opened.
std::string read_file(const std::filesystem::path& path);

}  // namespace inlay::test

// Skips the rest of the current test case, with a visible message, when `path` does
// not exist (shared/testdata is optional outside CI).
#define INLAY_REQUIRE_FILE_OR_SKIP(path)                                                     \
    do {                                                                                     \
        if (!std::filesystem::exists(path)) {                                                \
            WARN("SKIPPED: " << (path).string() << " is absent (set INLAY_SHARED_DIR)");     \
            return;                                                                          \
        }                                                                                    \
    } while (0)
