#include "model/make_executor.h"

#include <charconv>
#include <cstdlib>

#include "core/error.h"
#include "core/log.h"

namespace inlay {

DeviceRequest parse_device(std::string_view text) {
    DeviceRequest r;
    if (text == "auto") return r;
    if (text == "cpu") {
        r.kind = DeviceKind::cpu;
        return r;
    }
    if (text == "cuda") {
        r.kind = DeviceKind::cuda;
        return r;
    }
    if (text.starts_with("cuda:")) {
        const std::string_view digits = text.substr(5);
        int index = -1;
        const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
        if (ec == std::errc() && end == digits.data() + digits.size() && !digits.empty() && index >= 0 &&
            index < 1024) {
            r.kind = DeviceKind::cuda;
            r.index = index;
            return r;
        }
    }
    fail(INLAY_ERR_INVALID_ARGUMENT, "unknown device '{}' (auto, cpu, cuda or cuda:N)", text);
}

#if INLAY_HAVE_CUDA_BACKEND
bool cuda_backend_built() { return true; }
#else
bool cuda_backend_built() { return false; }

int cuda_device_count(std::string* why) {
    if (why) *why = "this build of inlay has no CUDA backend (the CUDA toolkit was not found, or INLAY_CUDA=OFF)";
    return 0;
}

std::unique_ptr<Executor> make_cuda_executor(int, const CudaExecutorOptions&, const DecoderSpec&, const WeightSource&) {
    std::string why;
    (void)cuda_device_count(&why);
    fail(INLAY_ERR_UNSUPPORTED, "device cuda: {}", why);
}
#endif

std::filesystem::path kernel_cache_dir(const char* inlay_kernel_cache_dir, const char* xdg_cache_home,
                                       const char* home) {
    if (inlay_kernel_cache_dir) return inlay_kernel_cache_dir;
    // The XDG base directory rules: a relative $XDG_CACHE_HOME is ignored.
    if (xdg_cache_home && *xdg_cache_home && std::filesystem::path(xdg_cache_home).is_absolute())
        return std::filesystem::path(xdg_cache_home) / "inlay" / "nvrtc";
    if (home && *home && std::filesystem::path(home).is_absolute())
        return std::filesystem::path(home) / ".cache" / "inlay" / "nvrtc";
    return {};
}

std::unique_ptr<Executor> make_executor(const DeviceRequest& request, const DecoderSpec& spec,
                                        const WeightSource& source) {
    // Read once per load, never inside an op.
    const auto cuda_options = [&] {
        CudaExecutorOptions o;
        o.kernel_cache_dir = request.kernel_cache_dir
                                 ? *request.kernel_cache_dir
                                 : kernel_cache_dir(std::getenv("INLAY_KERNEL_CACHE_DIR"),
                                                    std::getenv("XDG_CACHE_HOME"), std::getenv("HOME"));
        const char* graphs = std::getenv("INLAY_CUDA_GRAPHS");
        o.graphs = request.cuda_graphs ? *request.cuda_graphs : !(graphs && std::string_view(graphs) == "0");
        return o;
    };
    switch (request.kind) {
        case DeviceKind::cpu:
            return make_cpu_executor(request.n_threads, spec, source);
        case DeviceKind::cuda:
            return make_cuda_executor(request.index, cuda_options(), spec, source);
        case DeviceKind::automatic:
            break;
    }
    std::string why;
    if (cuda_device_count(&why) > 0) {
        try {
            auto executor = make_cuda_executor(0, cuda_options(), spec, source);
            log(LogLevel::info, "device auto: running on cuda:0");
            return executor;
        } catch (const Error& e) {
            // A model the GPU backend cannot run (a format or shape without kernels) runs on
            // the CPU; running out of device memory is the caller's to know.
            if (e.status() != INLAY_ERR_UNSUPPORTED) throw;
            why = e.what();
        }
    }
    log(LogLevel::info, "device auto: no usable CUDA device ({}); running on the CPU", why);
    return make_cpu_executor(request.n_threads, spec, source);
}

}  // namespace inlay
