// Constructors of the concrete tokenizers, for the loaders (gguf_tokenizer.cpp,
// sentencepiece_tokenizer.cpp) and tests. Internal to the tokenizer component.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocabulary.h"

namespace inlay {

// SentencePiece-style BPE (llama.cpp's SPM): merges adjacent pieces by vocabulary
// score, falls back to <0xXX> byte tokens. Finalizes `vocab`.
std::unique_ptr<Tokenizer> make_spm_tokenizer(std::unique_ptr<Vocabulary> vocab);

// Byte-level BPE (llama.cpp's BPE with a GPT-2 style vocabulary). `merges` are
// "left right" strings in rank order. ignore_merges: a pre-tokenized word that is a
// token as a whole is emitted without merging (Llama 3). Finalizes `vocab`; throws
// INLAY_ERR_BAD_FORMAT for a malformed merge, naming its index.
std::unique_ptr<Tokenizer> make_bpe_tokenizer(std::unique_ptr<Vocabulary> vocab, const std::vector<std::string>& merges,
                                              PretokenizerKind pretokenizer, bool ignore_merges);

// The same from a tokenizer.json: its own split patterns (PCRE2, see
// hf_regex_to_pcre2) and normalizer.
struct BpeConfig {
    std::vector<std::string> patterns;  // applied in turn; may be empty (no split)
    bool ignore_merges = false;
    bool nfc = false;  // NFC-normalize the text between special tokens first
};
std::unique_ptr<Tokenizer> make_bpe_tokenizer(std::unique_ptr<Vocabulary> vocab, const std::vector<std::string>& merges,
                                              const BpeConfig& config);

}  // namespace inlay
