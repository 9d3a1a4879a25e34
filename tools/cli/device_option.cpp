#include "device_option.h"

#include <stdexcept>

#include "args.h"

namespace inlay::cli {

DeviceRequest device_option(const std::string& text) {
    try {
        return parse_device(text);
    } catch (const std::runtime_error& e) {
        throw UsageError(std::string("--device: ") + e.what());
    }
}

}  // namespace inlay::cli
