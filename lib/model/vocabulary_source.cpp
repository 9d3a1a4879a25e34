#include "model/vocabulary_source.h"

#include <filesystem>

#include "io/gguf_reader.h"
#include "tokenizer/hf_tokenizer.h"

namespace inlay {

VocabularySource load_vocabulary(const std::string& path) {
    VocabularySource out;
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
        out.tokenizer = tokenizer_from_folder(path);
        out.tokenizer_model = folder_tokenizer(path) == FolderTokenizer::sentencepiece ? "llama" : "gpt2";
        return out;
    }
    // The metadata holds its own copies of every string: the mapping can go with `gguf`.
    const auto gguf = GgufFile::open(path);
    const Metadata& md = gguf->metadata();
    out.tokenizer = tokenizer_from_gguf(md);
    out.tokenizer_model = md.get_string_opt("tokenizer.ggml.model").value_or("");
    out.name = md.get_string_opt("general.name").value_or("");
    return out;
}

}  // namespace inlay
