#include "io/atomic_file.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "core/error.h"

namespace inlay {

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)), tmp_(fmt::format("{}.tmp.{}", path_, ::getpid())) {
    file_ = std::fopen(tmp_.c_str(), "wb");
    if (!file_) fail(INLAY_ERR_IO, "cannot create '{}': {}", tmp_, std::strerror(errno));
}

AtomicFile::~AtomicFile() {
    if (committed_) return;
    if (file_) std::fclose(file_);
    std::remove(tmp_.c_str());
}

void AtomicFile::write(const void* data, size_t n) {
    if (n != 0 && std::fwrite(data, 1, n, file_) != n)
        fail(INLAY_ERR_IO, "cannot write '{}': {}", tmp_, std::strerror(errno));
}

void AtomicFile::commit() {
    std::FILE* f = file_;
    file_ = nullptr;  // closed below whatever happens; the destructor only removes
    if (std::fclose(f) != 0) fail(INLAY_ERR_IO, "cannot write '{}': {}", tmp_, std::strerror(errno));
    std::error_code ec;
    std::filesystem::rename(tmp_, path_, ec);
    if (ec) fail(INLAY_ERR_IO, "cannot rename '{}' to '{}': {}", tmp_, path_, ec.message());
    committed_ = true;
}

void write_file_atomically(const std::string& path, std::span<const std::byte> bytes) {
    AtomicFile file(path);
    file.write(bytes.data(), bytes.size());
    file.commit();
}

}  // namespace inlay
