// A model's vocabulary alone, without its weights: what tokenizing needs (`inlay
// tokenize`, inlay_vocab_load). llama.cpp ships vocabulary-only GGUF files
// (ggml-vocab-*.gguf: tokenizer metadata and no tensors) that its llama-tokenize reads;
// these load here too.
#pragma once

#include <memory>
#include <string>

#include "tokenizer/tokenizer.h"

namespace inlay {

struct VocabularySource {
    std::unique_ptr<Tokenizer> tokenizer;
    std::string tokenizer_model;  // "llama" (SentencePiece-style), "gpt2" (byte-level BPE), ...
    std::string name;             // general.name, or "" (GGUF only)
};

// A GGUF file (a whole model, whose tensors are neither read nor required, or a
// vocabulary-only file): its tokenizer.ggml.* metadata. A folder: its tokenizer file as
// the model loader picks it (folder_tokenizer(): tokenizer.model, else tokenizer.json
// with tokenizer_config.json), weights or not. Errors: INLAY_ERR_IO, INLAY_ERR_MISSING,
// INLAY_ERR_BAD_FORMAT and the others of the GGUF reader and tokenizer loaders.
VocabularySource load_vocabulary(const std::string& path);

}  // namespace inlay
