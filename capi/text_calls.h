// The bodies of tokenize and detokenize, shared by the model handle's functions
// (inlay_tokenize, inlay_detokenize) and the vocabulary handle's (inlay_vocab_*): the
// same argument checks, flags, BOS rule and size-query convention for both.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tokenizer/tokenizer.h"

namespace inlay::capi {

void tokenize_call(const char* function, const Tokenizer& tok, const char* text, size_t len, uint32_t flags,
                   int32_t* out, size_t capacity, size_t* n_tokens);

void detokenize_call(const char* function, const Tokenizer& tok, const int32_t* tokens, size_t n, bool render_special,
                     char* out, size_t capacity, size_t* length);

}  // namespace inlay::capi
