/*
 * consumer: a host program built against an installed inlay only (C99), by
 * tests/packaging/install_test.sh, once through find_package(inlay CONFIG) and once
 * through pkg-config.
 *
 *     consumer VERSION ABI_VERSION MODEL
 *
 * Checks that the library it runs with has that version and ABI version (and that the
 * header it was compiled with agrees), prints the path of the libinlay it loaded
 * ("library: PATH") for the driver to check, loads MODEL and generates 8 tokens greedily
 * ("text: TEXT"). Exits 0 when every check passes, 1 otherwise.
 */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <inlay/inlay.h>

static int failures;

#define CHECK(cond)                                                                \
    do {                                                                           \
        if (!(cond)) {                                                             \
            fprintf(stderr, "consumer: %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            ++failures;                                                            \
        }                                                                          \
    } while (0)

static bool count_piece(int32_t token, const char* piece, size_t len, void* user) {
    (void)token;
    (void)piece;
    (void)len;
    ++*(int*)user;
    return true;
}

int main(int argc, char** argv) {
    Dl_info where;
    inlay_model_params mp;
    inlay_generate_params gp;
    inlay_model* model = NULL;
    inlay_session* session = NULL;
    inlay_result* result = NULL;
    size_t n_tokens = 0;
    int pieces = 0;

    if (argc != 4) {
        fprintf(stderr, "usage: %s VERSION ABI_VERSION MODEL\n", argv[0]);
        return 2;
    }
    printf("version: %s\nabi: %d\n", inlay_version(), inlay_abi_version());
    CHECK(strcmp(inlay_version(), argv[1]) == 0);
    CHECK(inlay_abi_version() == atoi(argv[2]));
    CHECK(inlay_abi_version() == INLAY_ABI_VERSION);
    CHECK(strcmp(inlay_status_name(INLAY_ERR_IO), "INLAY_ERR_IO") == 0);
    if (dladdr((void*)(size_t)&inlay_version, &where) && where.dli_fname)
        printf("library: %s\n", where.dli_fname);
    else
        CHECK(!"dladdr found the library of inlay_version");

    inlay_model_params_init(&mp);
    mp.n_threads = 1;
    mp.device = INLAY_DEVICE_CPU;
    CHECK(inlay_model_load("/nonexistent/model.gguf", &mp, &model) == INLAY_ERR_IO);
    CHECK(model == NULL);
    if (inlay_model_load(argv[3], &mp, &model) != INLAY_OK) {
        fprintf(stderr, "consumer: loading %s failed: %s\n", argv[3], inlay_last_error());
        return 1;
    }
    if (inlay_session_create(model, NULL, &session) != INLAY_OK) {
        fprintf(stderr, "consumer: inlay_session_create failed: %s\n", inlay_last_error());
        inlay_model_free(model);
        return 1;
    }
    inlay_generate_params_init(&gp);
    gp.max_tokens = 8;
    gp.temperature = 0.0f;
    gp.ignore_eos = true;
    gp.on_token = count_piece;
    gp.user = &pieces;
    if (inlay_session_generate(session, "You will", &gp, &result) != INLAY_OK) {
        fprintf(stderr, "consumer: inlay_session_generate failed: %s\n", inlay_last_error());
        ++failures;
    } else {
        inlay_result_tokens(result, &n_tokens);
        CHECK(n_tokens == 8);
        CHECK(pieces >= 8);
        CHECK(inlay_result_stop_reason(result) == INLAY_STOP_MAX_TOKENS);
        CHECK(strlen(inlay_result_text(result)) > 0);
        printf("text: %s\n", inlay_result_text(result));
    }
    inlay_result_free(result);
    inlay_session_free(session);
    inlay_model_free(model);
    if (failures) {
        fprintf(stderr, "consumer: %d check(s) failed\n", failures);
        return 1;
    }
    printf("consumer: all checks passed\n");
    return 0;
}
