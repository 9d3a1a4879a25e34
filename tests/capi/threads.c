/*
 * Two sessions on one model, generating at the same time from two pthreads, produce
 * exactly the tokens that the same two generations produce one after the other
 * (seeded sampling, so any cross-talk between sessions would change the tokens).
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>

#include "capi_test.h"

enum { N_GEN = 64, ROUNDS = 3 };

typedef struct {
    inlay_model* model;
    const char* prompt;
    uint64_t seed;
    pthread_barrier_t* start; /* NULL: run at once */
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
    gp.seed = job->seed;
    gp.temperature = 1.0f;
    gp.ignore_eos = true;
    if (job->start) pthread_barrier_wait(job->start);
    job->status = inlay_session_generate(session, job->prompt, &gp, &result);
    if (job->status == INLAY_OK) {
        tokens = inlay_result_tokens(result, &job->n_tokens);
        for (i = 0; i < job->n_tokens && i < N_GEN; ++i) job->tokens[i] = tokens[i];
    }
    inlay_result_free(result);
    inlay_session_free(session);
    return NULL;
}

static int same_tokens(const Job* a, const Job* b) {
    return a->n_tokens == b->n_tokens && memcmp(a->tokens, b->tokens, a->n_tokens * sizeof(int32_t)) == 0;
}

int main(void) {
    inlay_model* model = capi_load_stories(0);
    Job reference[2];
    Job parallel[2];
    pthread_barrier_t start;
    pthread_t threads[2];
    int round;
    int k;

    memset(reference, 0, sizeof reference);
    reference[0].model = reference[1].model = model;
    reference[0].prompt = "Once upon a time";
    reference[0].seed = 1234;
    reference[1].prompt = "The little dog";
    reference[1].seed = 98765;
    for (k = 0; k < 2; ++k) {
        run_job(&reference[k]);
        CHECK_STATUS(reference[k].status, INLAY_OK);
        CHECK(reference[k].n_tokens == N_GEN);
    }
    CHECK(!same_tokens(&reference[0], &reference[1])); /* the two jobs really differ */

    pthread_barrier_init(&start, NULL, 2);
    for (round = 0; round < ROUNDS; ++round) {
        for (k = 0; k < 2; ++k) {
            parallel[k] = reference[k];
            parallel[k].start = &start;
            parallel[k].n_tokens = 0;
            memset(parallel[k].tokens, 0, sizeof parallel[k].tokens);
            CHECK(pthread_create(&threads[k], NULL, run_job, &parallel[k]) == 0);
        }
        for (k = 0; k < 2; ++k) {
            pthread_join(threads[k], NULL);
            CHECK(parallel[k].status == INLAY_OK);
            CHECK(same_tokens(&parallel[k], &reference[k]));
        }
    }
    pthread_barrier_destroy(&start);
    inlay_model_free(model);
    return capi_finish("capi_threads");
}
