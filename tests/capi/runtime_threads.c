/*
 * 16 sessions on one model generating at once from 16 pthreads (greedy, different
 * prompts) each produce exactly what the same session produces alone; the engine batched
 * them (fewer forward passes than tokens, from the metrics); cancels from other threads
 * end calls with INLAY_ERR_CANCELLED; every KV block returns when the sessions are freed.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <time.h>

#include "capi_test.h"

enum { N_SESSIONS = 16, N_GEN = 32 };

static const char* const kPrompts[N_SESSIONS] = {
    "Once upon a time", "The little dog", "A girl named Lily", "One day, a big", "The sun was",
    "Tom and Sam went", "There was a cat", "In the park,", "Mom said", "The bird", "A small boat",
    "Ben liked to", "The tree was tall", "Sue had a red", "It was a rainy day", "The king"};

typedef struct {
    inlay_model* model;
    int index;
    pthread_barrier_t* start;
    inlay_status status;
    int32_t tokens[N_GEN];
    size_t n_tokens;
} Job;

static void* run_job(void* arg) {
    Job* job = (Job*)arg;
    inlay_session* session = NULL;
    inlay_result* result = NULL;
    inlay_generate_params gp;
    const int32_t* tokens;
    size_t i;

    job->n_tokens = 0;
    job->status = inlay_session_create(job->model, NULL, &session);
    if (job->status != INLAY_OK) return NULL;
    inlay_generate_params_init(&gp);
    gp.max_tokens = N_GEN;
    gp.temperature = 0.0f;
    gp.ignore_eos = true;
    if (job->start) pthread_barrier_wait(job->start);
    job->status = inlay_session_generate(session, kPrompts[job->index], &gp, &result);
    if (job->status == INLAY_OK) {
        tokens = inlay_result_tokens(result, &job->n_tokens);
        for (i = 0; i < job->n_tokens && i < N_GEN; ++i) job->tokens[i] = tokens[i];
    }
    inlay_result_free(result);
    inlay_session_free(session);
    return NULL;
}

/* Cancels a long generation from another thread. */
typedef struct {
    inlay_session* session;
    volatile int started;
} CancelJob;

static bool count_token(int32_t token, const char* piece, size_t len, void* user) {
    CancelJob* job = (CancelJob*)user;
    struct timespec ts = {0, 2000000};
    (void)token;
    (void)piece;
    (void)len;
    __atomic_store_n(&job->started, 1, __ATOMIC_RELEASE);
    nanosleep(&ts, NULL);
    return true;
}

static void* cancel_later(void* arg) {
    CancelJob* job = (CancelJob*)arg;
    struct timespec ts = {0, 1000000};
    while (!__atomic_load_n(&job->started, __ATOMIC_ACQUIRE)) nanosleep(&ts, NULL);
    nanosleep(&ts, NULL);
    inlay_session_cancel(job->session);
    return NULL;
}

int main(void) {
    inlay_model* model = capi_load_stories(0);
    Job alone[N_SESSIONS];
    Job together[N_SESSIONS];
    pthread_t threads[N_SESSIONS];
    pthread_barrier_t start;
    inlay_metrics m0, m1;
    int k;
    int64_t generated = 0;

    memset(&m0, 0, sizeof m0);
    m0.struct_size = sizeof m0;
    m1 = m0;
    for (k = 0; k < N_SESSIONS; ++k) {
        memset(&alone[k], 0, sizeof alone[k]);
        alone[k].model = model;
        alone[k].index = k;
        run_job(&alone[k]);
        CHECK_STATUS(alone[k].status, INLAY_OK);
        CHECK(alone[k].n_tokens == N_GEN);
    }
    CHECK_STATUS(inlay_model_get_metrics(model, &m0), INLAY_OK);

    pthread_barrier_init(&start, NULL, N_SESSIONS);
    for (k = 0; k < N_SESSIONS; ++k) {
        together[k] = alone[k];
        together[k].start = &start;
        together[k].n_tokens = 0;
        memset(together[k].tokens, 0, sizeof together[k].tokens);
        CHECK(pthread_create(&threads[k], NULL, run_job, &together[k]) == 0);
    }
    for (k = 0; k < N_SESSIONS; ++k) {
        pthread_join(threads[k], NULL);
        CHECK_STATUS(together[k].status, INLAY_OK);
        CHECK(together[k].n_tokens == alone[k].n_tokens &&
              memcmp(together[k].tokens, alone[k].tokens, alone[k].n_tokens * sizeof(int32_t)) == 0);
        generated += (int64_t)together[k].n_tokens;
    }
    pthread_barrier_destroy(&start);
    CHECK_STATUS(inlay_model_get_metrics(model, &m1), INLAY_OK);
    CHECK(m1.tokens_generated - m0.tokens_generated == generated);
    printf("16 sessions: %lld tokens in %lld forward passes\n", (long long)generated, (long long)(m1.steps - m0.steps));
    CHECK(m1.steps - m0.steps < generated / 2);
    CHECK(m1.sessions == 0 && m1.blocks_held == 0);
    CHECK(m1.blocks_free == m1.blocks_total);
    CHECK(m1.sequences_running == 0 && m1.sequences_waiting == 0);

    {
        /* cancel from another thread */
        CancelJob cj;
        inlay_generate_params gp;
        inlay_result* r = NULL;
        pthread_t t;
        size_t n = 0;
        memset(&cj, 0, sizeof cj);
        CHECK_STATUS(inlay_session_create(model, NULL, &cj.session), INLAY_OK);
        inlay_generate_params_init(&gp);
        gp.max_tokens = 400;
        gp.temperature = 0.0f;
        gp.ignore_eos = true;
        gp.on_token = count_token;
        gp.user = &cj;
        CHECK(pthread_create(&t, NULL, cancel_later, &cj) == 0);
        CHECK_STATUS(inlay_session_generate(cj.session, "Once upon a time", &gp, &r), INLAY_ERR_CANCELLED);
        pthread_join(t, NULL);
        CHECK(r != NULL);
        (void)inlay_result_tokens(r, &n);
        CHECK(n > 0 && n < 400);
        CHECK(inlay_result_stop_reason(r) == INLAY_STOP_CANCELLED);
        inlay_result_free(r);
        inlay_session_free(cj.session);
    }
    CHECK_STATUS(inlay_model_get_metrics(model, &m1), INLAY_OK);
    CHECK(m1.blocks_held == 0 && m1.blocks_free == m1.blocks_total);

    inlay_model_free(model);
    return capi_finish("capi_runtime_threads");
}
