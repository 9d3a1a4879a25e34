// tokenizer_from_sentencepiece: encoding through the sentencepiece library; the
// vocabulary table (pieces, scores, types, special ids) is read from the processor so
// that special-token splitting, pieces and decoding behave as for GGUF vocabularies.
#include <sentencepiece_processor.h>

#include <filesystem>
#include <system_error>

#include "core/error.h"
#include "tokenizer/tokenizer_impls.h"

namespace inlay {

namespace {

class SentencePieceTokenizer final : public Tokenizer {
public:
    SentencePieceTokenizer(std::unique_ptr<const Vocabulary> vocab,
                           std::unique_ptr<sentencepiece::SentencePieceProcessor> sp)
        : Tokenizer(std::move(vocab)), sp_(std::move(sp)) {}

    std::vector<int32_t> encode(std::string_view text, bool parse_special) const override {
        std::vector<int32_t> out;
        std::vector<int> ids;
        for (const Fragment& f : split_special(text, parse_special)) {
            if (f.token >= 0) {
                out.push_back(f.token);
                continue;
            }
            // Every text fragment starts the text or follows a special token, which is
            // exactly where llama.cpp adds the space prefix; sentencepiece adds its
            // dummy prefix to each call.
            ids.clear();
            const auto status = sp_->Encode(absl::string_view(f.text.data(), f.text.size()), &ids);
            if (!status.ok()) fail(INLAY_ERR_INTERNAL, "sentencepiece Encode failed: {}", status.ToString());
            for (const int id : ids) {
                if (id < 0 || id >= n_vocab()) fail(INLAY_ERR_INTERNAL, "sentencepiece returned token id {}", id);
                out.push_back(id);
            }
        }
        return out;
    }

private:
    std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
};

}  // namespace

std::unique_ptr<Tokenizer> tokenizer_from_sentencepiece(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) fail(INLAY_ERR_IO, "cannot open SentencePiece model '{}'", path);
    auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
    const auto status = sp->Load(path);
    if (!status.ok()) {
        const bool io = status.code() == sentencepiece::util::StatusCode::kNotFound ||
                        status.code() == sentencepiece::util::StatusCode::kPermissionDenied;
        fail(io ? INLAY_ERR_IO : INLAY_ERR_BAD_FORMAT, "cannot load SentencePiece model '{}': {}", path,
             status.ToString());
    }
    const int n = sp->GetPieceSize();
    if (n <= 0) fail(INLAY_ERR_BAD_FORMAT, "SentencePiece model '{}' has no pieces", path);

    auto vocab = std::make_unique<Vocabulary>();
    vocab->origin = fmt::format("SentencePiece model '{}'", path);
    vocab->texts.reserve(static_cast<size_t>(n));
    vocab->scores.reserve(static_cast<size_t>(n));
    vocab->types.reserve(static_cast<size_t>(n));
    for (int id = 0; id < n; ++id) {
        vocab->texts.push_back(sp->IdToPiece(id));
        vocab->scores.push_back(sp->GetScore(id));
        TokenType t = TokenType::normal;
        if (sp->IsUnknown(id))
            t = TokenType::unknown;
        else if (sp->IsControl(id))
            t = TokenType::control;
        else if (sp->IsByte(id))
            t = TokenType::byte;
        else if (sp->IsUnused(id))
            t = TokenType::unused;
        vocab->types.push_back(t);
    }
    auto id_or_none = [n](int id) { return id >= 0 && id < n ? id : -1; };
    vocab->bos = id_or_none(sp->bos_id());
    vocab->eos = id_or_none(sp->eos_id());
    vocab->unk = id_or_none(sp->unk_id());
    vocab->add_bos = true;  // llama.cpp's default for SentencePiece vocabularies
    vocab->add_eos = false;

    // The normalizer's add_dummy_prefix is not exposed without the protobuf headers:
    // observe it instead (a lone letter then encodes with a leading U+2581).
    std::vector<std::string> pieces;
    if (sp->Encode("a", &pieces).ok() && !pieces.empty())
        vocab->add_space_prefix = pieces.front().rfind("\xE2\x96\x81", 0) == 0;

    vocab->finalize(PieceStyle::sentencepiece);
    return std::make_unique<SentencePieceTokenizer>(std::move(vocab), std::move(sp));
}

}  // namespace inlay
