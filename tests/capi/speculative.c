/*
 * Speculative decoding through the C ABI: stories15M (F16) drafted by its own Q8_0 copy
 * and by prompt lookup gives exactly the greedy tokens of a plain session, also with the
 * three kinds of session generating at once from three threads; the per-call timings,
 * the session's stats and the model's metrics count the proposals; the draft handle may be
 * freed before the sessions that use it; bad parameters and a draft of another vocabulary
 * are refused with INLAY_ERR_INVALID_ARGUMENT.
 */
#include <pthread.h>

#include "capi_test.h"

#define N_TOKENS 48

static const char* kPrompt = "Once upon a time, there was a little girl named Lily. She liked to play with her";

static inlay_model* load(const char* relative) {
    char path[4096];
    inlay_model_params mp;
    inlay_model* model = NULL;
    capi_testdata(path, sizeof path, relative);
    inlay_model_params_init(&mp);
    mp.n_threads = 1;
    if (inlay_model_load(path, &mp, &model) != INLAY_OK) {
        fprintf(stderr, "loading %s failed: %s\n", path, inlay_last_error());
        exit(1);
    }
    return model;
}

typedef struct {
    inlay_session* session;
    int32_t tokens[N_TOKENS];
    size_t n;
    inlay_timings timings;
    inlay_status status;
} Job;

static void* generate(void* arg) {
    Job* job = (Job*)arg;
    inlay_generate_params gp;
    inlay_result* result = NULL;
    const int32_t* tokens;
    size_t i;
    inlay_generate_params_init(&gp);
    gp.temperature = 0.0f;
    gp.max_tokens = N_TOKENS;
    gp.ignore_eos = true;
    job->status = inlay_session_generate(job->session, kPrompt, &gp, &result);
    if (job->status != INLAY_OK) return NULL;
    tokens = inlay_result_tokens(result, &job->n);
    for (i = 0; i < job->n && i < N_TOKENS; ++i) job->tokens[i] = tokens[i];
    memset(&job->timings, 0, sizeof job->timings);
    job->timings.struct_size = sizeof job->timings;
    job->status = inlay_result_timings(result, &job->timings);
    inlay_result_free(result);
    return NULL;
}

/* Speculation with 4 proposals in every step, whatever the engine measures passes to cost
 * (with the adaptive default it may rightly propose nothing on a slow or busy machine). */
static inlay_session* session_with(inlay_model* model, int32_t speculation, inlay_model* draft) {
    inlay_session_params sp;
    inlay_session* session = NULL;
    inlay_session_params_init(&sp);
    sp.speculation = speculation;
    sp.draft_model = draft;
    sp.n_draft = 4;
    sp.n_draft_min = speculation == INLAY_SPECULATION_NONE ? 0 : 4;
    sp.p_min = 0.0f;
    CHECK_STATUS(inlay_session_create(model, &sp, &session), INLAY_OK);
    return session;
}

