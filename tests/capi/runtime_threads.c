/*
 * 16 sessions on one model generating at once from 16 pthreads (greedy, different
 * prompts) each produce exactly what the same session produces alone; the engine batched
 * them (fewer forward passes than tokens, from the metrics); cancels from other threads
 * end calls with INLAY_ERR_CANCELLED; every KV block returns when the sessions are freed.
 *
 * Nothing here depends on how fast the threads run. The batched run goes through a gate
 * made of public calls: a holder call blocks in its first token callback, so the engine
 * samples it LOOKAHEAD tokens ahead and pauses it; inlay_model_set_kv_cap to exactly the
 * blocks it holds makes every other call wait for memory; once all 16 wait, the cap is
 * lifted and they enter the batch together. Each of the 16 callers holds its first token
 * too, so the metrics taken when all 16 are paused count a phase that only the engine's
 * own rules decide.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <time.h>

#include "capi_test.h"

/* LOOKAHEAD: tokens the engine samples ahead of a caller still busy in on_token
 * (Session::kLookahead in lib/runtime/session.h; the test checks that it holds). */
enum { N_SESSIONS = 16, N_GEN = 32, LOOKAHEAD = 8 };

/* A latch the test opens once. Waits give up after minutes (a deadlock then fails the
 * test instead of hanging it) and say whether the latch was opened. */
typedef struct {
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    int open;
} Latch;

static void latch_init(Latch* l) {
    pthread_mutex_init(&l->mutex, NULL);
    pthread_cond_init(&l->cond, NULL);
    l->open = 0;
}

static void latch_open(Latch* l) {
    pthread_mutex_lock(&l->mutex);
    l->open = 1;
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->mutex);
}

static bool latch_wait(Latch* l) {
    struct timespec until;
    int rc = 0;
    bool opened;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 300;
    pthread_mutex_lock(&l->mutex);
    while (!l->open && rc == 0) rc = pthread_cond_timedwait(&l->cond, &l->mutex, &until);
    opened = l->open != 0;
    pthread_mutex_unlock(&l->mutex);
    return opened;
}

static void latch_destroy(Latch* l) {
    pthread_cond_destroy(&l->cond);
    pthread_mutex_destroy(&l->mutex);
}

static inlay_metrics metrics_of(const inlay_model* model) {
    inlay_metrics m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    CHECK_STATUS(inlay_model_get_metrics(model, &m), INLAY_OK);
    return m;
}

/* Polls the metrics until `field` reaches `value` (a state, not a duration); exits after
 * minutes with a message naming what never happened. */
#define WAIT_FOR_METRIC(model, field, value, what)                                                        \
    do {                                                                                                  \
        struct timespec tick_ = {0, 1000000};                                                             \
        long waited_ = 0;                                                                                 \
        while (metrics_of(model).field < (value)) {                                                       \
            nanosleep(&tick_, NULL);                                                                      \
            if (++waited_ > 300000) {                                                                     \
                fprintf(stderr, "%s:%d: deadlock: never reached: %s\n", __FILE__, __LINE__, what);        \
                exit(1);                                                                                  \
            }                                                                                             \
        }                                                                                                 \
    } while (0)

static const char* const kPrompts[N_SESSIONS] = {
    "Once upon a time", "The little dog", "A girl named Lily", "One day, a big", "The sun was",
    "Tom and Sam went", "There was a cat", "In the park,", "Mom said", "The bird", "A small boat",
    "Ben liked to", "The tree was tall", "Sue had a red", "It was a rainy day", "The king"};

typedef struct {
    inlay_model* model;
    int index;
    Latch* go;          /* NULL: run freely; else hold the first token until it opens */
    int first_taken;
    inlay_status status;
    int32_t tokens[N_GEN];
    size_t n_tokens;
    size_t n_prompt;
} Job;

static bool hold_first_token(int32_t token, const char* piece, size_t len, void* user) {
    Job* job = (Job*)user;
    (void)token;
    (void)piece;
    (void)len;
    if (job->first_taken) return true;
    job->first_taken = 1;
    return latch_wait(job->go);
}

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
    if (job->go) {
        gp.on_token = hold_first_token;
        gp.user = job;
    }
    job->status = inlay_session_generate(session, kPrompts[job->index], &gp, &result);
    if (job->status == INLAY_OK) {
        tokens = inlay_result_tokens(result, &job->n_tokens);
        for (i = 0; i < job->n_tokens && i < N_GEN; ++i) job->tokens[i] = tokens[i];
        (void)inlay_result_prompt_tokens(result, &job->n_prompt);
    }
    inlay_result_free(result);
    inlay_session_free(session);
    return NULL;
}

