#include "speculative/draft_vocabulary.h"

#include <string>

#include "core/error.h"
#include "core/utf8.h"
#include "tokenizer/tokenizer.h"

namespace inlay {

namespace {

// "text" with quotes, backslashes, control characters and bytes of invalid UTF-8 escaped
// (a message must not carry the raw bytes of a file).
std::string quoted(std::string_view text) {
    std::string out = "\"";
    size_t pos = 0;
    while (pos < text.size()) {
        const auto step = utf8::next_step(text, pos);
        const auto c = static_cast<unsigned char>(text[pos]);
        if (step.kind != utf8::StepKind::valid) {
            for (size_t i = 0; i < step.length; ++i)
                out += fmt::format("\\x{:02x}", static_cast<unsigned char>(text[pos + i]));
        } else if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c < 0x20 || c == 0x7f) {
            out += fmt::format("\\x{:02x}", c);
        } else {
            out.append(text.substr(pos, step.length));
        }
        pos += step.length;
    }
    return out + "\"";
}

}  // namespace

void require_same_vocabulary(const Model& target, const Model& draft) {
    const Tokenizer& t = target.tokenizer();
    const Tokenizer& d = draft.tokenizer();
    auto differ = [](const std::string& what) {
        fail(INLAY_ERR_INVALID_ARGUMENT, "the draft model cannot draft for this model: {}", what);
    };
    if (t.n_vocab() != d.n_vocab())
        differ(fmt::format("its vocabulary has {} tokens, the target's {}", d.n_vocab(), t.n_vocab()));
    if (target.spec().n_vocab != draft.spec().n_vocab)
        differ(fmt::format("it has {} logit rows, the target {}", draft.spec().n_vocab, target.spec().n_vocab));
    if (t.bos() != d.bos()) differ(fmt::format("its BOS token is {}, the target's {}", d.bos(), t.bos()));
    if (t.eos() != d.eos()) differ(fmt::format("its EOS token is {}, the target's {}", d.eos(), t.eos()));
    if (t.eog_ids() != d.eog_ids()) differ("its end-of-generation tokens are not the target's");
    for (int32_t id = 0; id < t.n_vocab(); ++id) {
        if (t.token_text(id) != d.token_text(id))
            differ(fmt::format("token {} is {} in the draft and {} in the target", id, quoted(d.token_text(id)),
                               quoted(t.token_text(id))));
        if (t.token_type(id) != d.token_type(id))
            differ(fmt::format("token {} ({}) has another type in the draft", id, quoted(t.token_text(id))));
    }
}

}  // namespace inlay
