// The malformed-GGUF corpus: files built by code (never committed binaries), each with
// the status and a message substring that inlay must report.
//
// model_level == false: the GGUF itself is broken; GgufFile must reject it with exactly
//   `expected`, and its message must contain `message_contains`.
// model_level == true: a well-formed GGUF (GgufFile accepts it) holding a model that
//   cannot be loaded (missing tensor or key, wrong shape or key type, inconsistent
//   hyper-parameters); the model loader must reject it with `expected`, its message
//   naming `message_contains` (the key or tensor at fault).
#pragma once

#include <string>
#include <vector>

#include "inlay/inlay.h"

namespace inlay::test {

struct MalformedCase {
    std::string name;               // unique, usable as a file name
    std::vector<std::byte> bytes;
    inlay_status expected;
    std::string message_contains;
    bool model_level;
};

// All cases, in a fixed order; deterministic. Builds a few tiny models (fast).
std::vector<MalformedCase> malformed_gguf_corpus();

}  // namespace inlay::test
