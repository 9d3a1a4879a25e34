/*
 * KV limits while calls run, on the default model (16-token blocks):
 * - inlay_model_set_kv_cap below what two running calls hold preempts the younger one;
 *   both calls then finish with exactly their lone outputs (the preempted one recomputes).
 *   The calls are held inside their callbacks by gates, so both are certainly running
 *   when the cap drops; the test waits for the preemption to show in the metrics (a
 *   watchdog bounds the wait), never for a time.
 * - A cap too small for the only running call fails it with INLAY_ERR_KV_FULL, with a
 *   result; lifting the cap makes the same call work again.
 * - inlay_session_restore hits INLAY_ERR_KV_FULL when the saved KV cannot be had, and the
 *   session keeps its conversation (it continues like a fresh session given it).
 */
#define _POSIX_C_SOURCE 200809L
#include "capi_default_model.h"

enum { PROMPT = 40, GEN = 20 };

static void make_prompt(int32_t* out, int32_t first) {
    int i;
    out[0] = 1; /* BOS */
    for (i = 1; i < PROMPT; ++i) out[i] = first + i;
}

static size_t run(inlay_session* s, const int32_t* prompt, size_t n_prompt, inlay_generate_params* gp, int32_t* out,
                  inlay_status expected) {
    inlay_result* r = NULL;
    const int32_t* t;
    size_t n = 0;
    CHECK_STATUS(inlay_session_generate_tokens(s, prompt, n_prompt, gp, &r), expected);
    if (!r) return 0;
    t = inlay_result_tokens(r, &n);
    if (out) memcpy(out, t, n * sizeof(int32_t));
    inlay_result_free(r);
    return n;
}

static size_t lone(inlay_model* model, const int32_t* prompt, int32_t* out) {
    inlay_session* s = NULL;
    inlay_generate_params gp = capi_greedy(GEN, true);
    size_t n;
    CHECK_STATUS(inlay_session_create(model, NULL, &s), INLAY_OK);
    n = run(s, prompt, PROMPT, &gp, out, INLAY_OK);
    inlay_session_free(s);
    return n;
}

typedef struct {
    inlay_session* session;
    const int32_t* prompt;
    CapiGate entered, release;
    int calls;
    inlay_status status;
    int32_t tokens[GEN];
    size_t n;
} Job;

static bool hold_first(int32_t token, const char* piece, size_t len, void* user) {
    Job* job = (Job*)user;
    (void)token;
    (void)piece;
    (void)len;
    if (++job->calls == 1) {
        capi_gate_open(&job->entered);
        capi_gate_wait(&job->release);
    }
    return true;
}

static void* run_job(void* arg) {
    Job* job = (Job*)arg;
    inlay_generate_params gp = capi_greedy(GEN, true);
    inlay_result* r = NULL;
    gp.on_token = hold_first;
    gp.user = job;
    job->status = inlay_session_generate_tokens(job->session, job->prompt, PROMPT, &gp, &r);
    if (r) {
        const int32_t* t = inlay_result_tokens(r, &job->n);
        memcpy(job->tokens, t, (job->n < GEN ? job->n : GEN) * sizeof(int32_t));
    }
    inlay_result_free(r);
    return NULL;
}

static void sleep_briefly(void) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
}

