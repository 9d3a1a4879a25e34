// NVRTC wrapper: see nvrtc_compile.h.
#include "nvrtc_compile.h"

#include <cuda_runtime_api.h>  // CUDART_VERSION: the toolkit's major version names libnvrtc
#include <dlfcn.h>
#include <nvrtc.h>

#include <mutex>
#include <string>
#include <vector>

#include "dynamic_library.h"

namespace inlay::cuda::nvrtc {
namespace {

// The NVRTC entry points, from libnvrtc opened on first use: linked, libnvrtc would be a
// load-time dependency of every host program (and of libinlay on machines with a driver
// but no toolkit), for a compiler only a few model shapes ever need.
struct Api {
    decltype(&nvrtcVersion) version = nullptr;
    decltype(&nvrtcGetErrorString) error_string = nullptr;
    decltype(&nvrtcCreateProgram) create_program = nullptr;
    decltype(&nvrtcDestroyProgram) destroy_program = nullptr;
    decltype(&nvrtcAddNameExpression) add_name_expression = nullptr;
    decltype(&nvrtcCompileProgram) compile_program = nullptr;
    decltype(&nvrtcGetProgramLogSize) log_size = nullptr;
    decltype(&nvrtcGetProgramLog) log = nullptr;
    decltype(&nvrtcGetLoweredName) lowered_name = nullptr;
    decltype(&nvrtcGetCUBINSize) cubin_size = nullptr;
    decltype(&nvrtcGetCUBIN) cubin = nullptr;
    decltype(&nvrtcGetPTXSize) ptx_size = nullptr;
    decltype(&nvrtcGetPTX) ptx = nullptr;
};

bool load_api(const std::string& library, Api& api, std::string& why) {
    void* handle = detail::open_library(library, why);
    if (!handle) return false;
    Api a;
    const bool ok = detail::resolve_symbol(handle, "nvrtcVersion", a.version, library, why) &&
                    detail::resolve_symbol(handle, "nvrtcGetErrorString", a.error_string, library, why) &&
                    detail::resolve_symbol(handle, "nvrtcCreateProgram", a.create_program, library, why) &&
                    detail::resolve_symbol(handle, "nvrtcDestroyProgram", a.destroy_program, library, why) &&
                    detail::resolve_symbol(handle, "nvrtcAddNameExpression", a.add_name_expression, library, why) &&
                    detail::resolve_symbol(handle, "nvrtcCompileProgram", a.compile_program, library, why) &&
                    detail::resolve_symbol(handle, "nvrtcGetProgramLogSize", a.log_size, library, why) &&
                    detail::resolve_symbol(handle, "nvrtcGetProgramLog", a.log, library, why) &&
                    detail::resolve_symbol(handle, "nvrtcGetLoweredName", a.lowered_name, library, why) &&
                    detail::resolve_symbol(handle, "nvrtcGetCUBINSize", a.cubin_size, library, why) &&
                    detail::resolve_symbol(handle, "nvrtcGetCUBIN", a.cubin, library, why) &&
                    detail::resolve_symbol(handle, "nvrtcGetPTXSize", a.ptx_size, library, why) &&
                    detail::resolve_symbol(handle, "nvrtcGetPTX", a.ptx, library, why);
    if (!ok) {
        dlclose(handle);
        return false;
    }
    api = a;  // the handle stays open for the life of the process
    return true;
}

// The process's NVRTC, or null with the reason in *why.
const Api* api(std::string* why = nullptr) {
    static std::once_flag once;
    static Api loaded;
    static std::string failure;
    std::call_once(once, [] {
        const std::string name = "libnvrtc.so." + std::to_string(CUDART_VERSION / 1000);
        std::string reason;
        if (load_api(name, loaded, reason)) return;
        failure = reason;
#ifdef INLAY_CUDA_LIBRARY_DIR
        if (load_api(std::string(INLAY_CUDA_LIBRARY_DIR) + "/" + name, loaded, reason)) return;
        failure += "; " + reason;
#endif
    });
    if (loaded.compile_program) return &loaded;
    if (why) *why = failure;
    return nullptr;
}

// Owns an nvrtcProgram.
class Program {
public:
    Program() = default;
    Program(const Program&) = delete;
    Program& operator=(const Program&) = delete;
    ~Program() {
        if (prog_) api()->destroy_program(&prog_);
    }
    nvrtcProgram* out() { return &prog_; }
    nvrtcProgram get() const { return prog_; }

private:
    nvrtcProgram prog_ = nullptr;
};

std::string program_log(nvrtcProgram prog) {
    size_t size = 0;
    if (api()->log_size(prog, &size) != NVRTC_SUCCESS || size <= 1) return {};
    std::string log(size, '\0');
    if (api()->log(prog, log.data()) != NVRTC_SUCCESS) return {};
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
    return std::string(what) + ": " + api()->error_string(res);
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

bool available(std::string* why) {
    return api(why) != nullptr;
}

int version() {
    const Api* a = api();
    int major = 0, minor = 0;
    if (!a || a->version(&major, &minor) != NVRTC_SUCCESS) return 0;
    return major * 1000 + minor * 10;
}

Result compile(const Request& request) {
    if (request.source.empty()) return failure(Status::invalid_argument, "nvrtc: empty source");
    const std::string number = arch_number(request.arch);
    if (number.empty())
        return failure(Status::invalid_argument, "nvrtc: arch '" + request.arch + "' is not of the form sm_XX");

    std::string why;
    const Api* nv = api(&why);
    if (!nv) return failure(Status::nvrtc_error, "nvrtc: the library could not be loaded: " + why);

    std::vector<const char*> header_texts, header_names;
    for (const Header& h : request.headers) {
        header_texts.push_back(h.text.c_str());
        header_names.push_back(h.name.c_str());
    }
    Program prog;
    nvrtcResult res =
        nv->create_program(prog.out(), request.source.c_str(), request.source_name.c_str(),
                           static_cast<int>(header_texts.size()), header_texts.data(), header_names.data());
    if (res != NVRTC_SUCCESS) return failure(Status::nvrtc_error, nvrtc_message("nvrtcCreateProgram", res));
    for (const std::string& expr : request.name_expressions) {
        res = nv->add_name_expression(prog.get(), expr.c_str());
        if (res != NVRTC_SUCCESS)
            return failure(Status::nvrtc_error, nvrtc_message("nvrtcAddNameExpression", res) + " (" + expr + ")");
    }

    const std::string arch_option = "--gpu-architecture=" + (request.cubin ? request.arch : "compute_" + number);
    std::vector<std::string> options = {"-std=c++17", arch_option};
    options.insert(options.end(), request.options.begin(), request.options.end());
    std::vector<const char*> option_ptrs;
    for (const std::string& o : options) option_ptrs.push_back(o.c_str());

    res = nv->compile_program(prog.get(), static_cast<int>(option_ptrs.size()), option_ptrs.data());
    std::string log = program_log(prog.get());
    if (res == NVRTC_ERROR_COMPILATION)
        return failure(Status::compile_error, "nvrtc: " + request.source_name + " did not compile for " + request.arch,
                       log);
    if (res != NVRTC_SUCCESS) return failure(Status::nvrtc_error, nvrtc_message("nvrtcCompileProgram", res), log);

    Result r;
    r.log = std::move(log);
    for (const std::string& expr : request.name_expressions) {
        const char* lowered = nullptr;
        res = nv->lowered_name(prog.get(), expr.c_str(), &lowered);
        if (res != NVRTC_SUCCESS || !lowered)
            return failure(Status::nvrtc_error, nvrtc_message("nvrtcGetLoweredName", res) + " (" + expr + ")", r.log);
        r.lowered_names.emplace_back(lowered);
    }
    size_t size = 0;
    res = request.cubin ? nv->cubin_size(prog.get(), &size) : nv->ptx_size(prog.get(), &size);
    if (res != NVRTC_SUCCESS || size == 0)
        return failure(Status::nvrtc_error, nvrtc_message(request.cubin ? "nvrtcGetCUBINSize" : "nvrtcGetPTXSize", res),
                       r.log);
    r.image.resize(size);
    res = request.cubin ? nv->cubin(prog.get(), r.image.data()) : nv->ptx(prog.get(), r.image.data());
    if (res != NVRTC_SUCCESS)
        return failure(Status::nvrtc_error, nvrtc_message(request.cubin ? "nvrtcGetCUBIN" : "nvrtcGetPTX", res), r.log);
    r.status = Status::ok;
    return r;
}

}  // namespace inlay::cuda::nvrtc
