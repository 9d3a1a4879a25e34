// The --device option: the library's own parser (inlay::parse_device), its errors as
// command-line mistakes.
#pragma once

#include <string>

#include "model/make_executor.h"

namespace inlay::cli {

// "auto", "cpu", "cuda" or "cuda:N"; UsageError naming --device otherwise.
DeviceRequest device_option(const std::string& text);

}  // namespace inlay::cli