int main(void) {
    inlay_model* target = load("models/stories15M-f16.gguf");
    inlay_model* draft = load("models/stories15M-q8_0.gguf");
    inlay_model* other = load("models/stories260K.gguf");
    inlay_session_params sp;
    inlay_session* bad = NULL;
    inlay_speculation_stats stats;
    inlay_metrics metrics;
    Job jobs[3];
    pthread_t threads[3];
    int round, i;

    /* Defaults: no speculation, n_draft 8, p_min 0.5. */
    inlay_session_params_init(&sp);
    CHECK(sp.speculation == INLAY_SPECULATION_NONE && sp.draft_model == NULL);
    CHECK(sp.n_draft == 8 && sp.n_draft_min == 0 && sp.p_min == 0.5f);

    memset(jobs, 0, sizeof jobs);
    jobs[0].session = session_with(target, INLAY_SPECULATION_NONE, NULL);
    jobs[1].session = session_with(target, INLAY_SPECULATION_DRAFT_MODEL, draft);
    jobs[2].session = session_with(target, INLAY_SPECULATION_PROMPT_LOOKUP, NULL);
    /* The sessions keep the draft's weights: the host may let go of its handle. */
    inlay_model_free(draft);

    /* Round 0: one after the other; round 1: all at once (one batch), after a reset. */
    for (round = 0; round < 2; ++round) {
        int32_t plain[N_TOKENS];
        for (i = 0; i < 3; ++i) CHECK_STATUS(inlay_session_reset(jobs[i].session), INLAY_OK);
        if (round == 0) {
            for (i = 0; i < 3; ++i) generate(&jobs[i]);
        } else {
            for (i = 0; i < 3; ++i) CHECK(pthread_create(&threads[i], NULL, generate, &jobs[i]) == 0);
            for (i = 0; i < 3; ++i) pthread_join(threads[i], NULL);
        }
        memcpy(plain, jobs[0].tokens, sizeof plain);
        for (i = 0; i < 3; ++i) {
            CHECK_STATUS(jobs[i].status, INLAY_OK);
            CHECK(jobs[i].n == N_TOKENS);
            CHECK(memcmp(jobs[i].tokens, plain, sizeof plain) == 0);
        }
        CHECK(jobs[0].timings.draft_tokens_proposed == 0);
        CHECK(jobs[1].timings.draft_tokens_proposed > 0);
        CHECK(jobs[1].timings.draft_tokens_accepted > 0);
        CHECK(jobs[1].timings.draft_tokens_accepted <= jobs[1].timings.draft_tokens_proposed);
        if (round == 0)
            printf("draft model: %lld of %lld proposals kept; prompt lookup: %lld of %lld\n",
                   (long long)jobs[1].timings.draft_tokens_accepted, (long long)jobs[1].timings.draft_tokens_proposed,
                   (long long)jobs[2].timings.draft_tokens_accepted, (long long)jobs[2].timings.draft_tokens_proposed);
    }

    memset(&stats, 0, sizeof stats);
    stats.struct_size = sizeof stats;
    CHECK_STATUS(inlay_session_get_speculation_stats(jobs[1].session, &stats), INLAY_OK);
    CHECK(stats.tokens_proposed > 0 && stats.rounds > 0);
    CHECK(stats.tokens_accepted <= stats.tokens_proposed);
    CHECK(stats.acceptance_rate > 0.0 && stats.acceptance_rate <= 1.0);
    memset(&metrics, 0, sizeof metrics);
    metrics.struct_size = sizeof metrics;
    CHECK_STATUS(inlay_model_get_metrics(target, &metrics), INLAY_OK);
    CHECK(metrics.draft_tokens_proposed >= stats.tokens_proposed);
    CHECK(metrics.draft_passes > 0 && metrics.draft_seconds > 0.0);
    CHECK(metrics.draft_acceptance_rate > 0.0 && metrics.draft_acceptance_rate <= 1.0);
    CHECK_STATUS(inlay_session_get_speculation_stats(NULL, &stats), INLAY_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(inlay_session_get_speculation_stats(jobs[0].session, NULL), INLAY_ERR_INVALID_ARGUMENT);

    /* Refused: a draft of another vocabulary, no draft, an unknown mode, bad sizes. */
    inlay_session_params_init(&sp);
    sp.speculation = INLAY_SPECULATION_DRAFT_MODEL;
    sp.draft_model = other;
    CHECK_STATUS(inlay_session_create(target, &sp, &bad), INLAY_ERR_INVALID_ARGUMENT);
    CHECK(strstr(inlay_last_error(), "512") != NULL && strstr(inlay_last_error(), "32000") != NULL);
    CHECK(bad == NULL);
    sp.draft_model = NULL;
    CHECK_STATUS(inlay_session_create(target, &sp, &bad), INLAY_ERR_INVALID_ARGUMENT);
    sp.speculation = 7;
    CHECK_STATUS(inlay_session_create(target, &sp, &bad), INLAY_ERR_INVALID_ARGUMENT);
    sp.speculation = INLAY_SPECULATION_PROMPT_LOOKUP;
    sp.n_draft = 0;
    CHECK_STATUS(inlay_session_create(target, &sp, &bad), INLAY_ERR_INVALID_ARGUMENT);
    sp.n_draft = 65;
    CHECK_STATUS(inlay_session_create(target, &sp, &bad), INLAY_ERR_INVALID_ARGUMENT);
    sp.n_draft = 4;
    sp.n_draft_min = 5;
    CHECK_STATUS(inlay_session_create(target, &sp, &bad), INLAY_ERR_INVALID_ARGUMENT);
    sp.n_draft_min = 0;
    sp.p_min = 1.5f;
    CHECK_STATUS(inlay_session_create(target, &sp, &bad), INLAY_ERR_INVALID_ARGUMENT);
    CHECK(bad == NULL);

    for (i = 0; i < 3; ++i) inlay_session_free(jobs[i].session);
    inlay_model_free(other);
    inlay_model_free(target);
    return capi_finish("speculative");
}
