// StopMatcher: finds stop strings in streamed text without ever showing the user any
// part of a stop string.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace inlay {

// feed() each new piece of generated text; it returns the text that is safe to hand to
// the user now. It holds back any suffix that could still become a stop string, and an
// incomplete UTF-8 sequence at the end, so output never splits a character. When a stop
// string is complete, stopped() becomes true and the returned text ends right before the
// earliest-starting stop string; the stop string and everything after it are dropped, and
// later feeds return "". flush() returns what is held back at the end of generation.
// Memory held: under the longest stop string's length plus 3 bytes. Not thread-safe.
class StopMatcher {
public:
    // Empty stop strings throw INLAY_ERR_INVALID_ARGUMENT and invalid UTF-8 throws
    // INLAY_ERR_INVALID_UTF8 (a partial character could match inside a real one). An
    // empty list is fine: the matcher then only keeps characters whole.
    explicit StopMatcher(std::vector<std::string> stop_strings);

    std::string feed(std::string_view text);
    std::string flush();
    [[nodiscard]] bool stopped() const noexcept { return stopped_; }

private:
    [[nodiscard]] size_t safe_end() const noexcept;

    std::vector<std::string> stops_;
    size_t longest_ = 0;
    std::string held_;
    bool stopped_ = false;
};

}  // namespace inlay
