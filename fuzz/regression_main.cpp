// The plain (non-libFuzzer) driver of a fuzz target: feeds the target's seed corpus and
// every file under the given paths to LLVMFuzzerTestOneInput, so that inputs that once
// crashed (fuzz/regressions/NAME/) run in every build as a ctest test.
//
//   fuzz_regress_NAME [PATH...]            seeds, then each file (folders: sorted, recursive)
//   fuzz_regress_NAME --write-seeds DIR    writes the seed corpus into DIR (scripts/fuzz.sh)
//
// A finding aborts the process (see fuzz_support.h), which fails the test.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_support.h"

extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace {

int run_one(const std::string& bytes) {
    return LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

std::string read_all(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

int main(int argc, char** argv) {
    namespace fs = std::filesystem;
    if (argc == 3 && std::string(argv[1]) == "--write-seeds") {
        const fs::path dir = argv[2];
        fs::create_directories(dir);
        const auto seeds = inlay::fuzz::seeds();
        for (const auto& seed : seeds) inlay::fuzz::write_file(dir / seed.name, seed.bytes);
        std::printf("%zu seeds written to %s\n", seeds.size(), dir.c_str());
        return 0;
    }
    if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
    size_t n_seeds = 0, n_files = 0;
    for (const auto& seed : inlay::fuzz::seeds()) {
        run_one(seed.bytes);
        ++n_seeds;
    }
    for (int i = 1; i < argc; ++i) {
        const fs::path path = argv[i];
        std::vector<fs::path> files;
        if (fs::is_directory(path)) {
            for (const auto& entry : fs::recursive_directory_iterator(path))
                if (entry.is_regular_file() && entry.path().filename() != "README.md") files.push_back(entry.path());
            std::sort(files.begin(), files.end());
        } else if (fs::is_regular_file(path)) {
            files.push_back(path);
        } else {
            std::fprintf(stderr, "%s: no such file or folder\n", path.c_str());
            return 1;
        }
        for (const auto& file : files) {
            std::printf("%s\n", file.c_str());
            std::fflush(stdout);
            run_one(read_all(file));
            ++n_files;
        }
    }
    std::printf("%zu seeds and %zu regression inputs passed\n", n_seeds, n_files);
    return 0;
}
