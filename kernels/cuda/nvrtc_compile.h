// Run-time compilation of CUDA C++ with NVRTC: source in, PTX or CUBIN out. NVRTC needs
// no GPU and no driver, so this works (and is tested) on any machine with the toolkit's
// libnvrtc (opened with dlopen on first use: see available()). Failures come back as a status and a message, never as
// an abort or throw (except std::bad_alloc).
#pragma once

#include <string>
#include <vector>

namespace inlay::cuda::nvrtc {

enum class Status {
    ok,
    invalid_argument,  // empty source, bad arch string
    compile_error,     // the source did not compile (see log)
    nvrtc_error,       // NVRTC failed otherwise (program creation, a name expression, output)
};

[[nodiscard]] const char* status_name(Status status);

// Code that is compiled: a .cu file's text and the headers it includes by name.
struct Header {
    std::string name;  // as written in #include "..."
    std::string text;
};

struct Request {
    std::string source;                      // the program text
    std::string source_name = "program.cu";  // for messages
    std::vector<Header> headers;
    std::vector<std::string> name_expressions;  // e.g. "ns::kernel<128, 8>", instantiated and looked up
    std::vector<std::string> options;           // extra NVRTC options, e.g. "-DX=1", "-Xptxas=-v"
    std::string arch = "sm_80";                 // "sm_80", "sm_90", ...: the target GPU
    bool cubin = true;                          // true: CUBIN for arch; false: PTX for compute_XX
};

struct Result {
    Status status = Status::nvrtc_error;
    std::string message;                     // empty when ok; otherwise what failed, with the log
    std::string log;                         // NVRTC's log (warnings, errors, -Xptxas=-v output)
    std::vector<char> image;                 // the PTX text (NUL-terminated) or the CUBIN (ELF)
    std::vector<std::string> lowered_names;  // mangled name of each name expression, in order

    [[nodiscard]] bool ok() const { return status == Status::ok; }
};

// Compiles with "-std=c++17", "--gpu-architecture=<arch or compute_XX>" and the request's
// options; each name expression is instantiated and its lowered (mangled) name returned.
[[nodiscard]] Result compile(const Request& request);

// NVRTC's version as major * 1000 + minor * 10 (e.g. 13000), or 0 if unavailable.
[[nodiscard]] int version();

// Whether NVRTC can be used here: libnvrtc.so.<toolkit major> is opened on first use (from
// the loader's path, else the build's toolkit folder), never linked, so a process that
// never compiles does not depend on it. Without it compile() fails with nvrtc_error and
// *why (if given) says what the loader said.
[[nodiscard]] bool available(std::string* why = nullptr);

}  // namespace inlay::cuda::nvrtc