/* The gate's holder: one call that blocks in its first callback until released. */
typedef struct {
    inlay_model* model;
    Latch release;
    inlay_status status;
} Holder;

static bool hold_until_released(int32_t token, const char* piece, size_t len, void* user) {
    Holder* h = (Holder*)user;
    (void)token;
    (void)piece;
    (void)len;
    (void)latch_wait(&h->release);
    return false;
}

static void* run_holder(void* arg) {
    Holder* h = (Holder*)arg;
    inlay_session* session = NULL;
    inlay_result* result = NULL;
    inlay_generate_params gp;
    h->status = inlay_session_create(h->model, NULL, &session);
    if (h->status != INLAY_OK) return NULL;
    inlay_generate_params_init(&gp);
    gp.max_tokens = 200;
    gp.temperature = 0.0f;
    gp.ignore_eos = true;
    gp.on_token = hold_until_released;
    gp.user = h;
    h->status = inlay_session_generate(session, "Zebras", &gp, &result);
    inlay_result_free(result);
    inlay_session_free(session);
    return NULL;
}

/* Cancels a long generation from another thread: at the 5th token the callback hands
 * over to the canceller and waits until the cancel has been made. */
typedef struct {
    inlay_session* session;
    int seen;
    Latch at_fifth;
    Latch cancelled;
} CancelJob;

static bool count_token(int32_t token, const char* piece, size_t len, void* user) {
    CancelJob* job = (CancelJob*)user;
    (void)token;
    (void)piece;
    (void)len;
    if (++job->seen == 5) {
        latch_open(&job->at_fifth);
        CHECK(latch_wait(&job->cancelled));
    }
    return true;
}

static void* cancel_at_fifth(void* arg) {
    CancelJob* job = (CancelJob*)arg;
    if (latch_wait(&job->at_fifth)) CHECK_STATUS(inlay_session_cancel(job->session), INLAY_OK);
    latch_open(&job->cancelled);
    return NULL;
}

