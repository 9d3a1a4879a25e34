#include "fuzz_support.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <system_error>

#include "core/utf8.h"

namespace inlay::fuzz {

void check_message(std::string_view message, std::string_view where) {
    const size_t bad = utf8::find_invalid(message);
    if (bad == std::string_view::npos) return;
    std::fprintf(stderr, "FINDING: %.*s: message with invalid UTF-8 at byte %zu: %s\n", static_cast<int>(where.size()),
                 where.data(), bad, utf8::quoted(message).c_str());
    std::abort();
}

void report_foreign_exception(std::string_view where, std::string_view what) {
    std::fprintf(stderr, "FINDING: %.*s: an exception other than inlay::Error escaped: %s\n",
                 static_cast<int>(where.size()), where.data(), utf8::quoted(what).c_str());
    std::abort();
}

void finding(std::string_view where, std::string_view what) {
    std::fprintf(stderr, "FINDING: %.*s: %s\n", static_cast<int>(where.size()), where.data(),
                 utf8::quoted(what).c_str());
    std::abort();
}

namespace {

struct ScratchDir {
    std::filesystem::path path;
    ScratchDir() {
        std::error_code ec;
        const std::filesystem::path base =
            std::filesystem::is_directory("/dev/shm", ec) ? "/dev/shm" : std::filesystem::temp_directory_path();
        path = base / ("inlay-fuzz-" + std::to_string(::getpid()));
        std::filesystem::create_directories(path);
    }
    ~ScratchDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
};

}  // namespace

const std::filesystem::path& scratch_dir() {
    static const ScratchDir dir;
    return dir.path;
}

void write_file(const std::filesystem::path& path, std::string_view bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) finding("write_file", "cannot write " + path.string());
}

test::TinyLlamaOptions tiny_model_options() {
    test::TinyLlamaOptions o;
    o.n_vocab = 260;
    o.n_embd = 32;
    o.n_layers = 1;
    o.n_heads = 4;
    o.n_kv_heads = 2;
    o.n_ff = 64;
    o.context = 64;
    return o;
}

std::string to_string(std::span<const std::byte> bytes) {
    return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

}  // namespace inlay::fuzz
