// NVRTC wrapper: see nvrtc_compile.h.
#include "nvrtc_compile.h"

#include <nvrtc.h>

#include <string>
#include <vector>

namespace inlay::cuda::nvrtc {
namespace {

// Owns an nvrtcProgram.
class Program {
public:
    Program() = default;
    Program(const Program&) = delete;
    Program& operator=(const Program&) = delete;
    ~Program() {
        if (prog_) nvrtcDestroyProgram(&prog_);
    }
    nvrtcProgram* out() { return &prog_; }
    nvrtcProgram get() const { return prog_; }

private:
    nvrtcProgram prog_ = nullptr;
};

std::string program_log(nvrtcProgram prog) {
    size_t size = 0;
    if (nvrtcGetProgramLogSize(prog, &size) != NVRTC_SUCCESS || size <= 1) return {};
    std::string log(size, '\0');
    if (nvrtcGetProgramLog(prog, log.data()) != NVRTC_SUCCESS) return {};
    log.resize(size - 1);  // the terminating NUL
    return log;
}

Result failure(Status status, std::string message, std::string log = {}) {
    Result r;
    r.status = status;
    r.message = std::move(message);
    if (!log.empty()) r.message += ":\n" + log;
    r.log = std::move(log);
    return r;
}

std::string nvrtc_message(const char* what, nvrtcResult res) {
    return std::string(what) + ": " + nvrtcGetErrorString(res);
}

// "sm_80" -> "80"; empty when malformed.
std::string arch_number(const std::string& arch) {
    if (arch.size() < 5 || arch.compare(0, 3, "sm_") != 0) return {};
    for (size_t i = 3; i < arch.size(); ++i) {
        const char c = arch[i];
        const bool digit = c >= '0' && c <= '9';
        const bool suffix = i + 1 == arch.size() && i > 4 && (c == 'a' || c == 'f');
        if (!digit && !suffix) return {};
    }
    return arch.substr(3);
}

}  // namespace

const char* status_name(Status status) {
    switch (status) {
        case Status::ok:
            return "ok";
        case Status::invalid_argument:
            return "invalid_argument";
        case Status::compile_error:
            return "compile_error";
        case Status::nvrtc_error:
            return "nvrtc_error";
    }
    return "unknown";
}

int version() {
    int major = 0, minor = 0;
    if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return 0;
    return major * 1000 + minor * 10;
}

Result compile(const Request& request) {
    if (request.source.empty()) return failure(Status::invalid_argument, "nvrtc: empty source");
    const std::string number = arch_number(request.arch);
    if (number.empty())
        return failure(Status::invalid_argument, "nvrtc: arch '" + request.arch + "' is not of the form sm_XX");

    std::vector<const char*> header_texts, header_names;
    for (const Header& h : request.headers) {
        header_texts.push_back(h.text.c_str());
        header_names.push_back(h.name.c_str());
    }
    Program prog;
    nvrtcResult res =
        nvrtcCreateProgram(prog.out(), request.source.c_str(), request.source_name.c_str(),
                           static_cast<int>(header_texts.size()), header_texts.data(), header_names.data());
    if (res != NVRTC_SUCCESS) return failure(Status::nvrtc_error, nvrtc_message("nvrtcCreateProgram", res));
    for (const std::string& expr : request.name_expressions) {
        res = nvrtcAddNameExpression(prog.get(), expr.c_str());
        if (res != NVRTC_SUCCESS)
            return failure(Status::nvrtc_error, nvrtc_message("nvrtcAddNameExpression", res) + " (" + expr + ")");
    }

    const std::string arch_option = "--gpu-architecture=" + (request.cubin ? request.arch : "compute_" + number);
    std::vector<std::string> options = {"-std=c++17", arch_option};
    options.insert(options.end(), request.options.begin(), request.options.end());
    std::vector<const char*> option_ptrs;
    for (const std::string& o : options) option_ptrs.push_back(o.c_str());

    res = nvrtcCompileProgram(prog.get(), static_cast<int>(option_ptrs.size()), option_ptrs.data());
    std::string log = program_log(prog.get());
    if (res == NVRTC_ERROR_COMPILATION)
        return failure(Status::compile_error, "nvrtc: " + request.source_name + " did not compile for " + request.arch,
                       log);
    if (res != NVRTC_SUCCESS) return failure(Status::nvrtc_error, nvrtc_message("nvrtcCompileProgram", res), log);

    Result r;
    r.log = std::move(log);
    for (const std::string& expr : request.name_expressions) {
        const char* lowered = nullptr;
        res = nvrtcGetLoweredName(prog.get(), expr.c_str(), &lowered);
        if (res != NVRTC_SUCCESS || !lowered)
            return failure(Status::nvrtc_error, nvrtc_message("nvrtcGetLoweredName", res) + " (" + expr + ")", r.log);
        r.lowered_names.emplace_back(lowered);
    }
    size_t size = 0;
    res = request.cubin ? nvrtcGetCUBINSize(prog.get(), &size) : nvrtcGetPTXSize(prog.get(), &size);
    if (res != NVRTC_SUCCESS || size == 0)
        return failure(Status::nvrtc_error, nvrtc_message(request.cubin ? "nvrtcGetCUBINSize" : "nvrtcGetPTXSize", res),
                       r.log);
    r.image.resize(size);
    res = request.cubin ? nvrtcGetCUBIN(prog.get(), r.image.data()) : nvrtcGetPTX(prog.get(), r.image.data());
    if (res != NVRTC_SUCCESS)
        return failure(Status::nvrtc_error, nvrtc_message(request.cubin ? "nvrtcGetCUBIN" : "nvrtcGetPTX", res), r.log);
    r.status = Status::ok;
    return r;
}

}  // namespace inlay::cuda::nvrtc
