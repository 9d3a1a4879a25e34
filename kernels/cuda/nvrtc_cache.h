// An on-disk cache of NVRTC compilations: a program compiled once is loaded from a file
// on the next start instead of being compiled again (seconds per attention variant).
//
// Where: the caller chooses the directory; nothing here reads the environment. A host
// would typically use $XDG_CACHE_HOME/inlay/nvrtc (or ~/.cache/inlay/nvrtc), with an
// option to turn it off (an empty path).
//
// The key: a canonical serialisation of everything that changes the output (the source
// and its name, every header's name and text in order, the name expressions, the
// options, the arch, CUBIN or PTX, NVRTC's version, the driver's version and this
// cache's format version). The file is named by a 64-bit hash of the key, and the entry
// stores the key itself: a lookup returns an entry only when the stored key equals the
// request's byte for byte, so a hash collision is a miss, never another program's image.
//
// An entry that fails any check (magic, format version, a size beyond the file, the
// checksum, the key) is rejected and recompiled, then overwritten. Entries are written to
// a uniquely named temporary file in the same directory and renamed into place, so a
// reader (thread or process) sees a whole entry or none. Failures of the cache itself
// (a directory that cannot be created, a full disk) never fail a compilation: the result
// is returned, and last_error() says what went wrong.
//
// Thread safety: one CompileCache may be used from several threads at once, and several
// caches (or processes) may share a directory.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nvrtc_compile.h"

namespace inlay::cuda::nvrtc {

// Bumped whenever the key or the entry layout changes: old entries then simply miss.
inline constexpr std::uint32_t cache_format_version = 1;

// Entry layout (integers little-endian):
//   [0, 8)    magic "INLNVRC1"
//   [8, 12)   u32 format version
//   [12, 16)  u32 number of lowered names
//   [16, 24)  u64 key size
//   [24, 32)  u64 image size
//   [32, 40)  u64 log size
//   then the key, the image, the log, each lowered name as u64 size + bytes,
//   and last a u64 checksum (hash64) of every byte before it.
inline constexpr std::size_t cache_entry_header_bytes = 40;
inline constexpr std::size_t cache_entry_image_size_offset = 24;
// Larger files are rejected without being read (a real entry is a few MB).
inline constexpr std::uint64_t cache_entry_max_bytes = std::uint64_t{1} << 30;

// 64-bit FNV-1a. Any single changed byte changes the hash.
[[nodiscard]] std::uint64_t hash64(std::string_view bytes);

// The canonical key of a request (length-prefixed fields, see above).
[[nodiscard]] std::string cache_key(const Request& request, int nvrtc_version, int driver_version);

// An entry's bytes for a successful result (its image, lowered names and log).
[[nodiscard]] std::string encode_cache_entry(std::string_view key, const Result& result);

// The result stored in `bytes` if it is a valid entry for `key`, else why not.
struct DecodedEntry {
    std::optional<Result> result;
    std::string error;  // empty when result is set
};
[[nodiscard]] DecodedEntry decode_cache_entry(std::string_view bytes, std::string_view key);

struct CacheStats {
    std::uint64_t hits = 0;            // results returned from an entry
    std::uint64_t misses = 0;          // lookups without a valid entry (rejected ones included)
    std::uint64_t stores = 0;          // entries written
    std::uint64_t rejected = 0;        // entries present but corrupt, unreadable or for another key
    std::uint64_t store_failures = 0;  // entries that could not be written
};

class CompileCache {
public:
    // directory: created if missing; empty turns caching off (compile() just compiles).
    // driver_version: cudaDriverGetVersion's value, 0 where there is none.
    CompileCache(std::filesystem::path directory, int driver_version);

    [[nodiscard]] bool enabled() const { return !directory_.empty(); }
    [[nodiscard]] const std::filesystem::path& directory() const { return directory_; }

    // The request's key, and the file its entry lives in (empty when caching is off).
    [[nodiscard]] std::string key(const Request& request) const;
    [[nodiscard]] std::filesystem::path entry_path(const Request& request) const;

    // The cached result if a valid entry exists, else a miss (counted; a present but
    // invalid entry is also counted as rejected).
    [[nodiscard]] std::optional<Result> lookup(const Request& request);

    // Writes the entry of a successful result atomically; false (and last_error) if it
    // could not. Failed results (and empty images) are never stored.
    bool store(const Request& request, const Result& result);

    // lookup, else nvrtc::compile and, when it succeeded, store.
    [[nodiscard]] Result compile(const Request& request);

    [[nodiscard]] CacheStats stats() const;
    // The last failure of the cache itself (a rejected entry, a failed write); empty if none.
    [[nodiscard]] std::string last_error() const;

private:
    void fail(std::string message);

    std::filesystem::path directory_;
    int driver_version_;
    int nvrtc_version_;
    std::atomic<std::uint64_t> hits_{0}, misses_{0}, stores_{0}, rejected_{0}, store_failures_{0};
    mutable std::mutex error_mutex_;
    std::string last_error_;
};

}  // namespace inlay::cuda::nvrtc
