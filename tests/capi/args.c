/*
 * C ABI: argument checking that needs no model. NULL pointers, wrong struct sizes,
 * missing and malformed files give the documented status and a message; nothing
 * crashes; out-pointers are cleared on failure.
 */
#include <stdint.h>

#include "capi_test.h"

static void check_status_names(void) {
    CHECK(strcmp(inlay_status_name(INLAY_OK), "INLAY_OK") == 0);
    CHECK(strcmp(inlay_status_name(INLAY_ERR_INVALID_ARGUMENT), "INLAY_ERR_INVALID_ARGUMENT") == 0);
    CHECK(strcmp(inlay_status_name(INLAY_ERR_IO), "INLAY_ERR_IO") == 0);
    CHECK(strcmp(inlay_status_name(INLAY_ERR_BAD_FORMAT), "INLAY_ERR_BAD_FORMAT") == 0);
    CHECK(strcmp(inlay_status_name(INLAY_ERR_CANCELLED), "INLAY_ERR_CANCELLED") == 0);
    CHECK(strcmp(inlay_status_name(INLAY_ERR_BUFFER_TOO_SMALL), "INLAY_ERR_BUFFER_TOO_SMALL") == 0);
    CHECK(strcmp(inlay_status_name(INLAY_ERR_INVALID_TOKEN), "INLAY_ERR_INVALID_TOKEN") == 0);
    CHECK(strcmp(inlay_status_name(INLAY_ERR_INVALID_UTF8), "INLAY_ERR_INVALID_UTF8") == 0);
    CHECK(strcmp(inlay_status_name(INLAY_ERR_BAD_WEIGHTS), "INLAY_ERR_BAD_WEIGHTS") == 0);
    CHECK(strcmp(inlay_status_name(INLAY_ERR_INTERNAL), "INLAY_ERR_INTERNAL") == 0);
    CHECK(strcmp(inlay_status_name((inlay_status)42), "INLAY_ERR_UNKNOWN") == 0);
    CHECK(strcmp(inlay_status_name((inlay_status)-1), "INLAY_ERR_UNKNOWN") == 0);
}

