#include "core/mapped_file.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"

namespace inlay {
namespace {

// Files of at least this size are mapped at an address that is a multiple of it: the
// transparent huge page size of x86-64. A file's pages can then be mapped with one
// page-table entry per 2 MiB wherever the page cache holds them in folios of that size
// (Linux 6.x with large folios: ext4, XFS, tmpfs), and MADV_HUGEPAGE asks the kernel to
// read the file in such folios when it is not cached yet. A decoder streams every weight
// once per token; with 4 KiB pages each 4 KiB costs a TLB miss, under virtualisation a
// nested page walk. Measured on a 2-core Xeon under KVM (Linux 6.18, ext4), a Qwen3-0.6B
// shape Q4_K_M file: one thread streamed it at 8.4-9.0 GB/s from 4 KiB pages (the file just
// written) and 13.1-13.2 GB/s from 2 MiB ones (read again through this mapping); decoding
// it with 2 threads, 40.1-40.8 against 41.4-41.9 tokens/s. That kernel aligned a plain
// mapping by itself and its read-ahead made most folios 2 MiB even without the advice
// (344 of 389 MB, against 352 with it); older kernels do neither. Pages already cached in
// small folios keep them until the cache drops them.
constexpr size_t kHugeAlign = MappedFile::kHugeAlign;

// Maps fd's `size` bytes read-only at a kHugeAlign-aligned address with the huge page
// advice; nullptr where the address space could not be reserved or the mapping failed
// (the caller then maps it plainly, which reports the error).
void* map_huge_aligned(int fd, size_t size) {
    if (size < kHugeAlign || size > SIZE_MAX - kHugeAlign) return nullptr;
    // Reserve size + kHugeAlign of address space, map the file over its aligned part,
    // then give back the slack on both sides.
    const size_t reserve = size + kHugeAlign;
    void* r = ::mmap(nullptr, reserve, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (r == MAP_FAILED) return nullptr;
    const auto start = reinterpret_cast<uintptr_t>(r);
    const uintptr_t aligned = (start + kHugeAlign - 1) & ~(kHugeAlign - 1);
    void* p = ::mmap(reinterpret_cast<void*>(aligned), size, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
    if (p == MAP_FAILED) {
        ::munmap(r, reserve);
        return nullptr;
    }
    if (aligned > start) ::munmap(r, aligned - start);
    const uintptr_t end = aligned + size, reserve_end = start + reserve;
    // The file's last page may be partial: the slack starts at the next page boundary.
    const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    const uintptr_t slack = (end + page - 1) & ~(page - 1);
    if (reserve_end > slack) ::munmap(reinterpret_cast<void*>(slack), reserve_end - slack);
#ifdef MADV_HUGEPAGE
    (void)::madvise(p, size, MADV_HUGEPAGE);  // advice only: EINVAL where THP is off
#endif
    return p;
}

}  // namespace

MappedFile::MappedFile(const std::string& path) : path_(path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail(INLAY_ERR_IO, "cannot open '{}': {}", path, std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        fail(INLAY_ERR_IO, "cannot stat '{}': {}", path, std::strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        fail(INLAY_ERR_IO, "'{}' is not a regular file", path);
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_ > 0) {
        void* p = map_huge_aligned(fd, size_);
        if (p == nullptr) p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            const int err = errno;
            ::close(fd);
            fail(INLAY_ERR_IO, "cannot map '{}': {}", path, std::strerror(err));
        }
        data_ = static_cast<const std::byte*>(p);
    }
    ::close(fd);  // the mapping keeps the file alive
}

MappedFile::~MappedFile() { release(); }

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
    if (this != &other) {
        release();
        path_ = std::move(other.path_);
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
    }
    return *this;
}

void MappedFile::release() noexcept {
    if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
    data_ = nullptr;
    size_ = 0;
}

}  // namespace inlay