int main(void) {
    inlay_model* model = capi_load_default();
    int32_t a[PROMPT], b[PROMPT];
    int32_t ref_a[GEN], ref_b[GEN];
    Job ja, jb;
    pthread_t ta, tb;
    inlay_metrics m0, m;

    capi_watchdog_start("capi_runtime_kv_cap", 300);
    make_prompt(a, 100);
    make_prompt(b, 400);
    CHECK(lone(model, a, ref_a) == GEN);
    CHECK(lone(model, b, ref_b) == GEN);

    /* 1. Two running calls; the cap drops below what they hold. */
    memset(&ja, 0, sizeof ja);
    memset(&jb, 0, sizeof jb);
    ja.prompt = a;
    jb.prompt = b;
    capi_gate_init(&ja.entered);
    capi_gate_init(&ja.release);
    capi_gate_init(&jb.entered);
    capi_gate_init(&jb.release);
    CHECK_STATUS(inlay_session_create(model, NULL, &ja.session), INLAY_OK);
    CHECK_STATUS(inlay_session_create(model, NULL, &jb.session), INLAY_OK);
    CHECK(pthread_create(&ta, NULL, run_job, &ja) == 0);
    capi_gate_wait(&ja.entered); /* A is running: B is the younger */
    CHECK(pthread_create(&tb, NULL, run_job, &jb) == 0);
    capi_gate_wait(&jb.entered);
    m0 = capi_metrics(model);
    printf("two running calls hold %lld blocks\n", (long long)m0.blocks_held);
    CHECK(m0.sequences_running == 2);
    CHECK(m0.blocks_held >= 6); /* 40 prompt tokens each: 3 blocks each at least */
    CHECK_STATUS(inlay_model_set_kv_cap(model, 4), INLAY_OK); /* each alone needs 4 (60 tokens) */
    do {
        sleep_briefly();
        m = capi_metrics(model);
    } while (m.preemptions == m0.preemptions);
    CHECK(m.preemptions == m0.preemptions + 1);
    CHECK(m.sequences_running == 1 && m.sequences_waiting == 1);
    CHECK(m.blocks_held <= 4 && m.block_cap == 4);
    capi_gate_open(&ja.release);
    capi_gate_open(&jb.release);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    CHECK_STATUS(ja.status, INLAY_OK);
    CHECK_STATUS(jb.status, INLAY_OK);
    CHECK(ja.n == GEN && memcmp(ja.tokens, ref_a, sizeof ref_a) == 0);
    CHECK(jb.n == GEN && memcmp(jb.tokens, ref_b, sizeof ref_b) == 0);
    m = capi_metrics(model);
    CHECK(m.kv_full_failures == m0.kv_full_failures);
    CHECK(m.blocks_held <= 4);

    /* 2. The only running call cannot fit the cap: INLAY_ERR_KV_FULL, with a result. */
    {
        inlay_generate_params gp = capi_greedy(GEN, true);
        inlay_result* r = NULL;
        CHECK_STATUS(inlay_session_reset(ja.session), INLAY_OK);
        CHECK_STATUS(inlay_model_set_kv_cap(model, 1), INLAY_OK);
        CHECK_STATUS(inlay_session_generate_tokens(ja.session, a, PROMPT, &gp, &r), INLAY_ERR_KV_FULL);
        CHECK(strstr(inlay_last_error(), "cap 1") != NULL);
        CHECK(r != NULL);
        inlay_result_free(r);
        m = capi_metrics(model);
        CHECK(m.kv_full_failures == m0.kv_full_failures + 1);
        CHECK(m.blocks_held <= 1);
        CHECK_STATUS(inlay_model_set_kv_cap(model, 0), INLAY_OK);
        CHECK_STATUS(inlay_session_reset(ja.session), INLAY_OK);
        {
            int32_t again[GEN];
            CHECK(run(ja.session, a, PROMPT, &gp, again, INLAY_OK) == GEN && memcmp(again, ref_a, sizeof again) == 0);
        }
    }

    /* 3. restore: the saved KV (60 tokens: 4 blocks) does not fit a cap of 2. */
    {
        char path[4096];
        inlay_session* c = NULL;
        inlay_session* fresh = NULL;
        inlay_generate_params gp = capi_greedy(3, true);
        int32_t got[8], want[8];
        snprintf(path, sizeof path, "%s/capi_runtime_kv_cap.inlay", INLAY_BINARY_DIR);
        CHECK_STATUS(inlay_session_save(ja.session, path), INLAY_OK);
        CHECK_STATUS(inlay_session_create(model, NULL, &c), INLAY_OK);
        CHECK_STATUS(inlay_session_create(model, NULL, &fresh), INLAY_OK);
        CHECK(run(c, b, 8, &gp, NULL, INLAY_OK) == 3); /* c holds a conversation of its own */
        CHECK(run(fresh, b, 8, &gp, NULL, INLAY_OK) == 3);
        CHECK_STATUS(inlay_model_set_kv_cap(model, 2), INLAY_OK);
        CHECK_STATUS(inlay_session_restore(c, path), INLAY_ERR_KV_FULL);
        CHECK(capi_n_tokens(c) == 11);
        CHECK_STATUS(inlay_model_set_kv_cap(model, 0), INLAY_OK);
        CHECK(run(c, b + 8, 4, &gp, got, INLAY_OK) == 3);
        CHECK(run(fresh, b + 8, 4, &gp, want, INLAY_OK) == 3);
        CHECK(memcmp(got, want, 3 * sizeof(int32_t)) == 0);
        /* with room, the same file restores and continues like the saved session */
        CHECK_STATUS(inlay_session_restore(c, path), INLAY_OK);
        CHECK(capi_n_tokens(c) == capi_n_tokens(ja.session));
        CHECK(run(c, b, 2, &gp, got, INLAY_OK) == 3);
        CHECK(run(ja.session, b, 2, &gp, want, INLAY_OK) == 3);
        CHECK(memcmp(got, want, 3 * sizeof(int32_t)) == 0);
        remove(path);
        inlay_session_free(c);
        inlay_session_free(fresh);
    }

    inlay_session_free(ja.session);
    inlay_session_free(jb.session);
    m = capi_metrics(model);
    CHECK(m.sessions == 0 && m.blocks_held == 0);
    capi_gate_destroy(&ja.entered);
    capi_gate_destroy(&ja.release);
    capi_gate_destroy(&jb.entered);
    capi_gate_destroy(&jb.release);
    inlay_model_free(model);
    capi_watchdog_stop();
    return capi_finish("capi_runtime_kv_cap");
}
