// The malformed-safetensors corpus: files built here byte by byte (independently of
// SafetensorsWriter), each with the status and a message substring SafetensorsFile must
// report. Also the valid file they derive from, for truncation sweeps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "inlay/inlay.h"

namespace inlay::test {

// u64 header length (declared_length, or the header's size when negative), header text,
// data bytes.
std::vector<std::byte> safetensors_bytes(const std::string& header, const std::vector<std::byte>& data,
                                         int64_t declared_length = -1);

// A valid file: "a" F32 [2, 3] at [0, 24), "b" F16 [4] at [24, 32) (data bytes i*7+1),
// __metadata__ {"format": "pt"}; header padded with spaces to a multiple of 8.
std::vector<std::byte> valid_safetensors_file();

struct SafetensorsCase {
    std::string name;  // unique
    std::vector<std::byte> bytes;
    inlay_status expected;
    std::string message_contains;
};

std::vector<SafetensorsCase> malformed_safetensors_corpus();

}  // namespace inlay::test