int main(void) {
    inlay_model* model = capi_load_stories(0);
    Job alone[N_SESSIONS];
    Job together[N_SESSIONS];
    pthread_t threads[N_SESSIONS];
    pthread_t holder_thread;
    Holder holder;
    Latch go;
    inlay_metrics m0, m1, gate_open, paused;
    int k;
    int64_t generated = 0, prompt_tokens = 0, phase_steps, bound;

    for (k = 0; k < N_SESSIONS; ++k) {
        memset(&alone[k], 0, sizeof alone[k]);
        alone[k].model = model;
        alone[k].index = k;
        run_job(&alone[k]);
        CHECK_STATUS(alone[k].status, INLAY_OK);
        CHECK(alone[k].n_tokens == N_GEN);
    }
    m0 = metrics_of(model);

    /* Close the gate: the holder paused at 1 + LOOKAHEAD tokens, the cap at its blocks. */
    memset(&holder, 0, sizeof holder);
    holder.model = model;
    latch_init(&holder.release);
    CHECK(pthread_create(&holder_thread, NULL, run_holder, &holder) == 0);
    WAIT_FOR_METRIC(model, tokens_generated, m0.tokens_generated + 1 + LOOKAHEAD, "the holder paused");
    m1 = metrics_of(model);
    CHECK(m1.tokens_generated == m0.tokens_generated + 1 + LOOKAHEAD);
    CHECK(m1.sequences_running == 1);
    CHECK_STATUS(inlay_model_set_kv_cap(model, m1.blocks_held), INLAY_OK);

    latch_init(&go);
    for (k = 0; k < N_SESSIONS; ++k) {
        together[k] = alone[k];
        together[k].go = &go;
        together[k].n_tokens = 0;
        memset(together[k].tokens, 0, sizeof together[k].tokens);
        CHECK(pthread_create(&threads[k], NULL, run_job, &together[k]) == 0);
    }
    WAIT_FOR_METRIC(model, sequences_waiting, N_SESSIONS, "every call queued at the gate");
    gate_open = metrics_of(model);
    CHECK_STATUS(inlay_model_set_kv_cap(model, 0), INLAY_OK);
    WAIT_FOR_METRIC(model, tokens_generated, gate_open.tokens_generated + N_SESSIONS * (1 + LOOKAHEAD),
                    "every call paused by its lookahead");
    paused = metrics_of(model);
    latch_open(&go);
    latch_open(&holder.release);
    for (k = 0; k < N_SESSIONS; ++k) {
        pthread_join(threads[k], NULL);
        CHECK_STATUS(together[k].status, INLAY_OK);
        CHECK(together[k].n_tokens == alone[k].n_tokens &&
              memcmp(together[k].tokens, alone[k].tokens, alone[k].n_tokens * sizeof(int32_t)) == 0);
        generated += (int64_t)together[k].n_tokens;
        prompt_tokens += (int64_t)together[k].n_prompt;
    }
    pthread_join(holder_thread, NULL);
    CHECK_STATUS(holder.status, INLAY_OK);
    latch_destroy(&go);
    latch_destroy(&holder.release);
    m1 = metrics_of(model);
    CHECK(m1.tokens_generated - m0.tokens_generated == generated + 1 + LOOKAHEAD);
    /* The phase from the gate's opening until all 16 were paused: each call prefilled its
     * prompt and sampled 1 + LOOKAHEAD tokens, all in one batch. Steps that fill the
     * 512-token budget take 512 tokens of that work; after the first that does not, every
     * prompt is done and each step advances every call not waiting for its caller: at
     * most LOOKAHEAD such steps, plus one per caller late to take its first token. One
     * call per forward pass would need 1 + LOOKAHEAD passes per call. */
    phase_steps = paused.steps - gate_open.steps;
    bound = (prompt_tokens + N_SESSIONS * LOOKAHEAD) / 512 + 1 + LOOKAHEAD + N_SESSIONS;
    printf("16 sessions: %lld tokens in %lld forward passes; gated phase %lld tokens in %lld passes (bound %lld)\n",
           (long long)generated, (long long)(m1.steps - m0.steps), (long long)(paused.tokens_generated - gate_open.tokens_generated),
           (long long)phase_steps, (long long)bound);
    CHECK(paused.tokens_generated - gate_open.tokens_generated == N_SESSIONS * (1 + LOOKAHEAD));
    CHECK(phase_steps <= bound);
    CHECK(bound < N_SESSIONS * (1 + LOOKAHEAD) / 2);
    CHECK(m1.sessions == 0 && m1.blocks_held == 0);
    CHECK(m1.blocks_free == m1.blocks_total);
    CHECK(m1.sequences_running == 0 && m1.sequences_waiting == 0);
    CHECK(m1.block_cap == 0);

    {
        /* cancel from another thread */
        CancelJob cj;
        inlay_generate_params gp;
        inlay_result* r = NULL;
        pthread_t t;
        size_t n = 0;
        memset(&cj, 0, sizeof cj);
        latch_init(&cj.at_fifth);
        latch_init(&cj.cancelled);
        CHECK_STATUS(inlay_session_create(model, NULL, &cj.session), INLAY_OK);
        inlay_generate_params_init(&gp);
        gp.max_tokens = 400;
        gp.temperature = 0.0f;
        gp.ignore_eos = true;
        gp.on_token = count_token;
        gp.user = &cj;
        CHECK(pthread_create(&t, NULL, cancel_at_fifth, &cj) == 0);
        CHECK_STATUS(inlay_session_generate(cj.session, "Once upon a time", &gp, &r), INLAY_ERR_CANCELLED);
        pthread_join(t, NULL);
        CHECK(r != NULL);
        (void)inlay_result_tokens(r, &n);
        CHECK(n == 5);
        CHECK(cj.seen == 5);
        CHECK(inlay_result_stop_reason(r) == INLAY_STOP_CANCELLED);
        inlay_result_free(r);
        inlay_session_free(cj.session);
        latch_destroy(&cj.at_fifth);
        latch_destroy(&cj.cancelled);
    }
    m1 = metrics_of(model);
    CHECK(m1.blocks_held == 0 && m1.blocks_free == m1.blocks_total);

    inlay_model_free(model);
    return capi_finish("capi_runtime_threads");
}
