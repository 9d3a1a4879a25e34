/*
 * Cancellation and callbacks during generation:
 * - inlay_session_cancel from another thread stops a 10000-token generation with
 *   INLAY_ERR_CANCELLED, and at most one token is produced after cancel returns;
 * - while it runs, another generate on the same session returns INLAY_ERR_BUSY;
 * - a cancel made while no call runs is ignored;
 * - on_token returning false ends generation with INLAY_STOP_CALLBACK.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <time.h>

#include "capi_test.h"

typedef struct {
    pthread_mutex_t lock;
    size_t count; /* tokens seen by on_token */
} Counter;

static bool count_token(int32_t token, const char* piece, size_t len, void* user) {
    Counter* c = (Counter*)user;
    (void)token;
    (void)piece;
    (void)len;
    pthread_mutex_lock(&c->lock);
    c->count++;
    pthread_mutex_unlock(&c->lock);
    return true;
}

static size_t read_count(Counter* c) {
    size_t n;
    pthread_mutex_lock(&c->lock);
    n = c->count;
    pthread_mutex_unlock(&c->lock);
    return n;
}

typedef struct {
    inlay_session* session;
    Counter* counter;
    inlay_status busy_status;
    inlay_status busy_tokens_status;
    inlay_status cancel_status;
    size_t count_after_cancel;
    int timed_out;
} Canceller;

static void sleep_ms(long ms) {
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    nanosleep(&ts, NULL);
}

static void* cancel_soon(void* arg) {
    Canceller* c = (Canceller*)arg;
    inlay_result* result = NULL;
    inlay_generate_params gp;
    const int32_t token = 403;
    int waited = 0;
    /* Wait until generation is under way (at most 60 s). */
    while (read_count(c->counter) < 10) {
        if (++waited > 60000) {
            c->timed_out = 1;
            break;
        }
        sleep_ms(1);
    }
    inlay_generate_params_init(&gp);
    gp.max_tokens = 1;
    c->busy_tokens_status = inlay_session_generate_tokens(c->session, &token, 1, &gp, &result);
    inlay_result_free(result);
    result = NULL;
    c->busy_status = inlay_session_generate(c->session, "x", &gp, &result);
    inlay_result_free(result);
    c->cancel_status = inlay_session_cancel(c->session);
    c->count_after_cancel = read_count(c->counter);
    return NULL;
}

static bool stop_after_three(int32_t token, const char* piece, size_t len, void* user) {
    size_t* n = (size_t*)user;
    (void)token;
    (void)piece;
    (void)len;
    return ++*n < 3;
}

int main(void) {
    /* Room for 10000 tokens, so that only the cancel can end the run early. */
    inlay_model* model = capi_load_stories(10240);
    inlay_session* session = NULL;
    inlay_generate_params gp;
    inlay_result* result = NULL;
    Counter counter;
    Canceller canceller;
    pthread_t thread;
    inlay_status status;
    size_t n = 0;
    size_t calls = 0;

    CHECK_STATUS(inlay_session_create(model, NULL, &session), INLAY_OK);
    if (!session) return capi_finish("capi_cancel");
    pthread_mutex_init(&counter.lock, NULL);
    counter.count = 0;
    memset(&canceller, 0, sizeof canceller);
    canceller.session = session;
    canceller.counter = &counter;

    inlay_generate_params_init(&gp);
    gp.max_tokens = 10000;
    gp.ignore_eos = true;
    gp.seed = 7;
    gp.on_token = count_token;
    gp.user = &counter;
    CHECK(pthread_create(&thread, NULL, cancel_soon, &canceller) == 0);
    status = inlay_session_generate(session, "Once upon a time", &gp, &result);
    pthread_join(thread, NULL);

    CHECK(!canceller.timed_out);
    CHECK_STATUS(status, INLAY_ERR_CANCELLED);
    CHECK(canceller.busy_tokens_status == INLAY_ERR_BUSY);
    CHECK(canceller.busy_status == INLAY_ERR_BUSY);
    CHECK(canceller.cancel_status == INLAY_OK);
    CHECK(counter.count >= 10);
    CHECK(counter.count <= canceller.count_after_cancel + 1);
    CHECK(counter.count < 10000);
    CHECK(result != NULL);
    if (result) {
        inlay_result_tokens(result, &n);
        CHECK(n == counter.count);
        CHECK(inlay_result_stop_reason(result) == INLAY_STOP_CANCELLED);
    }
    printf("cancelled after %zu tokens (%zu counted when cancel returned)\n", counter.count,
           canceller.count_after_cancel);
    inlay_result_free(result);
    result = NULL;

    /* A cancel while idle does not affect the next call. */
    CHECK_STATUS(inlay_session_cancel(session), INLAY_OK);
    inlay_generate_params_init(&gp);
    gp.max_tokens = 5;
    gp.ignore_eos = true;
    gp.seed = 7;
    CHECK_STATUS(inlay_session_generate(session, " The end.", &gp, &result), INLAY_OK);
    inlay_result_tokens(result, &n);
    CHECK(n == 5);
    CHECK(inlay_result_stop_reason(result) == INLAY_STOP_MAX_TOKENS);
    inlay_result_free(result);
    result = NULL;

    /* on_token returning false */
    gp.max_tokens = 50;
    gp.on_token = stop_after_three;
    gp.user = &calls;
    CHECK_STATUS(inlay_session_generate(session, " Then", &gp, &result), INLAY_OK);
    inlay_result_tokens(result, &n);
    CHECK(calls == 3);
    CHECK(n == 3);
    CHECK(inlay_result_stop_reason(result) == INLAY_STOP_CALLBACK);
    inlay_result_free(result);

    inlay_session_free(session);
    pthread_mutex_destroy(&counter.lock);
    inlay_model_free(model);
    return capi_finish("capi_cancel");
}
