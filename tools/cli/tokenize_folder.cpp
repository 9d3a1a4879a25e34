#include "tokenize_folder.h"

#include <fmt/format.h>

#include "core/error.h"
#include "tokenizer/hf_tokenizer.h"

namespace inlay::cli {

bool is_tokenizer_folder_path(const std::string& path) {
    return is_tokenizer_folder(path);
}

FolderTokens tokenize_with_folder(const std::string& folder, const std::string& text, bool add_bos,
                                  bool parse_special) {
    FolderTokens out;
    try {
        const auto tok = tokenizer_from_folder(folder);
        if (add_bos && tok->add_bos()) out.ids.push_back(tok->bos());
        const auto body = tok->encode(text, parse_special);
        out.ids.insert(out.ids.end(), body.begin(), body.end());
        // Each token's bytes, from the difference of decoding a short window with and
        // without it (a lone token can lose context, e.g. a SentencePiece leading space).
        const std::span<const int32_t> ids(out.ids);
        for (size_t i = 0; i < ids.size(); ++i) {
            const size_t begin = i >= 8 ? i - 8 : 0;
            const std::string with = tok->decode(ids.subspan(begin, i + 1 - begin), true, begin == 0);
            const std::string without = tok->decode(ids.subspan(begin, i - begin), true, begin == 0);
            out.pieces.push_back(with.starts_with(without) ? with.substr(without.size())
                                                           : tok->decode(ids.subspan(i, 1), true, false));
        }
    } catch (const Error& e) {
        out.status = e.status();
        out.message = fmt::format("{}: {}", status_name(e.status()), e.what());
    }
    return out;
}

}  // namespace inlay::cli
