#include "model/make_executor.h"

#include <charconv>

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

std::unique_ptr<Executor> make_cuda_executor(int, const DecoderSpec&, const WeightSource&) {
    std::string why;
    (void)cuda_device_count(&why);
    fail(INLAY_ERR_UNSUPPORTED, "device cuda: {}", why);
}
#endif

std::unique_ptr<Executor> make_executor(const DeviceRequest& request, const DecoderSpec& spec,
                                        const WeightSource& source) {
    switch (request.kind) {
        case DeviceKind::cpu:
            return make_cpu_executor(request.n_threads, spec, source);
        case DeviceKind::cuda:
            return make_cuda_executor(request.index, spec, source);
        case DeviceKind::automatic:
            break;
    }
    std::string why;
    if (cuda_device_count(&why) > 0) {
        try {
            auto executor = make_cuda_executor(0, spec, source);
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
