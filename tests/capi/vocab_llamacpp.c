/*
 * The vocabulary handle (inlay_vocab_*) on llama.cpp's vocabulary-only files
 * (testdata/vocab/ggml-vocab-*.gguf: tokenizer metadata, no tensors) and on Hugging Face
 * tokenizer folders without weights: each of the 46 test texts (*.inp) gives exactly
 * llama.cpp's ids (*.out: llama.cpp's tokenizer test vectors, made with add_special and
 * parse_special off).
 */
#include "capi_test.h"

#define SEPARATOR "\n__ggml_vocab_test__\n"

/* Checks every case of `inp_relative` against `out_relative` through `vocab`; returns
 * the number of cases that matched. */
static int check_vectors(const inlay_vocab* vocab, const char* inp_relative, const char* out_relative) {
    char inp_path[4096], out_path[4096];
    char *inp, *out, *line, *text;
    size_t n_out = 0;
    int matched = 0, cases = 0;
    capi_testdata(inp_path, sizeof inp_path, inp_relative);
    capi_testdata(out_path, sizeof out_path, out_relative);
    inp = capi_read_file(inp_path, NULL);
    out = capi_read_file(out_path, &n_out);
    text = inp;
    line = out;
    for (;;) {
        char* end = strstr(text, SEPARATOR);
        char* line_end;
        int32_t ids[512];
        size_t n = 0, k = 0;
        int ok = 1;
        if (!end) break;
        line_end = strchr(line, '\n');
        if (!line_end) {
            fprintf(stderr, "%s: fewer lines than cases\n", out_relative);
            ++*capi_failure_count();
            break;
        }
        *line_end = '\0';
        CHECK_STATUS(inlay_vocab_tokenize(vocab, text, (size_t)(end - text), 0, ids, 512, &n), INLAY_OK);
        {
            /* the expected ids: space-separated decimal numbers */
            const char* p = line;
            while (*p) {
                long v;
                char* next;
                while (*p == ' ') ++p;
                if (!*p) break;
                v = strtol(p, &next, 10);
                if (next == p) break;
                if (k >= n || ids[k] != (int32_t)v) ok = 0;
                ++k;
                p = next;
            }
        }
        if (k != n) ok = 0;
        if (!ok) {
            fprintf(stderr, "%s case %d (\"%.*s\"): expected%s, got %zu ids:", inp_relative, cases,
                    (int)(end - text < 60 ? end - text : 60), text, line, n);
            for (k = 0; k < n && k < 40; ++k) fprintf(stderr, " %d", (int)ids[k]);
            fprintf(stderr, "\n");
            ++*capi_failure_count();
        }
        matched += ok;
        ++cases;
        text = end + strlen(SEPARATOR);
        line = line_end + 1;
    }
    CHECK(cases == 46);
    free(inp);
    free(out);
    return matched;
}

static inlay_vocab* load_vocab(const char* path) {
    inlay_vocab* vocab = NULL;
    CHECK_STATUS(inlay_vocab_load(path, &vocab), INLAY_OK);
    if (!vocab) {
        fprintf(stderr, "cannot continue without %s\n", path);
        exit(1);
    }
    return vocab;
}

static void test_llamacpp_vocab_files(void) {
    static const char* const names[] = {"llama-spm", "phi-3", "gpt-2"};
    static const int32_t n_vocab[] = {32000, 32064, 50257};
    size_t i;
    for (i = 0; i < sizeof names / sizeof names[0]; ++i) {
        char gguf[4096], inp[256], out[256], rel[256];
        inlay_vocab* vocab;
        inlay_vocab_info info;
        snprintf(rel, sizeof rel, "vocab/ggml-vocab-%s.gguf", names[i]);
        snprintf(inp, sizeof inp, "vocab/ggml-vocab-%s.gguf.inp", names[i]);
        snprintf(out, sizeof out, "vocab/ggml-vocab-%s.gguf.out", names[i]);
        capi_testdata(gguf, sizeof gguf, rel);
        vocab = load_vocab(gguf);
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        CHECK_STATUS(inlay_vocab_get_info(vocab, &info), INLAY_OK);
        CHECK(info.n_vocab == n_vocab[i]);
        CHECK(strcmp(info.tokenizer_model, strcmp(names[i], "gpt-2") == 0 ? "gpt2" : "llama") == 0);
        CHECK(check_vectors(vocab, inp, out) == 46);
        inlay_vocab_free(vocab);
    }
}

static void test_tokenizer_folders(void) {
    static const char* const folders[][2] = {{"tokenizers/llama3", "llama-bpe"}, {"tokenizers/qwen3", "qwen2"}};
    size_t i;
    for (i = 0; i < sizeof folders / sizeof folders[0]; ++i) {
        char json[4096], folder[4096], inp[256], out[256], rel[256];
        inlay_vocab* vocab;
        snprintf(rel, sizeof rel, "%s/tokenizer.json", folders[i][0]);
        capi_testdata(json, sizeof json, rel);
        snprintf(folder, sizeof folder, "%.*s", (int)(strlen(json) - strlen("/tokenizer.json")), json);
        snprintf(inp, sizeof inp, "vocab/ggml-vocab-%s.gguf.inp", folders[i][1]);
        snprintf(out, sizeof out, "vocab/ggml-vocab-%s.gguf.out", folders[i][1]);
        vocab = load_vocab(folder);
        CHECK(check_vectors(vocab, inp, out) == 46);
        inlay_vocab_free(vocab);
    }
}

int main(void) {
    test_llamacpp_vocab_files();
    test_tokenizer_folders();
    return capi_finish("capi_vocab_llamacpp");
}
