// inlay tokenize: the token ids of a text, as JSON or one line per token.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app.h"
#include "args.h"
#include "inlay/inlay.hpp"

namespace inlay::cli {
namespace {

// The bytes token i adds to the text. Decoding a token alone would lose context (a
// SentencePiece decoder drops the space of a text's first word), so this decodes a
// short window ending at i with and without token i and takes the difference. Eight
// tokens of context cover any UTF-8 character split over byte tokens.
std::string piece_of(const Vocab& vocab, std::span<const int32_t> tokens, size_t i) {
    const size_t begin = i >= 8 ? i - 8 : 0;
    const std::string with = vocab.detokenize(tokens.subspan(begin, i + 1 - begin), true);
    const std::string without = vocab.detokenize(tokens.subspan(begin, i - begin), true);
    if (with.starts_with(without)) return with.substr(without.size());
    return vocab.detokenize(tokens.subspan(i, 1), true);
}

}  // namespace

int run_tokenize(std::span<const std::string_view> args) {
    std::string model_path;
    std::string text;
    bool no_bos = false;
    bool no_special = false;
    bool json = false;

    const CommandSpec spec{
        "tokenize",
        "-m MODEL -p TEXT [options]",
        "Prints the token ids of TEXT: one line per token (id and its text), or JSON. MODEL is a GGUF file (a whole\n"
        "model or vocabulary only, as llama.cpp's ggml-vocab-*.gguf) or a model folder with tokenizer.model, else\n"
        "tokenizer.json (and tokenizer_config.json), weights or not. Only the vocabulary is read.",
        {
            {"--model", "-m", "MODEL", "GGUF model file or model folder", &model_path, 0, 0, true},
            {"--prompt", "-p", "TEXT", "text to tokenize (UTF-8)", &text, 0, 0, true},
            {"--no-bos", "", "", "do not prepend BOS", &no_bos},
            {"--no-special", "", "", "treat special-token text such as <s> as plain text", &no_special},
            {"--json", "", "", "print {\"tokens\":[...]}", &json},
        },
    };
    if (parse_args(spec, args).help) return exit_ok;

    // Tokenizing needs the vocabulary alone: no weights are loaded (vocabulary-only GGUF
    // files and folders without weights work too).
    const Vocab vocab = Vocab::load(model_path);
    uint32_t flags = 0;
    if (!no_bos) flags |= INLAY_TOKENIZE_ADD_BOS;
    if (!no_special) flags |= INLAY_TOKENIZE_PARSE_SPECIAL;
    const std::vector<int32_t> tokens = vocab.tokenize(text, flags);
    std::vector<std::string> pieces;
    if (!json)
        for (size_t i = 0; i < tokens.size(); ++i) pieces.push_back(piece_of(vocab, tokens, i));

    if (json) {
        write_stdout(nlohmann::ordered_json{{"tokens", tokens}}.dump() + "\n");
        return exit_ok;
    }
    std::string out;
    for (size_t i = 0; i < tokens.size(); ++i) {
        out += fmt::format("{:7} {}\n", tokens[i], c_quoted(pieces[i]));
    }
    write_stdout(out);
    return exit_ok;
}

}  // namespace inlay::cli
