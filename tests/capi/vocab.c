/*
 * The vocabulary handle (inlay_vocab_*): tokenizing without weights. A whole model's
 * vocabulary, from its GGUF file and from its folder, tokenizes and detokenizes exactly
 * as the loaded model does; bad arguments and files get a status and a message.
 * (capi_vocab_llamacpp checks vocabulary-only files against llama.cpp's vectors.)
 */
#include "capi_test.h"

static inlay_vocab* load_vocab(const char* path) {
    inlay_vocab* vocab = NULL;
    CHECK_STATUS(inlay_vocab_load(path, &vocab), INLAY_OK);
    if (!vocab) {
        fprintf(stderr, "cannot continue without %s\n", path);
        exit(1);
    }
    return vocab;
}

/* The vocabulary of a whole model equals the loaded model's, from the GGUF file and
 * from the folder (whose tokenizer.model the model loader uses too). */
static void test_same_as_model(const char* path) {
    static const char* const texts[] = {"Once upon a time, there was a little girl.", "", " leading space",
                                        "<s>special</s> text", "\xC3\xA4pfel \xE2\x82\xAC 12345"};
    inlay_model_params mp;
    inlay_model* model = NULL;
    inlay_vocab* vocab = load_vocab(path);
    inlay_model_info mi;
    inlay_vocab_info vi;
    uint32_t flags;
    size_t i;
    inlay_model_params_init(&mp);
    mp.n_threads = 1;
    CHECK_STATUS(inlay_model_load(path, &mp, &model), INLAY_OK);
    if (!model) exit(1);
    memset(&mi, 0, sizeof mi);
    mi.struct_size = sizeof mi;
    memset(&vi, 0, sizeof vi);
    vi.struct_size = sizeof vi;
    CHECK_STATUS(inlay_model_get_info(model, &mi), INLAY_OK);
    CHECK_STATUS(inlay_vocab_get_info(vocab, &vi), INLAY_OK);
    CHECK(mi.n_vocab == vi.n_vocab && mi.bos_token == vi.bos_token && mi.eos_token == vi.eos_token);
    for (flags = 0; flags < 4; ++flags) {
        for (i = 0; i < sizeof texts / sizeof texts[0]; ++i) {
            int32_t a[256], b[256];
            size_t na = 0, nb = 0;
            char ta[1024], tb[1024];
            size_t la = 0, lb = 0;
            CHECK_STATUS(inlay_tokenize(model, texts[i], strlen(texts[i]), flags, a, 256, &na), INLAY_OK);
            CHECK_STATUS(inlay_vocab_tokenize(vocab, texts[i], strlen(texts[i]), flags, b, 256, &nb), INLAY_OK);
            CHECK(na == nb && memcmp(a, b, na * sizeof a[0]) == 0);
            /* BOS first: when asked for and the vocabulary wants it, or spelled out as "<s>" */
            CHECK((((flags & INLAY_TOKENIZE_ADD_BOS) != 0 && vi.add_bos) ||
                   ((flags & INLAY_TOKENIZE_PARSE_SPECIAL) != 0 && strncmp(texts[i], "<s>", 3) == 0)) ==
                  (na > 0 && a[0] == vi.bos_token));
            CHECK_STATUS(inlay_detokenize(model, a, na, (flags & 1) != 0, ta, sizeof ta, &la), INLAY_OK);
            CHECK_STATUS(inlay_vocab_detokenize(vocab, b, nb, (flags & 1) != 0, tb, sizeof tb, &lb), INLAY_OK);
            CHECK(la == lb && strcmp(ta, tb) == 0);
        }
    }
    inlay_model_free(model);
    inlay_vocab_free(vocab);
}

static void test_errors(const char* model_path) {
    inlay_vocab* vocab = (inlay_vocab*)&vocab; /* must be reset to NULL on failure */
    int32_t ids[8];
    size_t n = 0;
    char text[8];
    inlay_vocab_info info;
    CHECK_STATUS(inlay_vocab_load("/nonexistent/vocab.gguf", &vocab), INLAY_ERR_IO);
    CHECK(vocab == NULL);
    CHECK_STATUS(inlay_vocab_load(NULL, &vocab), INLAY_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(inlay_vocab_load(model_path, NULL), INLAY_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(inlay_vocab_tokenize(NULL, "a", 1, 0, ids, 8, &n), INLAY_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(inlay_vocab_detokenize(NULL, ids, 0, false, text, sizeof text, &n), INLAY_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(inlay_vocab_get_info(NULL, &info), INLAY_ERR_INVALID_ARGUMENT);
    inlay_vocab_free(NULL);

    vocab = load_vocab(model_path);
    CHECK_STATUS(inlay_vocab_tokenize(vocab, "\xC3(", 2, 0, ids, 8, &n), INLAY_ERR_INVALID_UTF8);
    CHECK_STATUS(inlay_vocab_tokenize(vocab, "a", 1, 8, ids, 8, &n), INLAY_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(inlay_vocab_tokenize(vocab, "hello world hello world", 23, 0, ids, 1, &n),
                 INLAY_ERR_BUFFER_TOO_SMALL);
    CHECK(n > 1);
    ids[0] = 1 << 30;
    CHECK_STATUS(inlay_vocab_detokenize(vocab, ids, 1, false, text, sizeof text, &n), INLAY_ERR_INVALID_TOKEN);
    memset(&info, 0, sizeof info);
    CHECK_STATUS(inlay_vocab_get_info(vocab, &info), INLAY_ERR_INVALID_ARGUMENT); /* struct_size unset */
    inlay_vocab_free(vocab);
}

int main(void) {
    const char* gguf = INLAY_SOURCE_DIR "/models/default-f32.gguf";
    const char* folder = INLAY_SOURCE_DIR "/models/default";
    test_errors(gguf);
    test_same_as_model(gguf);
    test_same_as_model(folder);
    return capi_finish("capi_vocab");
}
