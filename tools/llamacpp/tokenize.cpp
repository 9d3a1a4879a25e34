// llamacpp-tokenize: llama.cpp's tokenizer on a GGUF's vocabulary (the weights are not
// loaded), for the tests' cross-checks.
//   llamacpp-tokenize MODEL TEXT [--no-bos] [--no-special]
// Prints the ids as "[1, 403, 407]". BOS is added when the GGUF asks for it (unless
// --no-bos), and special-token text is parsed (unless --no-special), as llama-tokenize
// and llama-cli do by default.
// Exit status: 0, 1 when llama.cpp fails (message on stderr), 2 on a usage error.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "llamacpp_common.h"

int main(int argc, char** argv) {
    bool add_bos = true, parse_special = true;
    std::vector<std::string> positional;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--no-bos") {
            add_bos = false;
        } else if (arg == "--no-special") {
            parse_special = false;
        } else if (arg.rfind("--", 0) == 0) {
            positional.clear();
            break;
        } else {
            positional.push_back(arg);
        }
    }
    if (positional.size() != 2) {
        std::fprintf(stderr, "usage: llamacpp-tokenize MODEL TEXT [--no-bos] [--no-special]\n");
        return 2;
    }
    llamacpp_tool::quiet_logs();
    if (!llamacpp_tool::load_cpu_backend()) {
        std::fprintf(stderr, "llamacpp-tokenize: no CPU backend loads from %s\n", INLAY_LLAMACPP_LIB_DIR);
        return 1;
    }
    llama_model* model = llamacpp_tool::load_model(positional[0].c_str(), true);
    if (!model) {
        std::fprintf(stderr, "llamacpp-tokenize: llama.cpp cannot load the vocabulary of %s\n", positional[0].c_str());
        return 1;
    }
    const llama_vocab* vocab = llama_model_get_vocab(model);
    const std::string& text = positional[1];
    const bool bos = add_bos && llama_vocab_get_add_bos(vocab);
    const auto length = static_cast<int32_t>(text.size());
    const int32_t needed = -llama_tokenize(vocab, text.data(), length, nullptr, 0, bos, parse_special);
    std::vector<llama_token> ids(static_cast<size_t>(std::max(needed, 0)));
    int rc = 0;
    if (llama_tokenize(vocab, text.data(), length, ids.data(), needed, bos, parse_special) != needed) {
        std::fprintf(stderr, "llamacpp-tokenize: tokenizing failed\n");
        rc = 1;
    } else {
        std::string out = "[";
        for (size_t i = 0; i < ids.size(); ++i) out += (i ? ", " : "") + std::to_string(ids[i]);
        std::printf("%s]\n", out.c_str());
    }
    llama_model_free(model);
    return rc;
}
