/*
 * How a test skips (C99 and C++, used by the Catch2 programs and the C ABI tests).
 *
 * Two kinds of skip:
 *  - an input is missing (testdata, a tool, a toolchain): with INLAY_TEST_NO_SKIP=1 in
 *    the environment (CI) this is a failure, not a skip, so a CI machine that lacks an
 *    input cannot pass by not running the check;
 *  - the machine lacks a device (no CUDA GPU): always a skip, CI machines have none.
 * Every skip appends one line "program<TAB>kind<TAB>what: reason" to test-skips.log in
 * the build directory (scripts/test.sh prints the total of a run from it).
 */
#ifndef INLAY_TESTS_SUPPORT_SKIP_H
#define INLAY_TESTS_SUPPORT_SKIP_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INLAY_SKIP_MISSING "missing"
#define INLAY_SKIP_DEVICE "no-device"

/* 1 when INLAY_TEST_NO_SKIP=1: a missing input fails the test instead of skipping it. */
static inline int inlay_test_no_skip(void) {
    const char* v = getenv("INLAY_TEST_NO_SKIP");
    return v != NULL && strcmp(v, "1") == 0;
}

/* Appends a skip to <binary_dir>/test-skips.log (INLAY_BINARY_DIR from the environment
 * first, as test_paths.cpp does), naming this program. One unbuffered write per line:
 * tests run in parallel. */
static inline void inlay_test_log_skip(const char* binary_dir, const char* kind, const char* what) {
    char path[4096];
    char line[2048];
    const int path_size = sizeof path; /* int like snprintf's result; no cast (C and C++) */
    const int line_size = sizeof line;
    char program[1024] = "?";
    const char* slash;
    const char* env = getenv("INLAY_BINARY_DIR");
    FILE* f;
    int n;
    if (env && *env) binary_dir = env;
    /* argv[0]: the first NUL-terminated string of /proc/self/cmdline (standard C only). */
    f = fopen("/proc/self/cmdline", "rb");
    if (f) {
        const size_t got = fread(program, 1, sizeof program - 1, f);
        program[got] = '\0';
        fclose(f);
        if (!program[0]) strcpy(program, "?");
    }
    slash = strrchr(program, '/');
    n = snprintf(path, sizeof path, "%s/test-skips.log", binary_dir);
    if (n < 0 || n >= path_size) return;
    n = snprintf(line, sizeof line, "%s\t%s\t%s\n", slash ? slash + 1 : program, kind, what);
    if (n < 0) return;
    if (n >= line_size) {
        line[sizeof line - 2] = '\n';
        line[sizeof line - 1] = '\0';
    }
    f = fopen(path, "a");
    if (!f) return;
    setvbuf(f, NULL, _IONBF, 0);
    fputs(line, f);
    fclose(f);
}

#endif /* INLAY_TESTS_SUPPORT_SKIP_H */
