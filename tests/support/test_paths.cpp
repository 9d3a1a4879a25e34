#include "support/test_paths.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace inlay::test {

std::filesystem::path shared_dir() {
    if (const char* env = std::getenv("INLAY_SHARED_DIR"); env && *env) return env;
    return INLAY_SHARED_DIR;
}

std::filesystem::path testdata(const std::string& relative) { return shared_dir() / "testdata" / relative; }

// Both may be moved by the environment: scripts/gpu-check.sh runs the test programs on
// another machine, from a bundle laid out like the build tree beside a copy of the source.
std::filesystem::path binary_dir() {
    if (const char* env = std::getenv("INLAY_BINARY_DIR"); env && *env) return env;
    return INLAY_BINARY_DIR;
}
std::filesystem::path source_dir() {
    if (const char* env = std::getenv("INLAY_SOURCE_DIR"); env && *env) return env;
    return INLAY_SOURCE_DIR;
}

std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path.string());
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::filesystem::path scratch_root() {
    // A second ctest registration of the same program (another environment) runs beside
    // the first and names its own folder, so the two never share files.
    auto root = binary_dir() / "test-scratch";
    if (const char* tag = std::getenv("INLAY_TEST_SCRATCH_TAG"); tag && *tag) root /= tag;
    return root;
}

std::filesystem::path scratch_dir(const std::string& name) {
    auto dir = scratch_root() / name;
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

}  // namespace inlay::test
