// C ABI: a model's vocabulary alone (inlay_vocab_*), for tokenizing without weights.
#include <cstddef>
#include <memory>

#include "capi/capi_common.h"
#include "capi/text_calls.h"
#include "model/vocabulary_source.h"

using inlay::capi::guarded;
using inlay::capi::require_arg;
using inlay::capi::require_params;

struct inlay_vocab {
    inlay::VocabularySource source;
};

extern "C" {

INLAY_API inlay_status inlay_vocab_load(const char* path, inlay_vocab** out_vocab) {
    if (out_vocab) *out_vocab = nullptr;
    return guarded("inlay_vocab_load", [&] {
        require_arg(path != nullptr, "inlay_vocab_load", "path is NULL");
        require_arg(out_vocab != nullptr, "inlay_vocab_load", "out_vocab is NULL");
        auto vocab = std::make_unique<inlay_vocab>();
        vocab->source = inlay::load_vocabulary(path);
        *out_vocab = vocab.release();
    });
}

INLAY_API void inlay_vocab_free(inlay_vocab* vocab) { delete vocab; }

INLAY_API inlay_status inlay_vocab_get_info(const inlay_vocab* vocab, inlay_vocab_info* info) {
    return guarded("inlay_vocab_get_info", [&] {
        require_arg(vocab != nullptr, "inlay_vocab_get_info", "vocab is NULL");
        require_arg(info != nullptr, "inlay_vocab_get_info", "info is NULL");
        require_params(info, "inlay_vocab_get_info", "inlay_vocab_info");
        const inlay::Tokenizer& tok = *vocab->source.tokenizer;
        inlay_vocab_info out{};
        out.struct_size = info->struct_size;
        out.tokenizer_model = vocab->source.tokenizer_model.c_str();
        out.name = vocab->source.name.c_str();
        out.n_vocab = tok.n_vocab();
        out.bos_token = tok.bos();
        out.eos_token = tok.eos();
        out.add_bos = tok.add_bos();
        inlay::capi::write_out(info, out);
    });
}

INLAY_API inlay_status inlay_vocab_tokenize(const inlay_vocab* vocab, const char* text, size_t len, uint32_t flags,
                                            int32_t* out, size_t capacity, size_t* n_tokens) {
    return guarded("inlay_vocab_tokenize", [&] {
        require_arg(vocab != nullptr, "inlay_vocab_tokenize", "vocab is NULL");
        inlay::capi::tokenize_call("inlay_vocab_tokenize", *vocab->source.tokenizer, text, len, flags, out, capacity,
                                   n_tokens);
    });
}

INLAY_API inlay_status inlay_vocab_detokenize(const inlay_vocab* vocab, const int32_t* tokens, size_t n,
                                              bool render_special, char* out, size_t capacity, size_t* length) {
    return guarded("inlay_vocab_detokenize", [&] {
        require_arg(vocab != nullptr, "inlay_vocab_detokenize", "vocab is NULL");
        inlay::capi::detokenize_call("inlay_vocab_detokenize", *vocab->source.tokenizer, tokens, n, render_special,
                                     out, capacity, length);
    });
}

}  // extern "C"
