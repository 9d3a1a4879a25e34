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

std::string device_request_name(const DeviceRequest& r) {
    switch (r.kind) {
        case DeviceKind::automatic: return "auto";
        case DeviceKind::cpu: return "cpu";
        case DeviceKind::cuda: return "cuda:" + std::to_string(r.index);
    }
    return "?";
}

bool cuda_backend_built() { return false; }

std::unique_ptr<Executor> make_executor(const DeviceRequest& request, const DecoderSpec& spec,
                                        const WeightSource& source) {
    switch (request.kind) {
        case DeviceKind::cpu:
            return make_cpu_executor(request.n_threads, spec, source);
        case DeviceKind::cuda:
            fail(INLAY_ERR_UNSUPPORTED,
                 "device {}: this build of inlay has no CUDA backend (the CUDA backend is not implemented yet); "
                 "use the cpu device", device_request_name(request));
        case DeviceKind::automatic:
            break;
    }
    log(LogLevel::info, "device auto: no CUDA backend in this build; running on the CPU");
    return make_cpu_executor(request.n_threads, spec, source);
}

}  // namespace inlay
