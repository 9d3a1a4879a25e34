// The on-disk NVRTC cache (kernels/cuda/nvrtc_cache.h), without a GPU: a second compile
// is a hit with the same bytes, every key component changes the entry, corrupt or foreign
// entries are rejected and rewritten, a cache that cannot write still compiles, failures
// are not stored, and concurrent compilers (threads, two caches on one directory, processes)
// all get the same result with no temporary left behind. Real NVRTC compilations are few (14, of
// a tiny kernel); the rest works on keys and entry bytes directly.
#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <latch>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#ifndef _WIN32
#include <sys/wait.h>
#include <unistd.h>
#endif

#include "nvrtc_cache.h"

using namespace inlay::cuda;
namespace fs = std::filesystem;

namespace {

// A fresh directory under the system's temporary directory, removed at the end.
class TempDir {
public:
    TempDir() {
        static std::atomic<int> counter{0};
        std::random_device rd;
        path_ = fs::temp_directory_path() /
                ("inlay-nvrtc-cache-test-" + std::to_string(rd()) + "-" + std::to_string(counter++));
        fs::create_directories(path_);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    const fs::path& path() const { return path_; }

private:
    fs::path path_;
};

// A small kernel with a header and a name expression; the unused variable gives it a
// log (a warning) that is the same at every compile, unlike -Xptxas=-v's timings.
nvrtc::Request small_request() {
    nvrtc::Request req;
    req.source_name = "scale.cu";
    req.source =
        "#include \"scale_factor.cuh\"\n"
        "namespace t {\n"
        "template <int N> __global__ void scale(float* x) {\n"
        "    int unused;\n"
        "    x[threadIdx.x] *= N * SCALE_FACTOR;\n"
        "}\n"
        "}\n";
    req.headers = {{"scale_factor.cuh", "#define SCALE_FACTOR 2.0f\n"}};
    req.name_expressions = {"t::scale<3>"};
    req.options = {"-DOFFSET=0"};
    req.arch = "sm_80";
    req.cubin = true;
    return req;
}

bool same_result(const nvrtc::Result& a, const nvrtc::Result& b) {
    return a.status == b.status && a.image == b.image && a.lowered_names == b.lowered_names && a.log == b.log;
}

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

void write_file(const fs::path& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    REQUIRE(out.good());
}

std::vector<std::string> directory_names(const fs::path& dir) {
    std::vector<std::string> names;
    for (const fs::directory_entry& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
    return names;
}

void put_u64_at(std::string& bytes, std::size_t at, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) bytes[at + static_cast<std::size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xff);
}

// Recomputes an edited entry's checksum, so that only the edit itself is wrong.
void reseal(std::string& entry) {
    put_u64_at(entry, entry.size() - 8, nvrtc::hash64(std::string_view(entry).substr(0, entry.size() - 8)));
}

nvrtc::Result fake_result() {
    nvrtc::Result r;
    r.status = nvrtc::Status::ok;
    for (int i = 0; i < 300; ++i) r.image.push_back(static_cast<char>(i * 7));
    r.lowered_names = {"_Z1av", "_Z1bv"};
    r.log = "a log line\n";
    return r;
}

}  // namespace

TEST_CASE("a second compile of the same request is a hit with the same bytes", "[kernels][nvrtc_cache]") {
    TempDir tmp;
    const fs::path dir = tmp.path() / "nested" / "nvrtc";
    const nvrtc::Request req = small_request();
    nvrtc::CompileCache cache(dir, 12040);
    CHECK(cache.enabled());
    CHECK(fs::is_directory(dir));
    CHECK(cache.last_error().empty());

    const nvrtc::Result first = cache.compile(req);
    INFO(first.message);
    REQUIRE(first.ok());
    REQUIRE(first.lowered_names.size() == 1);
    REQUIRE_FALSE(first.log.empty());
    CHECK(fs::is_regular_file(cache.entry_path(req)));
    CHECK(cache.stats().misses == 1);
    CHECK(cache.stats().stores == 1);
    CHECK(cache.stats().hits == 0);

    const nvrtc::Result second = cache.compile(req);
    CHECK(cache.stats().hits == 1);
    CHECK(cache.stats().misses == 1);
    CHECK(cache.stats().stores == 1);
    CHECK(second.ok());
    CHECK(second.message.empty());
    CHECK(second.image == first.image);
    CHECK(second.lowered_names == first.lowered_names);
    CHECK(second.log == first.log);

    // Another cache object (another process, later) on the same directory finds it too.
    nvrtc::CompileCache again(dir, 12040);
    CHECK(same_result(again.compile(req), first));
    CHECK(again.stats().hits == 1);
    CHECK(again.stats().stores == 0);

    // Another driver: a different entry, compiled and stored beside the first.
    nvrtc::CompileCache other_driver(dir, 12050);
    CHECK(other_driver.entry_path(req) != cache.entry_path(req));
    const nvrtc::Result other = other_driver.compile(req);
    REQUIRE(other.ok());
    CHECK(other_driver.stats().misses == 1);
    CHECK(other_driver.stats().hits == 0);
    CHECK(other_driver.stats().stores == 1);
    CHECK(directory_names(dir).size() == 2);
    CHECK(same_result(cache.compile(req), first));  // the first entry is still there
    CHECK(cache.stats().rejected == 0);
}

TEST_CASE("every component of a request changes its key and its file", "[kernels][nvrtc_cache]") {
    TempDir tmp;
    nvrtc::CompileCache cache(tmp.path(), 12040);
    const nvrtc::Request base = small_request();
    CHECK(cache.key(base) == cache.key(small_request()));
    CHECK(cache.key(base) == nvrtc::cache_key(base, nvrtc::version(), 12040));

    std::vector<std::pair<std::string, nvrtc::Request>> variants;
    auto variant = [&](const std::string& what, auto&& edit) {
        nvrtc::Request r = small_request();
        edit(r);
        variants.emplace_back(what, std::move(r));
    };
    variant("source", [](nvrtc::Request& r) { r.source += " "; });
    variant("source name", [](nvrtc::Request& r) { r.source_name = "other.cu"; });
    variant("header name", [](nvrtc::Request& r) { r.headers[0].name = "other.cuh"; });
    variant("header text", [](nvrtc::Request& r) { r.headers[0].text = "#define SCALE_FACTOR 3.0f\n"; });
    variant("one more header", [](nvrtc::Request& r) { r.headers.push_back({"x.h", ""}); });
    variant("no header", [](nvrtc::Request& r) { r.headers.clear(); });
    variant("name expression", [](nvrtc::Request& r) { r.name_expressions[0] = "t::scale<4>"; });
    variant("no name expression", [](nvrtc::Request& r) { r.name_expressions.clear(); });
    variant("option", [](nvrtc::Request& r) { r.options.push_back("-DY=2"); });
    variant("no option", [](nvrtc::Request& r) { r.options.clear(); });
    variant("arch", [](nvrtc::Request& r) { r.arch = "sm_90"; });
    variant("PTX", [](nvrtc::Request& r) { r.cubin = false; });
    // Fields are length-prefixed: moving bytes from one field to the next is another key.
    variant("split header", [](nvrtc::Request& r) {
        r.headers = {{"scale_factor.cuh#define", " SCALE_FACTOR 2.0f\n"}};
    });
    variant("joined options", [](nvrtc::Request& r) { r.options = {"-DOFFSET=0-DX=1"}; });
    variant("split options", [](nvrtc::Request& r) { r.options = {"-DOFFSET=0", "-DX=1"}; });
    variant("options as names", [](nvrtc::Request& r) {
        r.name_expressions.push_back("-DOFFSET=0");
        r.options.clear();
    });

    std::vector<std::string> keys = {cache.key(base)};
    std::vector<fs::path> paths = {cache.entry_path(base)};
    for (const auto& [what, r] : variants) {
        keys.push_back(cache.key(r));
        paths.push_back(cache.entry_path(r));
    }
    keys.push_back(nvrtc::cache_key(base, nvrtc::version() + 10, 12040));  // another NVRTC
    keys.push_back(nvrtc::cache_key(base, nvrtc::version(), 12041));       // another driver
    keys.push_back(nvrtc::cache_key(base, nvrtc::version(), 0));           // no driver
    nvrtc::CompileCache other_driver(tmp.path(), 12041);
    paths.push_back(other_driver.entry_path(base));
    for (size_t i = 0; i < keys.size(); ++i)
        for (size_t j = i + 1; j < keys.size(); ++j) {
            INFO("key #" << i << " vs #" << j << " (0: base, then the variants in order, then the versions)");
            CHECK(keys[i] != keys[j]);
        }
    for (size_t i = 0; i < paths.size(); ++i)
        for (size_t j = i + 1; j < paths.size(); ++j) CHECK(paths[i] != paths[j]);
    for (const fs::path& p : paths) CHECK(p.parent_path() == tmp.path());

    // The key starts with its tag and the cache's format version.
    const std::string key = cache.key(base);
    const std::string tag = "inlay-nvrtc-cache-key";
    REQUIRE(key.size() > 8 + tag.size() + 4);
    CHECK(key.substr(8, tag.size()) == tag);
    CHECK(static_cast<unsigned char>(key[8 + tag.size()]) == nvrtc::cache_format_version);
}

TEST_CASE("a damaged entry never decodes", "[kernels][nvrtc_cache]") {
    const std::string key = nvrtc::cache_key(small_request(), 13000, 12040);
    const nvrtc::Result fake = fake_result();
    const std::string entry = nvrtc::encode_cache_entry(key, fake);
    const nvrtc::DecodedEntry good = nvrtc::decode_cache_entry(entry, key);
    INFO(good.error);
    REQUIRE(good.result);
    CHECK(same_result(*good.result, fake));
    CHECK(good.result->message.empty());

    // Every single flipped byte and every truncation is caught.
    for (size_t i = 0; i < entry.size(); ++i) {
        std::string bad = entry;
        bad[i] = static_cast<char>(bad[i] ^ 0x20);
        INFO("byte " << i);
        CHECK_FALSE(nvrtc::decode_cache_entry(bad, key).result);
    }
    for (size_t n = 0; n < entry.size(); ++n) {
        INFO("truncated to " << n);
        CHECK_FALSE(nvrtc::decode_cache_entry(std::string_view(entry).substr(0, n), key).result);
    }
    CHECK_FALSE(nvrtc::decode_cache_entry(entry + "x", key).result);

    // Bad fields under a valid checksum: the bounds checks themselves.
    auto resealed = [&](auto&& edit) {
        std::string bad = entry;
        edit(bad);
        reseal(bad);
        return nvrtc::decode_cache_entry(bad, key);
    };
    const nvrtc::DecodedEntry huge_image =
        resealed([](std::string& e) { put_u64_at(e, nvrtc::cache_entry_image_size_offset, std::uint64_t{1} << 62); });
    CHECK_FALSE(huge_image.result);
    CHECK(huge_image.error.find("past the end") != std::string::npos);
    const nvrtc::DecodedEntry huge_key = resealed([](std::string& e) { put_u64_at(e, 16, ~std::uint64_t{0}); });
    CHECK_FALSE(huge_key.result);
    CHECK(huge_key.error.find("past the end") != std::string::npos);
    const nvrtc::DecodedEntry many_names = resealed([](std::string& e) {
        for (int i = 12; i < 16; ++i) e[static_cast<size_t>(i)] = '\xff';
    });
    CHECK_FALSE(many_names.result);
    CHECK(many_names.error.find("name count") != std::string::npos);
    const nvrtc::DecodedEntry newer = resealed([](std::string& e) { e[8] = 2; });
    CHECK_FALSE(newer.result);
    CHECK(newer.error.find("format version 2") != std::string::npos);
    const nvrtc::DecodedEntry trailing = resealed([](std::string& e) { e.insert(e.size() - 8, 1, 'x'); });
    CHECK_FALSE(trailing.result);
    CHECK(trailing.error.find("trailing") != std::string::npos);
    const nvrtc::DecodedEntry short_image = resealed([](std::string& e) {
        put_u64_at(e, nvrtc::cache_entry_image_size_offset, 299);  // one byte moves into the log
    });
    CHECK_FALSE(short_image.result);

    // Another request's entry: a valid entry, but not this key.
    nvrtc::Request other = small_request();
    other.arch = "sm_90";
    const nvrtc::DecodedEntry foreign =
        nvrtc::decode_cache_entry(nvrtc::encode_cache_entry(nvrtc::cache_key(other, 13000, 12040), fake), key);
    CHECK_FALSE(foreign.result);
    CHECK(foreign.error.find("key mismatch") != std::string::npos);

    nvrtc::Result empty = fake;
    empty.image.clear();
    CHECK_FALSE(nvrtc::decode_cache_entry(nvrtc::encode_cache_entry(key, empty), key).result);
    CHECK_FALSE(nvrtc::decode_cache_entry("", key).result);
    CHECK_FALSE(nvrtc::decode_cache_entry(std::string(4096, '\0'), key).result);
}

TEST_CASE("a corrupt or foreign entry on disk is rejected, recompiled and rewritten", "[kernels][nvrtc_cache]") {
    TempDir tmp;
    const nvrtc::Request req = small_request();
    nvrtc::CompileCache cache(tmp.path(), 12040);
    const nvrtc::Result fresh = cache.compile(req);
    INFO(fresh.message);
    REQUIRE(fresh.ok());
    const fs::path path = cache.entry_path(req);
    const std::string valid = read_file(path);
    REQUIRE(valid == nvrtc::encode_cache_entry(cache.key(req), fresh));
    const size_t key_at = nvrtc::cache_entry_header_bytes;
    const size_t image_at = key_at + cache.key(req).size();

    std::mt19937 rng(7);
    std::string garbage(4096, '\0');
    for (char& c : garbage) c = static_cast<char>(rng());
    std::string image_flipped = valid, key_flipped = valid, huge = valid;
    image_flipped[image_at + fresh.image.size() / 2] ^= 1;
    key_flipped[key_at + 30] ^= 1;
    put_u64_at(huge, nvrtc::cache_entry_image_size_offset, std::uint64_t{1} << 60);
    reseal(huge);
    // A collision: another program's valid entry under this request's file name.
    nvrtc::Request other = small_request();
    other.name_expressions = {"t::scale<5>"};
    nvrtc::Result other_result = fake_result();
    const std::string foreign = nvrtc::encode_cache_entry(cache.key(other), other_result);

    const std::vector<std::pair<std::string, std::string>> cases = {
        {"truncated", valid.substr(0, valid.size() / 2)},
        {"a flipped image byte", image_flipped},
        {"a flipped key byte", key_flipped},
        {"garbage", garbage},
        {"a huge image size", huge},
        {"another program's entry", foreign},
    };
    for (const auto& [what, bytes] : cases) {
        INFO(what);
        write_file(path, bytes);
        const nvrtc::CacheStats before = cache.stats();
        const nvrtc::Result r = cache.compile(req);
        const nvrtc::CacheStats after = cache.stats();
        CHECK(after.rejected == before.rejected + 1);
        CHECK(after.misses == before.misses + 1);
        CHECK(after.hits == before.hits);
        CHECK(after.stores == before.stores + 1);
        CHECK(cache.last_error().find("rejected") != std::string::npos);
        CHECK(same_result(r, fresh));
        CHECK(r.image != other_result.image);
        CHECK(read_file(path) == valid);  // rewritten whole
    }
    CHECK(directory_names(tmp.path()).size() == 1);
}

TEST_CASE("a cache that cannot write still compiles, and caching can be off", "[kernels][nvrtc_cache]") {
    TempDir tmp;
    const fs::path file = tmp.path() / "a-file";
    write_file(file, "not a directory");
    const nvrtc::Request req = small_request();

    std::optional<nvrtc::CompileCache> cache;
    REQUIRE_NOTHROW(cache.emplace(file / "nvrtc", 12040));
    CHECK(cache->last_error().find("cannot create") != std::string::npos);
    nvrtc::Result r;
    REQUIRE_NOTHROW(r = cache->compile(req));
    INFO(r.message);
    REQUIRE(r.ok());
    CHECK_FALSE(r.image.empty());
    CHECK(cache->stats().misses == 1);
    CHECK(cache->stats().rejected == 0);
    CHECK(cache->stats().stores == 0);
    CHECK(cache->stats().store_failures == 1);
    CHECK_FALSE(cache->last_error().empty());
    CHECK_FALSE(cache->store(req, r));
    CHECK(cache->stats().store_failures == 2);
    CHECK(read_file(file) == "not a directory");

    // A directory where the entry should be: unreadable and not replaceable.
    const fs::path dir = tmp.path() / "blocked";
    nvrtc::CompileCache blocked(dir, 12040);
    fs::create_directories(blocked.entry_path(req) / "inside");
    CHECK_FALSE(blocked.lookup(req));
    CHECK(blocked.stats().rejected == 1);
    CHECK(blocked.stats().misses == 1);
    CHECK_FALSE(blocked.store(req, r));
    CHECK(blocked.stats().store_failures == 1);
    CHECK(blocked.last_error().find("cannot write") != std::string::npos);
    CHECK(directory_names(dir) == std::vector<std::string>{blocked.entry_path(req).filename().string()});

    nvrtc::CompileCache off({}, 12040);
    CHECK_FALSE(off.enabled());
    CHECK(off.entry_path(req).empty());
    CHECK_FALSE(off.lookup(req));
    CHECK_FALSE(off.store(req, r));
    CHECK(off.stats().misses == 1);
    CHECK(off.stats().stores == 0);
    CHECK(off.stats().store_failures == 0);
    CHECK(off.last_error().empty());
}

TEST_CASE("a failed compilation is not stored", "[kernels][nvrtc_cache]") {
    TempDir tmp;
    nvrtc::CompileCache cache(tmp.path(), 12040);
    nvrtc::Request req;
    req.source = "__global__ void broken(float* x) { x[0] = ; }\n";
    req.source_name = "broken.cu";
    for (int i = 0; i < 2; ++i) {
        const nvrtc::Result r = cache.compile(req);
        CHECK(r.status == nvrtc::Status::compile_error);
        CHECK(r.log.find("broken.cu") != std::string::npos);
    }
    CHECK(cache.stats().misses == 2);
    CHECK(cache.stats().hits == 0);
    CHECK(cache.stats().stores == 0);
    CHECK(cache.stats().store_failures == 0);
    CHECK_FALSE(cache.store(req, cache.compile(req)));
    nvrtc::Result empty = fake_result();
    empty.image.clear();
    CHECK_FALSE(cache.store(req, empty));  // would never decode
    CHECK(directory_names(tmp.path()).empty());
    CHECK(cache.last_error().empty());
}

TEST_CASE("concurrent compilers of one request agree and leave no temporaries", "[kernels][nvrtc_cache]") {
    TempDir tmp;
    const nvrtc::Request req = small_request();
    nvrtc::CompileCache a(tmp.path(), 12040), b(tmp.path(), 12040);

    // Four threads, two per cache object, compile at once: all miss, compile, store.
    constexpr int threads = 4;
    std::vector<nvrtc::Result> results(threads);
    {
        std::latch start(threads);
        std::vector<std::thread> pool;
        for (int i = 0; i < threads; ++i)
            pool.emplace_back([&, i] {
                start.arrive_and_wait();
                results[static_cast<size_t>(i)] = (i % 2 ? b : a).compile(req);
            });
        for (std::thread& t : pool) t.join();
    }
    INFO(results[0].message);
    REQUIRE(results[0].ok());
    for (const nvrtc::Result& r : results) CHECK(same_result(r, results[0]));

    // Writers and readers at once, no compiling: every read sees a whole entry.
    constexpr int rounds = 40;
    std::atomic<int> bad_reads{0};
    {
        std::latch start(threads);
        std::vector<std::thread> pool;
        for (int i = 0; i < threads; ++i)
            pool.emplace_back([&, i] {
                nvrtc::CompileCache& c = i % 2 ? b : a;
                start.arrive_and_wait();
                for (int k = 0; k < rounds; ++k) {
                    if (!c.store(req, results[0])) ++bad_reads;
                    const std::optional<nvrtc::Result> hit = c.lookup(req);
                    if (!hit || !same_result(*hit, results[0])) ++bad_reads;
                }
            });
        for (std::thread& t : pool) t.join();
    }
    CHECK(bad_reads == 0);
    for (nvrtc::CompileCache* c : {&a, &b}) {
        CHECK(c->stats().rejected == 0);
        CHECK(c->stats().store_failures == 0);
        CHECK(c->stats().hits >= threads / 2 * rounds);
    }
    CHECK(a.stats().stores + b.stats().stores >= threads * rounds);
    // One entry, nothing else.
    CHECK(directory_names(tmp.path()) == std::vector<std::string>{a.entry_path(req).filename().string()});
    CHECK(same_result(*a.lookup(req), results[0]));
}

#ifndef _WIN32
TEST_CASE("processes sharing a directory never read a partial entry", "[kernels][nvrtc_cache]") {
    // No compiling: three forked processes store and read a 1 MB entry at once, so a
    // write that was not atomic would be seen half done.
    TempDir tmp;
    const nvrtc::Request req = small_request();
    nvrtc::Result big = fake_result();
    big.image.assign(std::size_t{1} << 20, 'i');
    for (std::size_t i = 0; i < big.image.size(); i += 4096) big.image[i] = static_cast<char>(i >> 12);
    constexpr int processes = 3, rounds = 30;
    std::vector<pid_t> children;
    for (int p = 0; p < processes; ++p) {
        const pid_t pid = fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            nvrtc::CompileCache cache(tmp.path(), 12040);
            int bad = 0;
            for (int k = 0; k < rounds; ++k) {
                if (!cache.store(req, big)) ++bad;
                const std::optional<nvrtc::Result> hit = cache.lookup(req);
                if (!hit || !same_result(*hit, big)) ++bad;
            }
            _exit(bad == 0 ? 0 : 1);
        }
        children.push_back(pid);
    }
    for (const pid_t pid : children) {
        int status = 0;
        REQUIRE(waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 0);
    }
    nvrtc::CompileCache cache(tmp.path(), 12040);
    CHECK(directory_names(tmp.path()) == std::vector<std::string>{cache.entry_path(req).filename().string()});
    const std::optional<nvrtc::Result> hit = cache.lookup(req);
    REQUIRE(hit);
    CHECK(same_result(*hit, big));
}
#endif
