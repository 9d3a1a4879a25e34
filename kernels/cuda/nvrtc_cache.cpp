// On-disk cache of NVRTC compilations: see nvrtc_cache.h.
#include "nvrtc_cache.h"

#include <chrono>
#include <cstring>
#include <fstream>
#include <system_error>
#include <utility>

#ifdef _WIN32
#include <process.h>
#else
#include <unistd.h>
#endif

namespace inlay::cuda::nvrtc {
namespace {

namespace fs = std::filesystem;

constexpr char entry_magic[8] = {'I', 'N', 'L', 'N', 'V', 'R', 'C', '1'};
constexpr std::string_view key_tag = "inlay-nvrtc-cache-key";

void put_u32(std::string& out, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void put_u64(std::string& out, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void put_bytes(std::string& out, std::string_view s) {
    put_u64(out, s.size());
    out.append(s);
}

// Bounds-checked reading of an entry: every size is checked against what is left before
// anything is read or allocated, so a corrupt length field cannot run past the data.
class Reader {
public:
    explicit Reader(std::string_view data) : data_(data) {}

    [[nodiscard]] std::size_t left() const { return data_.size() - pos_; }
    [[nodiscard]] std::size_t pos() const { return pos_; }

    bool u32(std::uint32_t& v) { return little_endian(v); }
    bool u64(std::uint64_t& v) { return little_endian(v); }
    bool bytes(std::uint64_t n, std::string_view& out) {
        if (n > left()) return false;
        out = data_.substr(pos_, static_cast<std::size_t>(n));
        pos_ += static_cast<std::size_t>(n);
        return true;
    }

private:
    // An unsigned integer stored little-endian at the read position.
    template <class U>
    bool little_endian(U& v) {
        if (left() < sizeof(U)) return false;
        v = 0;
        for (std::size_t i = 0; i < sizeof(U); ++i) v |= U{static_cast<unsigned char>(data_[pos_ + i])} << (8 * i);
        pos_ += sizeof(U);
        return true;
    }

    std::string_view data_;
    std::size_t pos_ = 0;
};

DecodedEntry reject(std::string why) {
    DecodedEntry d;
    d.error = std::move(why);
    return d;
}

// Unique across processes (the pid, read at every call: a forked child must not reuse its
// parent's), across hosts sharing a directory (the time) and within a process (the counter).
std::string temporary_suffix() {
#ifdef _WIN32
    const long long pid = _getpid();
#else
    const long long pid = getpid();
#endif
    const auto stamp = std::chrono::system_clock::now().time_since_epoch().count();
    static std::atomic<std::uint64_t> counter{0};
    return ".tmp-" + std::to_string(pid) + "-" + std::to_string(stamp) + "-" + std::to_string(counter.fetch_add(1));
}

}  // namespace

std::uint64_t hash64(std::string_view bytes) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (const char c : bytes) {
        h ^= static_cast<unsigned char>(c);
        h *= 0x100000001b3ull;
    }
    return h;
}

std::string cache_key(const Request& request, int nvrtc_version, int driver_version) {
    std::string key;
    put_bytes(key, key_tag);
    put_u32(key, cache_format_version);
    put_u32(key, static_cast<std::uint32_t>(nvrtc_version));
    put_u32(key, static_cast<std::uint32_t>(driver_version));
    put_u32(key, request.cubin ? 1 : 0);
    put_bytes(key, request.arch);
    put_bytes(key, request.source_name);
    put_bytes(key, request.source);
    put_u64(key, request.headers.size());
    for (const Header& h : request.headers) {
        put_bytes(key, h.name);
        put_bytes(key, h.text);
    }
    put_u64(key, request.name_expressions.size());
    for (const std::string& e : request.name_expressions) put_bytes(key, e);
    put_u64(key, request.options.size());
    for (const std::string& o : request.options) put_bytes(key, o);
    return key;
}

std::string encode_cache_entry(std::string_view key, const Result& result) {
    std::string out(entry_magic, sizeof entry_magic);
    put_u32(out, cache_format_version);
    put_u32(out, static_cast<std::uint32_t>(result.lowered_names.size()));
    put_u64(out, key.size());
    put_u64(out, result.image.size());
    put_u64(out, result.log.size());
    out.append(key);
    out.append(result.image.data(), result.image.size());
    out.append(result.log);
    for (const std::string& name : result.lowered_names) put_bytes(out, name);
    put_u64(out, hash64(out));
    return out;
}

DecodedEntry decode_cache_entry(std::string_view bytes, std::string_view key) {
    if (bytes.size() < cache_entry_header_bytes + 8)
        return reject("truncated (" + std::to_string(bytes.size()) + " bytes)");
    if (bytes.size() > cache_entry_max_bytes) return reject("too large");
    if (std::memcmp(bytes.data(), entry_magic, sizeof entry_magic) != 0) return reject("not a cache entry (magic)");

    const std::string_view body = bytes.substr(0, bytes.size() - 8);
    Reader tail(bytes.substr(body.size()));
    std::uint64_t checksum = 0;
    tail.u64(checksum);
    Reader r(body);
    std::string_view ignored;
    r.bytes(sizeof entry_magic, ignored);
    std::uint32_t format = 0, name_count = 0;
    std::uint64_t key_size = 0, image_size = 0, log_size = 0;
    r.u32(format);
    if (format != cache_format_version)
        return reject("format version " + std::to_string(format) + ", expected " +
                      std::to_string(cache_format_version));
    if (checksum != hash64(body)) return reject("checksum mismatch");

    std::string_view stored_key, image, log;
    if (!r.u32(name_count) || !r.u64(key_size) || !r.u64(image_size) || !r.u64(log_size) ||
        !r.bytes(key_size, stored_key) || !r.bytes(image_size, image) || !r.bytes(log_size, log))
        return reject("a size runs past the end of the entry");
    // Each name takes at least its 8-byte size: bounds the count before reserving.
    if (name_count > r.left() / 8) return reject("name count runs past the end of the entry");
    Result result;
    result.lowered_names.reserve(name_count);
    for (std::uint32_t i = 0; i < name_count; ++i) {
        std::uint64_t n = 0;
        std::string_view name;
        if (!r.u64(n) || !r.bytes(n, name)) return reject("a lowered name runs past the end of the entry");
        result.lowered_names.emplace_back(name);
    }
    if (r.left() != 0) return reject("trailing bytes after the lowered names");
    if (stored_key != key) return reject("key mismatch (another program with the same hash)");
    if (image.empty()) return reject("empty image");

    result.status = Status::ok;
    result.image.assign(image.begin(), image.end());
    result.log.assign(log);
    DecodedEntry d;
    d.result = std::move(result);
    return d;
}

CompileCache::CompileCache(std::filesystem::path directory, int driver_version)
    : directory_(std::move(directory)), driver_version_(driver_version), nvrtc_version_(version()) {
    if (!enabled()) return;
    std::error_code ec;
    fs::create_directories(directory_, ec);
    if (ec) fail("nvrtc cache: cannot create " + directory_.string() + ": " + ec.message());
}

std::string CompileCache::key(const Request& request) const {
    return cache_key(request, nvrtc_version_, driver_version_);
}

std::filesystem::path CompileCache::entry_path(const Request& request) const {
    if (!enabled()) return {};
    static const char digits[] = "0123456789abcdef";
    std::uint64_t h = hash64(key(request));
    std::string name(16, '0');
    for (int i = 15; i >= 0; --i, h >>= 4) name[static_cast<std::size_t>(i)] = digits[h & 0xf];
    return directory_ / (name + ".nvrtc");
}

std::optional<Result> CompileCache::lookup(const Request& request) {
    if (!enabled()) {
        ++misses_;
        return std::nullopt;
    }
    const fs::path path = entry_path(request);
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (ec || st.type() == fs::file_type::not_found) {  // no entry (or no directory)
        ++misses_;
        return std::nullopt;
    }
    auto rejected = [&](const std::string& why) -> std::optional<Result> {
        ++misses_;
        ++rejected_;
        fail("nvrtc cache: rejected " + path.string() + ": " + why);
        return std::nullopt;
    };
    // The size comes from the opened file, so an entry renamed into place meanwhile is
    // read whole (the old or the new one), never a mix.
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) return rejected("cannot open");
    const std::streamoff size = in.tellg();
    if (size < 0) return rejected("cannot read its size");
    if (static_cast<std::uint64_t>(size) > cache_entry_max_bytes) return rejected("too large");
    std::string bytes(static_cast<std::size_t>(size), '\0');
    in.seekg(0);
    in.read(bytes.data(), size);
    if (!in || in.gcount() != size) return rejected("cannot read");
    DecodedEntry d = decode_cache_entry(bytes, key(request));
    if (!d.result) return rejected(d.error);
    ++hits_;
    return std::move(d.result);
}

bool CompileCache::store(const Request& request, const Result& result) {
    if (!enabled() || !result.ok() || result.image.empty()) return false;
    const fs::path path = entry_path(request);
    std::error_code ec;
    fs::create_directories(directory_, ec);  // again: it may have been removed since
    if (ec) {
        ++store_failures_;
        fail("nvrtc cache: cannot create " + directory_.string() + ": " + ec.message());
        return false;
    }
    fs::path tmp = path;
    tmp += temporary_suffix();
    auto failed = [&](const std::string& why) {
        std::error_code ignored;
        fs::remove(tmp, ignored);
        ++store_failures_;
        fail("nvrtc cache: cannot write " + path.string() + ": " + why);
        return false;
    };
    const std::string bytes = encode_cache_entry(key(request), result);
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) return failed("cannot create " + tmp.string());
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        out.flush();
        out.close();
        if (!out) return failed("write failed (disk full?)");
    }
    fs::rename(tmp, path, ec);
    if (ec) return failed("rename: " + ec.message());
    ++stores_;
    return true;
}

Result CompileCache::compile(const Request& request) {
    if (std::optional<Result> cached = lookup(request)) return std::move(*cached);
    Result result = nvrtc::compile(request);
    if (result.ok()) store(request, result);
    return result;
}

CacheStats CompileCache::stats() const {
    CacheStats s;
    s.hits = hits_.load();
    s.misses = misses_.load();
    s.stores = stores_.load();
    s.rejected = rejected_.load();
    s.store_failures = store_failures_.load();
    return s;
}

std::string CompileCache::last_error() const {
    std::lock_guard<std::mutex> lock(error_mutex_);
    return last_error_;
}

void CompileCache::fail(std::string message) {
    std::lock_guard<std::mutex> lock(error_mutex_);
    last_error_ = std::move(message);
}

}  // namespace inlay::cuda::nvrtc
