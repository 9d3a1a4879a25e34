// The speculative decoding options of generate, chat and bench: --draft MODEL or
// --lookup, with --n-draft, --n-draft-min and --p-min.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "args.h"
#include "inlay/inlay.hpp"
#include "load.h"

namespace inlay::cli {

struct SpeculationArgs {
    std::string draft_path;
    bool lookup = false;
    int32_t n_draft = 8;
    int32_t n_draft_min = 0;
    float p_min = 0.5f;

    // Appends the options to a command's table.
    void add_options(std::vector<Option>& options);
    // Whether --draft or --lookup was given (UsageError if both, or a size is out of range).
    [[nodiscard]] bool enabled(const ParsedArgs& parsed) const;
};

// The session options for `args`: loads the draft model (same threads and device as the
// target; kept in `draft`, which must outlive the call that makes the session).
SessionOptions speculation_session(const SpeculationArgs& args, const ParsedArgs& parsed, int32_t n_threads,
                                   int32_t context_length, const std::string& device,
                                   std::optional<LoadedModel>& draft);

}  // namespace inlay::cli
