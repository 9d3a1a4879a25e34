// Engine::Entry: one sequence's part of a step, as the scheduler plans, runs and applies
// it (scheduler.cpp, speculation_step.cpp). Private to the engine.
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <new>
#include <string>

#include "core/error.h"
#include "runtime/engine.h"

namespace inlay {

struct Engine::Entry {
    std::shared_ptr<Request> req;
    int64_t start = 0;      // n_cached before the step
    int64_t n = 0;          // tokens in this step (a speculating entry: its base token only)
    int64_t row = -1;       // first logit row in step_logits_ (-1: none)
    int64_t n_rows = 0;
    int64_t first_logit_pos = 0;  // Kind::logits: position of the first row's token
    // Speculation: proposals allowed this step (their blocks are reserved), and draft
    // tokens of a long catch-up fed to the draft model instead of drafting.
    int32_t k_max = 0;
    int64_t draft_catchup = 0;
    bool device_sampled = false;  // the step's sample_rows drew this entry's token
    // Pipelined steps: this entry's token is the id of row fed_row of the step before
    // (-1: a token the host knows), and `followed`: a step launched after this one
    // already decodes the token this entry samples (its blocks are reserved).
    int64_t fed_row = -1;
    bool followed = false;
    [[nodiscard]] bool drafts() const { return k_max > 0 || draft_catchup > 0; }
};

// Runs one of a step's executor calls, turning what it throws into the step's status and
// message (the requests of a failed step end with them).
template <class F>
void run_step_call(F&& call, inlay_status& status, std::string& error) {
    try {
        call();
    } catch (const Error& e) {
        status = e.status();
        error = e.what();
    } catch (const std::bad_alloc&) {
        status = INLAY_ERR_OUT_OF_MEMORY;
        error = "out of memory during a forward pass";
    } catch (const std::exception& e) {
        status = INLAY_ERR_INTERNAL;
        error = e.what();
    }
}

}  // namespace inlay
