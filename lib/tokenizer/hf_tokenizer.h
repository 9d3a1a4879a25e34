// Tokenizers from Hugging Face files: tokenizer.json (the `tokenizers` library's
// format) plus tokenizer_config.json (special tokens, add_bos_token, chat template)
// and generation_config.json (extra end-of-generation ids), as found in a model
// folder with or without weights.
//
//   auto tok = inlay::tokenizer_from_folder("Qwen3-0.6B/");   // needs tokenizer.json
//   auto cfg = inlay::read_tokenizer_config("Qwen3-0.6B/");   // chat_template, ...
//
// Supported tokenizer.json (else INLAY_ERR_UNSUPPORTED naming the component and its
// JSON path): model BPE (vocab, merges as "a b" strings or [a, b] arrays,
// ignore_merges, byte_fallback, unk_token), added_tokens (special -> control, else
// user-defined; lstrip/rstrip honoured), normalizer null or NFC, pre_tokenizer
// ByteLevel or Sequence[Split(Regex, Isolated)..., ByteLevel] (the regexes are run by
// PCRE2 with Hugging Face's \s), decoder ByteLevel, post_processor ByteLevel or
// TemplateProcessing (which tells whether BOS/EOS are added). Malformed or inconsistent
// content gives INLAY_ERR_BAD_FORMAT naming the file and the JSON path at fault.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace inlay {

// What tokenizer_config.json and generation_config.json say (all optional).
struct HfTokenizerConfig {
    std::optional<std::string> bos_token;  // token texts
    std::optional<std::string> eos_token;
    std::optional<std::string> unk_token;
    std::optional<bool> add_bos_token;
    std::optional<bool> add_eos_token;
    std::string chat_template;           // "" when there is none
    std::vector<int64_t> eos_token_ids;  // generation_config.json eos_token_id (int or list)
};

// Parses the text of a tokenizer_config.json. `origin` names it in messages.
// chat_template may be a string or a list of {name, template} (the one named
// "default" is used, else the first).
HfTokenizerConfig parse_tokenizer_config(std::string_view json_text, const std::string& origin);

// Reads `folder`/tokenizer_config.json, `folder`/chat_template.jinja (which takes
// precedence over the config's chat_template, as in transformers) and
// `folder`/generation_config.json; absent files leave their fields empty.
// INLAY_ERR_IO when a file exists but cannot be read.
HfTokenizerConfig read_tokenizer_config(const std::filesystem::path& folder);

// Builds a tokenizer from the text of a tokenizer.json and its configuration.
std::unique_ptr<Tokenizer> tokenizer_from_hf_json(std::string_view tokenizer_json, const HfTokenizerConfig& config,
                                                  const std::string& origin);

// Which tokenizer file of a model folder inlay uses, everywhere (loading a model,
// `inlay tokenize`, conversion to GGUF): tokenizer.model (SentencePiece) when the folder
// has one, else tokenizer.json. tokenizer.model comes first as in llama.cpp's converter:
// Llama 2 folders hold both, and their tokenizer.json needs normalizers that the
// tokenizer.json loader does not have.
enum class FolderTokenizer { sentencepiece, hf_json, none };
FolderTokenizer folder_tokenizer(const std::filesystem::path& folder);

// A model folder's tokenizer, from the file folder_tokenizer() picks (tokenizer.json with
// the configuration above). INLAY_ERR_MISSING when the folder has neither file,
// INLAY_ERR_IO when it is not a readable folder.
std::unique_ptr<Tokenizer> tokenizer_from_folder(const std::filesystem::path& folder);

// True when `path` is a directory that holds tokenizer.json or tokenizer.model.
bool is_tokenizer_folder(const std::filesystem::path& path);

}  // namespace inlay
