#include "sampling/stop_matcher.h"

#include <algorithm>
#include <cstdint>

#include "core/error.h"

namespace inlay {

namespace {

bool is_continuation(unsigned char c) noexcept { return (c & 0xC0u) == 0x80u; }

// Length of the sequence a lead byte announces; 1 for ASCII and for stray bytes (which
// are passed through: repairing text is not this class's job).
size_t sequence_length(unsigned char lead) noexcept {
    if (lead >= 0xF0u && lead <= 0xF4u) return 4;
    if (lead >= 0xE0u && lead <= 0xEFu) return 3;
    if (lead >= 0xC2u && lead <= 0xDFu) return 2;
    return 1;
}

bool valid_utf8(std::string_view s) noexcept {
    size_t i = 0;
    while (i < s.size()) {
        const auto lead = static_cast<unsigned char>(s[i]);
        const size_t len = sequence_length(lead);
        if (len == 1) {
            if (lead >= 0x80u) return false;
            ++i;
            continue;
        }
        if (i + len > s.size()) return false;
        for (size_t j = 1; j < len; ++j) {
            if (!is_continuation(static_cast<unsigned char>(s[i + j]))) return false;
        }
        const auto second = static_cast<unsigned char>(s[i + 1]);
        if (lead == 0xE0u && second < 0xA0u) return false;  // overlong
        if (lead == 0xEDu && second > 0x9Fu) return false;  // UTF-16 surrogate
        if (lead == 0xF0u && second < 0x90u) return false;  // overlong
        if (lead == 0xF4u && second > 0x8Fu) return false;  // above U+10FFFF
        i += len;
    }
    return true;
}

}  // namespace

StopMatcher::StopMatcher(std::vector<std::string> stop_strings) : stops_(std::move(stop_strings)) {
    for (size_t i = 0; i < stops_.size(); ++i) {
        if (stops_[i].empty()) fail(INLAY_ERR_INVALID_ARGUMENT, "stop string {} is empty", i);
        if (!valid_utf8(stops_[i])) fail(INLAY_ERR_INVALID_UTF8, "stop string {} is not valid UTF-8", i);
        longest_ = std::max(longest_, stops_[i].size());
    }
}

std::string StopMatcher::feed(std::string_view text) {
    if (stopped_) return {};
    held_.append(text);

    size_t first_stop = std::string::npos;
    for (const std::string& stop : stops_) first_stop = std::min(first_stop, held_.find(stop));
    if (first_stop != std::string::npos) {
        stopped_ = true;
        std::string out = held_.substr(0, first_stop);
        held_.clear();
        held_.shrink_to_fit();
        return out;
    }

    const size_t end = safe_end();
    std::string out = held_.substr(0, end);
    held_.erase(0, end);
    return out;
}

std::string StopMatcher::flush() {
    if (stopped_) return {};
    std::string out = std::move(held_);
    held_.clear();
    return out;
}

// Where the held-back tail starts: at the longest suffix that is a proper prefix of a stop
// string (no full stop string is present when this runs), or at an incomplete trailing
// UTF-8 sequence, whichever comes first. Text before it can never become part of a stop
// string, because a match starting there has already failed against the text that follows.
size_t StopMatcher::safe_end() const noexcept {
    const size_t size = held_.size();
    size_t end = size;
    const std::string_view held(held_);
    const size_t window = longest_ > 0 ? longest_ - 1 : 0;
    for (size_t start = size - std::min(size, window); start < size; ++start) {
        const std::string_view tail = held.substr(start);
        const bool could_start = std::any_of(stops_.begin(), stops_.end(),
                                             [&](const std::string& stop) { return stop.starts_with(tail); });
        if (could_start) {
            end = start;
            break;
        }
    }

    // An incomplete character at the very end waits for its continuation bytes.
    size_t lead = size;
    for (size_t back = 1; back <= std::min<size_t>(3, size); ++back) {
        if (!is_continuation(static_cast<unsigned char>(held_[size - back]))) {
            lead = size - back;
            break;
        }
    }
    if (lead < size && lead + sequence_length(static_cast<unsigned char>(held_[lead])) > size) end = std::min(end, lead);

    // Never cut inside a character (only possible with stray bytes in the input; a run of
    // stray continuation bytes is not a character, so at most 3 steps).
    for (int step = 0; step < 3 && end > 0 && end < size && is_continuation(static_cast<unsigned char>(held_[end]));
         ++step) {
        --end;
    }
    return end;
}

}  // namespace inlay