static void check_null_everywhere(void) {
    inlay_model* model = (inlay_model*)(uintptr_t)1; /* must be overwritten with NULL */
    inlay_session* session = (inlay_session*)(uintptr_t)1;
    inlay_result* result = (inlay_result*)(uintptr_t)1;
    inlay_model_info info;
    inlay_timings timings;
    int32_t tokens[4] = {1, 2, 3, 4};
    float logits[16];
    char text[16];
    size_t n = 7;

    /* init and free functions accept NULL (the init macros take a struct: the symbols) */
    (inlay_model_params_init)(NULL);
    (inlay_session_params_init)(NULL);
    (inlay_generate_params_init)(NULL);
    inlay_model_params_init_size(NULL, sizeof(inlay_model_params));
    inlay_session_params_init_size(NULL, sizeof(inlay_session_params));
    inlay_generate_params_init_size(NULL, sizeof(inlay_generate_params));
    inlay_model_free(NULL);
    inlay_session_free(NULL);
    inlay_result_free(NULL);

    CHECK_STATUS(inlay_model_load(NULL, NULL, &model), INLAY_ERR_INVALID_ARGUMENT);
    CHECK(model == NULL);
    CHECK_STATUS(inlay_model_load("x.gguf", NULL, NULL), INLAY_ERR_INVALID_ARGUMENT);

    info.struct_size = sizeof info;
    CHECK_STATUS(inlay_model_get_info(NULL, &info), INLAY_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(inlay_tokenize(NULL, "a", 1, 0, tokens, 4, &n), INLAY_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(inlay_detokenize(NULL, tokens, 1, false, text, sizeof text, &n), INLAY_ERR_INVALID_ARGUMENT);

    CHECK_STATUS(inlay_session_create(NULL, NULL, &session), INLAY_ERR_INVALID_ARGUMENT);
    CHECK(session == NULL);
    CHECK_STATUS(inlay_session_reset(NULL), INLAY_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(inlay_session_n_tokens(NULL, &n), INLAY_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(inlay_session_cancel(NULL), INLAY_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(inlay_session_generate(NULL, "hi", NULL, &result), INLAY_ERR_INVALID_ARGUMENT);
    CHECK(result == NULL);
    result = (inlay_result*)(uintptr_t)1;
    CHECK_STATUS(inlay_session_generate_tokens(NULL, tokens, 1, NULL, &result), INLAY_ERR_INVALID_ARGUMENT);
    CHECK(result == NULL);
    CHECK_STATUS(inlay_session_eval_logits(NULL, tokens, 1, logits, 16), INLAY_ERR_INVALID_ARGUMENT);

    timings.struct_size = sizeof timings;
    CHECK_STATUS(inlay_result_timings(NULL, &timings), INLAY_ERR_INVALID_ARGUMENT);
    CHECK(strcmp(inlay_result_text(NULL), "") == 0);
    n = 7;
    CHECK(inlay_result_tokens(NULL, &n) == NULL && n == 0);
    n = 7;
    CHECK(inlay_result_prompt_tokens(NULL, &n) == NULL && n == 0);
    CHECK(inlay_result_stop_reason(NULL) == INLAY_STOP_NONE);
}

static void check_files(void) {
    inlay_model* model = (inlay_model*)(uintptr_t)1;
    inlay_model_params mp;
    FILE* f;
    const char* junk_path = "test_capi_args.junk.gguf";

    CHECK_STATUS(inlay_model_load("/nonexistent/dir/model.gguf", NULL, &model), INLAY_ERR_IO);
    CHECK(model == NULL);
    CHECK(strstr(inlay_last_error(), "model.gguf") != NULL); /* the message names the file */

    /* A file that is not GGUF at all. */
    f = fopen(junk_path, "wb");
    CHECK(f != NULL);
    if (f) {
        fputs("This is a text file, not a GGUF model; it is long enough to hold a header.\n", f);
        fclose(f);
        CHECK_STATUS(inlay_model_load(junk_path, NULL, &model), INLAY_ERR_BAD_FORMAT);
        CHECK(model == NULL);
        remove(junk_path);
    }

    /* A struct_size that no version of the header ever had. */
    inlay_model_params_init(&mp);
    CHECK(mp.struct_size == sizeof mp);
    mp.struct_size = 0;
    CHECK_STATUS(inlay_model_load("/nonexistent/model.gguf", &mp, &model), INLAY_ERR_INVALID_ARGUMENT);
    mp.struct_size = (size_t)1 << 30;
    CHECK_STATUS(inlay_model_load("/nonexistent/model.gguf", &mp, &model), INLAY_ERR_INVALID_ARGUMENT);
    CHECK(model == NULL);

    /* Out-of-range fields. */
    inlay_model_params_init(&mp);
    mp.n_threads = -3;
    CHECK_STATUS(inlay_model_load("/nonexistent/model.gguf", &mp, &model), INLAY_ERR_INVALID_ARGUMENT);
    inlay_model_params_init(&mp);
    mp.context_length = -1;
    CHECK_STATUS(inlay_model_load("/nonexistent/model.gguf", &mp, &model), INLAY_ERR_INVALID_ARGUMENT);
}

static void check_defaults(void) {
    inlay_generate_params gp;
    inlay_session_params sp;
    inlay_model_params mp;
    inlay_generate_params_init(&gp);
    CHECK(gp.struct_size == sizeof gp);
    CHECK(gp.max_tokens == 256);
    CHECK(gp.temperature == 0.8f);
    CHECK(gp.top_k == 40);
    CHECK(gp.top_p == 0.95f);
    CHECK(gp.min_p == 0.05f);
    CHECK(gp.repeat_penalty == 1.0f);
    CHECK(gp.penalty_last_n == 64);
    CHECK(gp.seed == UINT64_MAX);
    CHECK(gp.add_bos && gp.parse_special && !gp.ignore_eos);
    CHECK(gp.stop == NULL && gp.n_stop == 0 && gp.on_token == NULL);
    inlay_session_params_init(&sp);
    CHECK(sp.struct_size == sizeof sp && sp.context_length == 0);
    inlay_model_params_init(&mp);
    CHECK(mp.n_threads == 0 && mp.context_length == 0 && mp.progress == NULL);
}

int main(void) {
    CHECK(inlay_abi_version() == INLAY_ABI_VERSION);
    CHECK(inlay_version() != NULL && strlen(inlay_version()) > 0);
    check_status_names();
    check_defaults();
    check_null_everywhere();
    check_files();
    return capi_finish("capi_args");
}
