/*
 * C ABI with a loaded model (stories260K): model information, wrong struct sizes,
 * out-of-range token ids (INLAY_ERR_INVALID_TOKEN), invalid UTF-8
 * (INLAY_ERR_INVALID_UTF8) and buffers that are too small. A failed call must leave
 * the session unchanged and usable.
 */
#include <stdint.h>

#include "capi_test.h"

static void check_info(inlay_model* model) {
    inlay_model_info info;
    memset(&info, 0, sizeof info);
    CHECK_STATUS(inlay_model_get_info(model, &info), INLAY_ERR_INVALID_ARGUMENT); /* struct_size 0 */
    info.struct_size = sizeof info;
    CHECK_STATUS(inlay_model_get_info(model, NULL), INLAY_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(inlay_model_get_info(model, &info), INLAY_OK);
    /* shared/testdata/README.md, "models/stories260K.gguf" */
    CHECK(strcmp(info.architecture, "llama") == 0);
    CHECK(strcmp(info.name, "llama") == 0);
    CHECK(info.n_vocab == 512);
    CHECK(info.n_embd == 64);
    CHECK(info.n_layers == 5);
    CHECK(info.n_heads == 8);
    CHECK(info.n_kv_heads == 4);
    CHECK(info.head_dim == 8);
    CHECK(info.n_ff == 172);
    CHECK(info.train_context_length == 2048);
    CHECK(info.context_length == 2048);
    CHECK(info.bos_token == 1);
    CHECK(info.eos_token == 2);
    CHECK(info.file_bytes == 1185376);
    /* 48 tensors: 2 * 64*512 + 64 + 5 * (64*64*2 + 64*32*2 + 64*2 + 3*64*172) */
    CHECK(info.n_params == 2 * 64 * 512 + 64 + 5 * (64 * 64 * 2 + 64 * 32 * 2 + 64 * 2 + 3 * 64 * 172));
}

static void check_sessions(inlay_model* model) {
    inlay_session* session = (inlay_session*)(uintptr_t)1;
    inlay_session_params sp;
    inlay_generate_params gp;
    inlay_result* result = NULL;
    const int32_t bad_high[2] = {1, 512}; /* the vocabulary has 512 tokens: 0..511 */
    const int32_t bad_negative[2] = {1, -1};
    const int32_t good[2] = {1, 403};
    const char* const invalid_utf8[] = {"\xff", "abc\xc3", "\xc0\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80",
                                        "ok\x80ok"};
    const char* stop_null[1] = {NULL};
    float logits[2 * 512];
    size_t n = 0;
    size_t i;

    inlay_session_params_init(&sp);
    sp.struct_size = 0;
    CHECK_STATUS(inlay_session_create(model, &sp, &session), INLAY_ERR_INVALID_ARGUMENT);
    CHECK(session == NULL);
    inlay_session_params_init(&sp);
    sp.context_length = -5;
    CHECK_STATUS(inlay_session_create(model, &sp, &session), INLAY_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(inlay_session_create(model, NULL, NULL), INLAY_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(inlay_session_create(model, NULL, &session), INLAY_OK);
    if (!session) return;

    inlay_generate_params_init(&gp);
    gp.max_tokens = 2;
    CHECK_STATUS(inlay_session_generate(session, NULL, &gp, &result), INLAY_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(inlay_session_generate_tokens(session, NULL, 2, &gp, &result), INLAY_ERR_INVALID_ARGUMENT);
    gp.struct_size = 0;
    CHECK_STATUS(inlay_session_generate(session, "hi", &gp, &result), INLAY_ERR_INVALID_ARGUMENT);
    CHECK(result == NULL);
    inlay_generate_params_init(&gp);
    gp.max_tokens = 2;
    gp.stop = stop_null;
    gp.n_stop = 1;
    CHECK_STATUS(inlay_session_generate(session, "hi", &gp, &result), INLAY_ERR_INVALID_ARGUMENT);
    gp.stop = NULL;
    CHECK_STATUS(inlay_session_generate(session, "hi", &gp, &result), INLAY_ERR_INVALID_ARGUMENT);
    gp.n_stop = 0;

    /* token ids outside the vocabulary */
    CHECK_STATUS(inlay_session_generate_tokens(session, bad_high, 2, &gp, &result), INLAY_ERR_INVALID_TOKEN);
    CHECK(result == NULL);
    CHECK_STATUS(inlay_session_generate_tokens(session, bad_negative, 2, &gp, &result), INLAY_ERR_INVALID_TOKEN);
    CHECK_STATUS(inlay_session_eval_logits(session, bad_high, 2, logits, 2 * 512), INLAY_ERR_INVALID_TOKEN);
    CHECK_STATUS(inlay_session_eval_logits(session, bad_negative, 2, logits, 2 * 512), INLAY_ERR_INVALID_TOKEN);
    CHECK_STATUS(inlay_detokenize(model, bad_high, 2, false, NULL, 0, &n), INLAY_ERR_INVALID_TOKEN);
    CHECK_STATUS(inlay_detokenize(model, bad_negative, 2, false, NULL, 0, &n), INLAY_ERR_INVALID_TOKEN);

    /* invalid UTF-8: truncated, overlong, surrogate, above U+10FFFF, stray continuation */
    for (i = 0; i < sizeof invalid_utf8 / sizeof invalid_utf8[0]; ++i) {
        int32_t ids[16];
        CHECK_STATUS(inlay_session_generate(session, invalid_utf8[i], &gp, &result), INLAY_ERR_INVALID_UTF8);
        CHECK(result == NULL);
        CHECK_STATUS(inlay_tokenize(model, invalid_utf8[i], strlen(invalid_utf8[i]), 0, ids, 16, &n),
                     INLAY_ERR_INVALID_UTF8);
    }

    /* Nothing above changed the session. */
    CHECK_STATUS(inlay_session_n_tokens(session, &n), INLAY_OK);
    CHECK(n == 0);
    CHECK_STATUS(inlay_session_n_tokens(session, NULL), INLAY_ERR_INVALID_ARGUMENT);

    /* eval_logits needs n * n_vocab floats */
    CHECK_STATUS(inlay_session_eval_logits(session, good, 2, logits, 2 * 512 - 1), INLAY_ERR_BUFFER_TOO_SMALL);
    CHECK_STATUS(inlay_session_eval_logits(session, good, 2, NULL, 2 * 512), INLAY_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(inlay_session_n_tokens(session, &n), INLAY_OK);
    CHECK(n == 0);
    CHECK_STATUS(inlay_session_eval_logits(session, good, 2, logits, 2 * 512), INLAY_OK);
    CHECK_STATUS(inlay_session_n_tokens(session, &n), INLAY_OK);
    CHECK(n == 2);

    /* timings need a struct_size */
    {
        inlay_timings t;
        CHECK_STATUS(inlay_session_generate(session, " hello", &gp, &result), INLAY_OK);
        CHECK(result != NULL);
        t.struct_size = 0;
        CHECK_STATUS(inlay_result_timings(result, &t), INLAY_ERR_INVALID_ARGUMENT);
        CHECK_STATUS(inlay_result_timings(result, NULL), INLAY_ERR_INVALID_ARGUMENT);
        inlay_result_free(result);
    }
    inlay_session_free(session);
}

int main(void) {
    inlay_model* model = capi_load_stories(0);
    check_info(model);
    check_sessions(model);
    inlay_model_free(model);
    return capi_finish("capi_model_args");
}
