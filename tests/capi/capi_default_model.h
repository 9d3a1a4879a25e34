/*
 * Helpers of the C ABI tests that run on the repository's default model
 * (models/default-f32.gguf: part of the repository, so these tests never skip), plus a
 * watchdog for tests with threads: a deadlock fails the test instead of hanging it.
 */
#ifndef INLAY_TESTS_CAPI_DEFAULT_MODEL_H
#define INLAY_TESTS_CAPI_DEFAULT_MODEL_H

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "capi_test.h"

/* The path of models/`file` in the source tree (INLAY_SOURCE_DIR from the environment,
 * else from the build). Static storage, overwritten by the next call. */
static inline const char* capi_repo_model_path(const char* file) {
    static char path[4096];
    const char* dir = getenv("INLAY_SOURCE_DIR");
    if (!dir || !*dir) dir = INLAY_SOURCE_DIR;
    if ((size_t)snprintf(path, sizeof path, "%s/models/%s", dir, file) >= sizeof path) {
        fprintf(stderr, "path too long: %s/models/%s\n", dir, file);
        exit(1);
    }
    return path;
}

/* Loads models/default-f32.gguf with one compute thread and the given KV settings
 * (0 = defaults); exits 1 if loading fails. */
static inline inlay_model* capi_load_default_with(int32_t context_length, int32_t kv_block_size, int64_t kv_budget_bytes) {
    inlay_model_params mp;
    inlay_model* model = NULL;
    const char* path = capi_repo_model_path("default-f32.gguf");
    inlay_model_params_init(&mp);
    mp.n_threads = 1;
    mp.context_length = context_length;
    mp.kv_block_size = kv_block_size;
    mp.kv_budget_bytes = kv_budget_bytes;
    if (inlay_model_load(path, &mp, &model) != INLAY_OK) {
        fprintf(stderr, "loading %s failed: %s\n", path, inlay_last_error());
        exit(1);
    }
    return model;
}

static inline inlay_model* capi_load_default(void) { return capi_load_default_with(0, 0, 0); }

/* Greedy, no sampling randomness, `max_tokens` long. */
static inline inlay_generate_params capi_greedy(int32_t max_tokens, bool ignore_eos) {
    inlay_generate_params gp;
    inlay_generate_params_init(&gp);
    gp.temperature = 0.0f;
    gp.max_tokens = max_tokens;
    gp.ignore_eos = ignore_eos;
    return gp;
}

static inline size_t capi_n_tokens(const inlay_session* s) {
    size_t n = (size_t)-1;
    CHECK_STATUS(inlay_session_n_tokens(s, &n), INLAY_OK);
    return n;
}

static inline inlay_metrics capi_metrics(const inlay_model* model) {
    inlay_metrics m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    CHECK_STATUS(inlay_model_get_metrics(model, &m), INLAY_OK);
    return m;
}

/* Watchdog: if the test makes no progress for `seconds` (capi_watchdog_progress is not
 * called, and capi_watchdog_stop neither), the process prints what it was doing and exits
 * 1: a deadlock is a failure, not a hang until ctest's timeout. The limit is generous:
 * it bounds a hang, it does not time the test. */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int stopped;
    int seconds;
    unsigned long progress;
    const char* test;
    pthread_t thread;
} CapiWatchdog;

static inline CapiWatchdog* capi_watchdog(void) {
    static CapiWatchdog w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, NULL, 0};
    return &w;
}

static inline void* capi_watchdog_run(void* arg) {
    CapiWatchdog* w = capi_watchdog();
    struct timespec deadline;
    unsigned long seen;
    (void)arg;
    pthread_mutex_lock(&w->lock);
    seen = w->progress;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += w->seconds;
    while (!w->stopped) {
        const int timed_out = pthread_cond_timedwait(&w->cond, &w->lock, &deadline) != 0;
        if (w->progress != seen) { /* progress: a new deadline */
            seen = w->progress;
            clock_gettime(CLOCK_REALTIME, &deadline);
            deadline.tv_sec += w->seconds;
        } else if (timed_out && !w->stopped) {
            fprintf(stderr, "%s: no progress for %d s: deadlock (watchdog)\n", w->test, w->seconds);
            fflush(stderr);
            _exit(1);
        }
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

static inline void capi_watchdog_start(const char* test, int seconds) {
    CapiWatchdog* w = capi_watchdog();
    w->test = test;
    w->seconds = seconds;
    w->stopped = 0;
    if (pthread_create(&w->thread, NULL, capi_watchdog_run, NULL) != 0) {
        fprintf(stderr, "%s: cannot start the watchdog thread\n", test);
        exit(1);
    }
}

/* Called by a test when it completes a unit of work. */
static inline void capi_watchdog_progress(void) {
    CapiWatchdog* w = capi_watchdog();
    pthread_mutex_lock(&w->lock);
    ++w->progress;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

static inline void capi_watchdog_stop(void) {
    CapiWatchdog* w = capi_watchdog();
    pthread_mutex_lock(&w->lock);
    w->stopped = 1;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
}

/* A one-shot gate between threads: wait() blocks until open(). */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int open;
} CapiGate;

static inline void capi_gate_init(CapiGate* g) {
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->cond, NULL);
    g->open = 0;
}
static inline void capi_gate_open(CapiGate* g) {
    pthread_mutex_lock(&g->lock);
    g->open = 1;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);
}
static inline void capi_gate_wait(CapiGate* g) {
    pthread_mutex_lock(&g->lock);
    while (!g->open) pthread_cond_wait(&g->cond, &g->lock);
    pthread_mutex_unlock(&g->lock);
}
static inline void capi_gate_destroy(CapiGate* g) {
    pthread_mutex_destroy(&g->lock);
    pthread_cond_destroy(&g->cond);
}

#endif /* INLAY_TESTS_CAPI_DEFAULT_MODEL_H */
