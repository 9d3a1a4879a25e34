// MappedFile: the bytes of the file, read-only; large files at a 2 MiB boundary with the
// huge page advice (so weights streamed from them can sit in huge pages); errors named;
// nothing of the address space left behind.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/mapped_file.h"

using inlay::MappedFile;

namespace {

std::filesystem::path temp_file(const std::string& name, size_t size) {
    const auto path = std::filesystem::temp_directory_path() /
                      ("inlay_test_mapped_file_" + std::to_string(::getpid()) + "_" + name);
    std::vector<char> bytes(size);
    for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>((i * 131 + i / 4096) & 0xff);
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(size));
    return path;
}

bool bytes_match(const MappedFile& f) {
    for (size_t i = 0; i < f.size(); ++i)
        if (static_cast<char>(f.data()[i]) != static_cast<char>((i * 131 + i / 4096) & 0xff)) return false;
    return true;
}

struct Mapping {
    uintptr_t begin = 0, end = 0;
    std::string perms, path;
};

// /proc/self/maps: every mapping of this process.
std::vector<Mapping> mappings() {
    std::ifstream in("/proc/self/maps");
    std::vector<Mapping> out;
    for (std::string line; std::getline(in, line);) {
        std::istringstream fields(line);
        Mapping m;
        std::string range, offset, dev, inode;
        fields >> range >> m.perms >> offset >> dev >> inode;
        std::getline(fields >> std::ws, m.path);
        const size_t dash = range.find('-');
        m.begin = std::stoull(range.substr(0, dash), nullptr, 16);
        m.end = std::stoull(range.substr(dash + 1), nullptr, 16);
        out.push_back(m);
    }
    return out;
}

// An inaccessible anonymous mapping that ends at `begin` or starts at `end`: what would be
// left of the address space reserved to align the file.
bool reservation_left_beside(uintptr_t begin, uintptr_t end) {
    for (const Mapping& m : mappings())
        if (m.perms.rfind("---", 0) == 0 && m.path.empty() && (m.end == begin || m.begin == end)) return true;
    return false;
}

bool anything_mapped_in(uintptr_t begin, uintptr_t end) {
    for (const Mapping& m : mappings())
        if (m.begin < end && begin < m.end) return true;
    return false;
}

// The VmFlags line of the mapping that starts at p (/proc/self/smaps), or "" if none.
std::string vm_flags_at(const void* p) {
    std::ifstream in("/proc/self/smaps");
    std::ostringstream start;
    start << std::hex << reinterpret_cast<uintptr_t>(p) << '-';
    bool inside = false;
    for (std::string line; std::getline(in, line);) {
        if (line.rfind(start.str(), 0) == 0) inside = true;
        else if (inside && line.rfind("VmFlags:", 0) == 0) return line;
    }
    return "";
}

}  // namespace

TEST_CASE("MappedFile: a large file at a 2 MiB boundary, advised into huge pages, released whole",
          "[mapped_file]") {
    // 3 MiB and a partial page: the mapping's end is not a page boundary.
    const size_t size = (size_t{3} << 20) + 1234;
    const auto path = temp_file("large", size);
    const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    uintptr_t begin = 0, end = 0;
    {
        const MappedFile f(path.string());
        REQUIRE(f.size() == size);
        begin = reinterpret_cast<uintptr_t>(f.data());
        end = (begin + size + page - 1) / page * page;
        CHECK(begin % MappedFile::kHugeAlign == 0);
        CHECK(bytes_match(f));
        // The address space reserved for the alignment was given back on both sides.
        CHECK_FALSE(reservation_left_beside(begin, end));
        if (std::filesystem::exists("/sys/kernel/mm/transparent_hugepage/enabled")) {
            const std::string flags = vm_flags_at(f.data());
            INFO(flags);
            CHECK(flags.find(" hg") != std::string::npos);  // MADV_HUGEPAGE's flag
        }
        const MappedFile moved = [&] {
            MappedFile a(path.string());
            MappedFile b = std::move(a);
            CHECK(a.data() == nullptr);
            return b;
        }();
        CHECK(bytes_match(moved));
    }
    CHECK_FALSE(anything_mapped_in(begin, end));
    std::filesystem::remove(path);
}

TEST_CASE("MappedFile: small and empty files, and the errors", "[mapped_file]") {
    const auto small = temp_file("small", 100);
    const MappedFile f(small.string());
    CHECK(f.size() == 100);
    CHECK(bytes_match(f));
    std::filesystem::remove(small);

    const auto empty = temp_file("empty", 0);
    const MappedFile e(empty.string());
    CHECK(e.size() == 0);
    CHECK(e.bytes().empty());
    std::filesystem::remove(empty);

    const auto missing = std::filesystem::temp_directory_path() / "inlay_test_mapped_file_missing";
    try {
        const MappedFile m(missing.string());
        FAIL("a missing file mapped");
    } catch (const inlay::Error& err) {
        CHECK(err.status() == INLAY_ERR_IO);
        CHECK(std::string(err.what()).find(missing.string()) != std::string::npos);
    }
    try {
        const MappedFile d(std::filesystem::temp_directory_path().string());
        FAIL("a directory mapped");
    } catch (const inlay::Error& err) {
        CHECK(err.status() == INLAY_ERR_IO);
    }
}
