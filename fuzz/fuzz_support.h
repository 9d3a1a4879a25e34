// What every fuzz target of fuzz/ shares: the oracle that judges one input (only
// inlay::Error may escape the library, and every message must be valid UTF-8), the seed
// corpus each target builds from the test fixtures, and scratch files for the targets
// whose code under test reads paths.
//
// Each target defines LLVMFuzzerTestOneInput and inlay_fuzz_seeds(); it may define
// LLVMFuzzerInitialize. The same object is linked into a libFuzzer binary (fuzz_NAME,
// INLAY_FUZZ=ON with clang) and into a plain regression runner (fuzz_regress_NAME, every
// build), see regression_main.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "support/gguf_fixtures.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace inlay::fuzz {

struct Seed {
    std::string name;   // a plain file name
    std::string bytes;  // the input
};
// The target's seed corpus, made by the fixture builders of tests/support.
std::vector<Seed> seeds();

// Aborts (a finding) with a report when `message` is not valid UTF-8: messages must
// quote input bytes with utf8::quoted.
void check_message(std::string_view message, std::string_view where);

// Aborts: an exception other than inlay::Error escaped the library.
[[noreturn]] void report_foreign_exception(std::string_view where, std::string_view what);

// Runs `body`; an inlay::Error is an expected outcome (its message is checked and its
// status returned), any other exception is a finding (abort). INLAY_OK when none.
template <class F>
inlay_status expect_clean(std::string_view where, F&& body) {
    try {
        body();
        return INLAY_OK;
    } catch (const Error& e) {
        check_message(e.what(), where);
        return e.status();
    } catch (const std::exception& e) {
        report_foreign_exception(where, e.what());
    }
}
// Aborts with `what` (a broken invariant of the code under test).
[[noreturn]] void finding(std::string_view where, std::string_view what);

// A private scratch directory of this process (in /dev/shm where it exists), created on
// first use and removed at exit.
const std::filesystem::path& scratch_dir();
// Writes `bytes` to `path` (replacing it).
void write_file(const std::filesystem::path& path, std::string_view bytes);
std::string to_string(std::span<const std::byte> bytes);

// The tiny Llama shape of the model-level targets (gguf's seeds, session_file's model):
// small enough for many executions per second, every part of a model still present.
test::TinyLlamaOptions tiny_model_options();

}  // namespace inlay::fuzz
