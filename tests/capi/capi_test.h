/*
 * Helpers of the C ABI tests (C99). Each test is its own program: it exits 0 when all
 * checks pass, 1 when any fails (every failure is printed) and 77 when an input under
 * shared/testdata is absent (ctest reports it as skipped; with INLAY_TEST_NO_SKIP=1 it
 * exits 1 instead, see tests/support/skip.h).
 */
#ifndef INLAY_TESTS_CAPI_TEST_H
#define INLAY_TESTS_CAPI_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inlay/inlay.h"
#include "support/skip.h"

static inline int* capi_failure_count(void) {
    static int count;
    return &count;
}

#define CHECK(cond)                                                                \
    do {                                                                           \
        if (!(cond)) {                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            ++*capi_failure_count();                                               \
        }                                                                          \
    } while (0)

/* `call` must return `expected`; on a failure status the last error must name it. */
#define CHECK_STATUS(call, expected) capi_check_status((call), (expected), #call, __FILE__, __LINE__)

static inline void capi_check_status(inlay_status got, inlay_status expected, const char* call, const char* file,
                                     int line) {
    if (got != expected) {
        fprintf(stderr, "%s:%d: %s returned %s, expected %s (last error: %s)\n", file, line, call,
                inlay_status_name(got), inlay_status_name(expected), inlay_last_error());
        ++*capi_failure_count();
        return;
    }
    if (expected != INLAY_OK) {
        /* The message starts with the status name and says something after it. */
        const char* message = inlay_last_error();
        const char* name = inlay_status_name(expected);
        if (strncmp(message, name, strlen(name)) != 0 || strlen(message) <= strlen(name) + 2) {
            fprintf(stderr, "%s:%d: %s: last error \"%s\" does not start with %s and a message\n", file, line, call,
                    message, name);
            ++*capi_failure_count();
        }
    }
}

static inline int capi_finish(const char* test) {
    const int failures = *capi_failure_count();
    if (failures) {
        fprintf(stderr, "%s: %d check(s) failed\n", test, failures);
        return 1;
    }
    printf("%s: all checks passed\n", test);
    return 0;
}

/* Writes the path of shared/testdata/`relative` into out (INLAY_SHARED_DIR from the
 * environment, else from the build) and exits with 77 (skip) if the file is absent, or
 * with 1 under INLAY_TEST_NO_SKIP=1. */
static inline void capi_testdata(char* out, size_t capacity, const char* relative) {
    const char* dir = getenv("INLAY_SHARED_DIR");
    FILE* f;
    if (!dir || !*dir) dir = INLAY_SHARED_DIR;
    if ((size_t)snprintf(out, capacity, "%s/testdata/%s", dir, relative) >= capacity) {
        fprintf(stderr, "path too long: %s/testdata/%s\n", dir, relative);
        exit(1);
    }
    f = fopen(out, "rb");
    if (!f) {
        char why[4200];
        snprintf(why, sizeof why, "%s is absent (set INLAY_SHARED_DIR)", out);
        if (inlay_test_no_skip()) {
            fprintf(stderr, "SKIPPED: %s (a failure: INLAY_TEST_NO_SKIP=1 forbids skipping)\n", why);
            exit(1);
        }
        printf("SKIPPED: %s\n", why);
        inlay_test_log_skip(INLAY_BINARY_DIR, INLAY_SKIP_MISSING, why);
        exit(77);
    }
    fclose(f);
}

/* The whole file, NUL-terminated, in malloc'd memory (free it); exits on failure. */
static inline char* capi_read_file(const char* path, size_t* length) {
    FILE* f = fopen(path, "rb");
    char* data = NULL;
    size_t n = 0;
    size_t got;
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(1);
    }
    data = (char*)malloc(1);
    for (;;) {
        char* grown = (char*)realloc(data, n + 4096 + 1);
        if (!grown) {
            fprintf(stderr, "out of memory reading %s\n", path);
            exit(1);
        }
        data = grown;
        got = fread(data + n, 1, 4096, f);
        n += got;
        if (got < 4096) break;
    }
    fclose(f);
    data[n] = '\0';
    if (length) *length = n;
    return data;
}

/* Loads shared/testdata/models/stories260K.gguf with one compute thread (the tests
 * share a small machine) and the given context length (0 = the model's). Skips (77)
 * when the file is absent; exits 1 if loading fails. */
static inline inlay_model* capi_load_stories(int32_t context_length) {
    char path[4096];
    inlay_model_params mp;
    inlay_model* model = NULL;
    capi_testdata(path, sizeof path, "models/stories260K.gguf");
    inlay_model_params_init(&mp);
    mp.n_threads = 1;
    mp.context_length = context_length;
    if (inlay_model_load(path, &mp, &model) != INLAY_OK) {
        fprintf(stderr, "loading %s failed: %s\n", path, inlay_last_error());
        exit(1);
    }
    return model;
}

#endif /* INLAY_TESTS_CAPI_TEST_H */
