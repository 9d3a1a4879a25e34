// inlay::Error: the one exception type used inside the library. It carries the
// inlay_status that the C ABI returns and a message naming what is at fault.
#pragma once

#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "core/utf8.h"
#include "inlay/inlay.h"

namespace inlay {

class Error : public std::runtime_error {
public:
    // Messages quote input (keys, token texts, paths); bytes of ill-formed UTF-8 in them
    // are escaped as \xNN here, so no message carries raw input bytes to a caller.
    Error(inlay_status status, const std::string& message)
        : std::runtime_error(utf8::escape_invalid(message)), status_(status) {}

    [[nodiscard]] inlay_status status() const noexcept { return status_; }

private:
    inlay_status status_;
};

// Throws Error(status, formatted message). Use it wherever validation fails.
template <class... Args>
[[noreturn]] void fail(inlay_status status, fmt::format_string<Args...> format, Args&&... args) {
    throw Error(status, fmt::format(format, std::forward<Args>(args)...));
}

// Name of a status code ("INLAY_ERR_IO"); the C ABI's inlay_status_name uses it.
const char* status_name(inlay_status status) noexcept;

}  // namespace inlay
