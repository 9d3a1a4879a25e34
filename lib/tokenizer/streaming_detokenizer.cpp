#include "tokenizer/tokenizer.h"
#include "core/utf8.h"

namespace inlay {

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tok, bool at_start, bool render_special)
    : tok_(&tok), strip_next_(at_start && tok.strips_leading_space()), render_special_(render_special) {}

std::string StreamingDetokenizer::push(int32_t id) {
    std::string piece = tok_->token_to_piece(id, render_special_);  // throws before any state changes
    if (piece.empty()) return {};
    if (strip_next_) {
        if (piece.front() == ' ') piece.erase(0, 1);
        strip_next_ = false;
    }
    pending_ += piece;
    std::string out;
    size_t pos = 0;
    while (pos < pending_.size()) {
        const utf8::Step step = utf8::next_step(pending_, pos);
        if (step.kind == utf8::StepKind::incomplete) break;  // wait for the bytes that complete it
        if (step.kind == utf8::StepKind::valid)
            out.append(pending_, pos, step.length);
        else
            out.append(utf8::replacement_character);
        pos += step.length;
    }
    pending_.erase(0, pos);
    return out;
}

std::string StreamingDetokenizer::flush() {
    std::string out = pending_.empty() ? std::string() : utf8::sanitize(pending_);
    pending_.clear();
    return out;
}

}  // namespace inlay
