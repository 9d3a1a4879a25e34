// Reading the small text files of a model folder (JSON configs, Jinja templates).
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

namespace inlay {

// The whole file. INLAY_ERR_IO if it cannot be opened or read; INLAY_ERR_BAD_FORMAT
// if it is larger than max_bytes (a guard against absurd inputs).
std::string read_text_file(const std::filesystem::path& path, size_t max_bytes = size_t{1} << 30);

}  // namespace inlay
