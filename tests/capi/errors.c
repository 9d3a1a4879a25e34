/*
 * Results and errors:
 * - out_result may be NULL: generate, generate_tokens and chat still run and advance the
 *   session; cancelled and KV_FULL calls (which have a result) free it themselves (the
 *   ASan stage's leak check would see it otherwise).
 * - inlay_last_error is per thread: a failure on one thread never changes another's
 *   message; a thread that never failed reads ""; a successful call leaves the message
 *   of the last failure. 8 threads fail concurrently with messages of their own and each
 *   reads back exactly its own, every time.
 */
#define _POSIX_C_SOURCE 200809L
#include "capi_default_model.h"

enum { N_THREADS = 8, ROUNDS = 200 };

static bool cancel_at_2(int32_t token, const char* piece, size_t len, void* user) {
    static int calls;
    (void)token;
    (void)piece;
    (void)len;
    if (++calls % 2 == 0) inlay_session_cancel((inlay_session*)user);
    return true;
}

typedef struct {
    inlay_model* model;
    int index;
    pthread_barrier_t* start;
    int initially_empty;
    int wrong; /* rounds where the message was not this thread's */
} Job;

static void* fail_repeatedly(void* arg) {
    Job* job = (Job*)arg;
    char expected[64];
    int32_t out[4];
    size_t n = 0;
    int round;
    const int32_t bad_token = 100000 + job->index; /* detokenize: "token id 1000NN" */
    job->initially_empty = inlay_last_error()[0] == '\0';
    snprintf(expected, sizeof expected, "%d", bad_token);
    pthread_barrier_wait(job->start);
    for (round = 0; round < ROUNDS; ++round) {
        if (inlay_detokenize(job->model, &bad_token, 1, false, (char*)out, sizeof out, &n) == INLAY_OK) ++job->wrong;
        if (!strstr(inlay_last_error(), expected)) ++job->wrong;
        /* a success in between keeps the message */
        if (inlay_tokenize(job->model, "hi", 2, 0, out, 4, &n) != INLAY_OK) ++job->wrong;
        if (!strstr(inlay_last_error(), expected)) ++job->wrong;
    }
    return NULL;
}

int main(void) {
    inlay_model* model = capi_load_default();
    inlay_session* s = NULL;
    inlay_generate_params gp = capi_greedy(4, true);
    size_t before;

    /* NULL out_result */
    CHECK_STATUS(inlay_session_create(model, NULL, &s), INLAY_OK);
    CHECK_STATUS(inlay_session_generate(s, "You will", &gp, NULL), INLAY_OK);
    before = capi_n_tokens(s);
    CHECK(before >= 5);
    {
        const int32_t more[2] = {100, 200};
        inlay_chat_params cp;
        inlay_chat_message m = {"user", "hello"};
        CHECK_STATUS(inlay_session_generate_tokens(s, more, 2, &gp, NULL), INLAY_OK);
        CHECK(capi_n_tokens(s) == before + 2 + 4);
        inlay_chat_params_init(&cp);
        cp.chat_template = "{% for m in messages %}{{ m.content }}{% endfor %}";
        CHECK_STATUS(inlay_session_reset(s), INLAY_OK);
        CHECK_STATUS(inlay_session_chat(s, &m, 1, &cp, &gp, NULL), INLAY_OK);
        CHECK(capi_n_tokens(s) > 4);
    }
    {
        inlay_generate_params cancelling = capi_greedy(50, true);
        cancelling.on_token = cancel_at_2;
        cancelling.user = s;
        CHECK_STATUS(inlay_session_generate(s, " more", &cancelling, NULL), INLAY_ERR_CANCELLED);
    }
    {
        inlay_generate_params gp40 = capi_greedy(40, true);
        CHECK_STATUS(inlay_session_reset(s), INLAY_OK);
        CHECK_STATUS(inlay_model_set_kv_cap(model, 1), INLAY_OK);
        CHECK_STATUS(inlay_session_generate(s, "You will", &gp40, NULL), INLAY_ERR_KV_FULL);
        CHECK_STATUS(inlay_model_set_kv_cap(model, 0), INLAY_OK);
    }
    inlay_session_free(s);

    /* last_error per thread */
    {
        Job jobs[N_THREADS];
        pthread_t threads[N_THREADS];
        pthread_barrier_t start;
        char mine[256];
        int k;
        CHECK_STATUS(inlay_session_create(NULL, NULL, &s), INLAY_ERR_INVALID_ARGUMENT);
        snprintf(mine, sizeof mine, "%s", inlay_last_error());
        CHECK(strstr(mine, "model is NULL") != NULL);
        pthread_barrier_init(&start, NULL, N_THREADS);
        for (k = 0; k < N_THREADS; ++k) {
            memset(&jobs[k], 0, sizeof jobs[k]);
            jobs[k].model = model;
            jobs[k].index = k;
            jobs[k].start = &start;
            CHECK(pthread_create(&threads[k], NULL, fail_repeatedly, &jobs[k]) == 0);
        }
        for (k = 0; k < N_THREADS; ++k) {
            pthread_join(threads[k], NULL);
            CHECK(jobs[k].initially_empty);
            CHECK(jobs[k].wrong == 0);
        }
        pthread_barrier_destroy(&start);
        CHECK(strcmp(inlay_last_error(), mine) == 0); /* this thread's message is untouched */
    }

    inlay_model_free(model);
    return capi_finish("capi_errors");
}
