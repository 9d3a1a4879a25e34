// AtomicFile: writes a file under a temporary name beside its destination and renames
// it into place on commit(), so readers never see a half-written model file and a failed
// write leaves any earlier file at that path untouched. Used by the GGUF and
// safetensors writers. Not thread-safe; one writer per object.
#pragma once

#include <cstddef>
#include <cstdio>
#include <span>
#include <string>

namespace inlay {

class AtomicFile {
public:
    // Creates "<path>.tmp.<pid>"; throws INLAY_ERR_IO when it cannot.
    explicit AtomicFile(std::string path);
    // Removes the temporary file unless commit() succeeded.
    ~AtomicFile();
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;

    // Appends n bytes; throws INLAY_ERR_IO (naming the temporary file) on failure.
    void write(const void* data, size_t n);
    // Closes the temporary file and renames it to the destination; throws INLAY_ERR_IO.
    void commit();

private:
    std::string path_;
    std::string tmp_;
    std::FILE* file_ = nullptr;
    bool committed_ = false;
};

// Writes `bytes` to `path` through an AtomicFile.
void write_file_atomically(const std::string& path, std::span<const std::byte> bytes);

}  // namespace inlay
