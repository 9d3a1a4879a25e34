#include "speculative/draft_vocabulary.h"

#include <string>

#include "core/error.h"
#include "core/utf8.h"
#include "tokenizer/tokenizer.h"

namespace inlay {

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
            differ(fmt::format("token {} is {} in the draft and {} in the target", id, utf8::quoted(d.token_text(id)),
                               utf8::quoted(t.token_text(id))));
        if (t.token_type(id) != d.token_type(id))
            differ(fmt::format("token {} ({}) has another type in the draft", id, utf8::quoted(t.token_text(id))));
    }
}

}  // namespace inlay
