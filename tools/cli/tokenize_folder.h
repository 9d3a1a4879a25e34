// `inlay tokenize -m FOLDER`: a model folder's tokenizer alone (tokenizer.json with
// tokenizer_config.json, or tokenizer.model), weights or not. The C ABI loads whole
// models only, so this uses the library's internal API; it is kept apart from the
// commands that use inlay.hpp (whose names would clash with the internal ones).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "inlay/inlay.h"

namespace inlay::cli {

struct FolderTokens {
    inlay_status status = INLAY_OK;  // on failure, `message` says why (starting with the status name)
    std::string message;
    std::vector<int32_t> ids;
    std::vector<std::string> pieces;  // the bytes each token adds to the text
};

// True when `path` is a directory holding tokenizer.json or tokenizer.model.
bool is_tokenizer_folder_path(const std::string& path);

// Tokenizes `text` as the model's tokenizer does (BOS first when add_bos and the
// vocabulary asks for it). Never throws inlay errors: see FolderTokens::status.
FolderTokens tokenize_with_folder(const std::string& folder, const std::string& text, bool add_bos, bool parse_special);

}  // namespace inlay::cli
