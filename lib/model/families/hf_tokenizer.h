// The tokenizer of a Hugging Face folder, for running it and as GGUF metadata.
//
// tokenizer.model (SentencePiece) -> GGUF "llama" vocabulary: pieces, scores and types
// as the sentencepiece library reports them (llama.cpp's converter does the same).
// tokenizer.json (byte-level BPE) -> GGUF "gpt2" vocabulary: model.vocab and
// added_tokens by id, merges as "a b", tokenizer.ggml.pre named after the pre-tokenizer's
// split regex ("qwen2", "llama-bpe"; a plain ByteLevel pre-tokenizer: "gpt-2"). Added
// tokens are control tokens when marked special or when they look special (<|...|>),
// user-defined otherwise, as llama.cpp's converter decides.
// Both pad the vocabulary up to config.json's vocab_size with "[PAD<id>]" unused tokens.
// Special ids: tokenizer_config.json's *_token first, then config.json's *_token_id,
// then (SentencePiece) the model's own; add_bos_token / add_eos_token and chat_template
// from tokenizer_config.json when it sets them.
//
// Errors name the file: INLAY_ERR_MISSING (no tokenizer file), INLAY_ERR_BAD_FORMAT
// (malformed JSON or vocabulary), INLAY_ERR_UNSUPPORTED (another model type or
// pre-tokenizer), INLAY_ERR_SHAPE_MISMATCH (more tokens than config.json's vocab_size).
#pragma once

#include <memory>
#include <string>

#include "io/hf_config.h"
#include "io/metadata.h"
#include "tokenizer/tokenizer.h"

namespace inlay {

// tokenizer.ggml.* (and tokenizer.chat_template) for the folder's tokenizer (the file
// folder_tokenizer() picks, as the model loader does).
Metadata gguf_tokenizer_metadata_from_folder(const std::string& folder, const HfConfig& config);

}  // namespace inlay
