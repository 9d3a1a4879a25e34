// A read-only memory mapping of a whole file. Zero-copy tensor views point into it,
// so it must outlive them; it is move-only. Files of 2 MiB or more are mapped at a 2 MiB
// boundary with the huge page advice, so that weights streamed from it can sit in huge
// pages (mapped_file.cpp).
#pragma once

#include <cstddef>
#include <span>
#include <string>

namespace inlay {

class MappedFile {
public:
    MappedFile() = default;
    // Maps `path`; throws Error(INLAY_ERR_IO) naming the file and the system error.
    explicit MappedFile(const std::string& path);
    ~MappedFile();
    MappedFile(MappedFile&& other) noexcept;
    MappedFile& operator=(MappedFile&& other) noexcept;
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    [[nodiscard]] std::span<const std::byte> bytes() const { return {data_, size_}; }
    [[nodiscard]] const std::byte* data() const { return data_; }
    [[nodiscard]] size_t size() const { return size_; }
    [[nodiscard]] const std::string& path() const { return path_; }
    // The alignment of data() for files of at least this many bytes.
    static constexpr size_t kHugeAlign = size_t{2} << 20;

private:
    void release() noexcept;

    std::string path_;
    const std::byte* data_ = nullptr;
    size_t size_ = 0;
};

}  // namespace inlay
