// llamacpp-logits: llama.cpp's raw logits for the tests' cross-checks.
//   llamacpp-logits MODEL (--prompt TEXT | --tokens 1,2,3) [--n 16] [--k 5] [--threads 2] [--no-bos]
// Evaluates the prompt in one batch with logits at every position, then decodes --n
// tokens greedily (ties to the lowest id). Prints one JSON object:
//   prompt_tokens     the evaluated ids (--prompt: llama.cpp's tokenizer, BOS as the GGUF
//                     asks unless --no-bos, special-token text parsed; --tokens: as given)
//   generated_tokens  the greedy continuation
//   prompt_top        per prompt position, the top --k {"id", "logit"} (raw, float32)
//   gen_top           the same for the distribution each generated token was picked from
// Exit status: 0, 1 when llama.cpp fails (message on stderr), 2 on a usage error.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "llamacpp_common.h"

namespace {

int usage(const char* why) {
    std::fprintf(stderr,
                 "llamacpp-logits: %s\nusage: llamacpp-logits MODEL (--prompt TEXT | --tokens 1,2,3) [--n 16] [--k 5] "
                 "[--threads 2] [--no-bos]\n",
                 why);
    return 2;
}

bool parse_int(const char* text, int min, int& out) {
    char* end = nullptr;
    const long v = std::strtol(text, &end, 10);
    if (end == text || *end != '\0' || v < min || v > 1 << 24) return false;
    out = static_cast<int>(v);
    return true;
}

bool parse_ids(const std::string& text, std::vector<llama_token>& out) {
    size_t at = 0;
    while (at < text.size()) {
        const size_t comma = std::min(text.find(',', at), text.size());
        int id = 0;
        if (!parse_int(text.substr(at, comma - at).c_str(), 0, id)) return false;
        out.push_back(id);
        at = comma + 1;
    }
    return !out.empty();
}

std::string ids_json(const std::vector<llama_token>& ids) {
    std::string s = "[";
    for (size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
    return s + "]";
}

// The k largest logits of a row, largest first (ties to the lowest id), as JSON.
std::string top_json(const float* row, int n_vocab, int k) {
    std::vector<int> order(static_cast<size_t>(n_vocab));
    std::iota(order.begin(), order.end(), 0);
    k = std::min(k, n_vocab);
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [row](int a, int b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
    std::string s = "[";
    for (int i = 0; i < k; ++i) {
        char item[80];
        std::snprintf(item, sizeof item, "%s{\"id\":%d,\"logit\":%.9g}", i ? "," : "", order[static_cast<size_t>(i)],
                      static_cast<double>(row[order[static_cast<size_t>(i)]]));
        s += item;
    }
    return s + "]";
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) return usage("no model given");
    const char* model_path = argv[1];
    std::string prompt;
    std::vector<llama_token> ids;
    bool have_prompt = false, have_ids = false, add_bos = true;
    int n_gen = 16, k = 5, threads = 2;
    for (int i = 2; i < argc; ++i) {
        const std::string arg = argv[i];
        const bool has_value = i + 1 < argc;
        if (arg == "--no-bos") {
            add_bos = false;
        } else if (!has_value) {
            return usage(("missing value or unknown option " + arg).c_str());
        } else if (arg == "--prompt") {
            prompt = argv[++i];
            have_prompt = true;
        } else if (arg == "--tokens") {
            if (!parse_ids(argv[++i], ids)) return usage("--tokens takes comma-separated non-negative ids");
            have_ids = true;
        } else if (arg == "--n" || arg == "--k" || arg == "--threads") {
            int& target = arg == "--n" ? n_gen : arg == "--k" ? k : threads;
            if (!parse_int(argv[++i], arg == "--n" ? 0 : 1, target)) return usage(("bad value for " + arg).c_str());
        } else {
            return usage(("unknown option " + arg).c_str());
        }
    }
    if (have_prompt == have_ids) return usage("give exactly one of --prompt and --tokens");

    llamacpp_tool::quiet_logs();
    if (!llamacpp_tool::load_cpu_backend()) {
        std::fprintf(stderr, "llamacpp-logits: no CPU backend loads from %s\n", INLAY_LLAMACPP_LIB_DIR);
        return 1;
    }
    llama_model* model = llamacpp_tool::load_model(model_path, false);
    if (!model) {
        std::fprintf(stderr, "llamacpp-logits: llama.cpp cannot load %s\n", model_path);
        return 1;
    }
    const llama_vocab* vocab = llama_model_get_vocab(model);
    const int n_vocab = llama_vocab_n_tokens(vocab);
    if (have_prompt) {
        const bool bos = add_bos && llama_vocab_get_add_bos(vocab);
        const auto length = static_cast<int32_t>(prompt.size());
        const int32_t needed = -llama_tokenize(vocab, prompt.data(), length, nullptr, 0, bos, true);
        ids.resize(static_cast<size_t>(std::max(needed, 0)));
        if (llama_tokenize(vocab, prompt.data(), length, ids.data(), needed, bos, true) != needed) {
            std::fprintf(stderr, "llamacpp-logits: tokenizing the prompt failed\n");
            return 1;
        }
    }
    if (ids.empty()) return usage("the prompt has no tokens");
    for (const llama_token id : ids) {
        if (id >= n_vocab) return usage(("token id " + std::to_string(id) + " is outside the vocabulary").c_str());
    }

    const auto n_prompt = static_cast<int32_t>(ids.size());
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = static_cast<uint32_t>(n_prompt + n_gen + 8);
    cp.n_batch = static_cast<uint32_t>(n_prompt);
    cp.n_ubatch = cp.n_batch;
    cp.n_threads = threads;
    cp.n_threads_batch = threads;
    llama_context* ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        std::fprintf(stderr, "llamacpp-logits: llama.cpp cannot create a context\n");
        return 1;
    }
    llama_batch batch = llama_batch_init(n_prompt, 0, 1);
    for (int32_t i = 0; i < n_prompt; ++i) {
        batch.token[i] = ids[static_cast<size_t>(i)];
        batch.pos[i] = i;
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = 1;  // every position: the tests compare each one
    }
    batch.n_tokens = n_prompt;
    int rc = 0;
    std::string prompt_top = "[", gen_top = "[";
    std::vector<llama_token> generated;
    if (llama_decode(ctx, batch) != 0) {
        std::fprintf(stderr, "llamacpp-logits: decoding the prompt failed\n");
        rc = 1;
    } else {
        for (int32_t i = 0; i < n_prompt; ++i) prompt_top += (i ? "," : "") + top_json(llama_get_logits_ith(ctx, i), n_vocab, k);
        const float* row = llama_get_logits_ith(ctx, n_prompt - 1);
        for (int g = 0; g < n_gen && rc == 0; ++g) {
            gen_top += (g ? "," : "") + top_json(row, n_vocab, k);
            llama_token next = static_cast<llama_token>(std::max_element(row, row + n_vocab) - row);
            generated.push_back(next);
            if (g + 1 == n_gen) break;
            if (llama_decode(ctx, llama_batch_get_one(&next, 1)) != 0) {
                std::fprintf(stderr, "llamacpp-logits: decoding token %d failed\n", g + 1);
                rc = 1;
            }
            row = llama_get_logits_ith(ctx, -1);
        }
    }
    if (rc == 0) {
        std::printf("{\"prompt_tokens\":%s,\"generated_tokens\":%s,\"prompt_top\":%s],\"gen_top\":%s]}\n",
                    ids_json(ids).c_str(), ids_json(generated).c_str(), prompt_top.c_str(), gen_top.c_str());
    }
    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    return rc;
}
