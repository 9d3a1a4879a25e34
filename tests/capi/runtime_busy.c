/*
 * A session is used by one call at a time. While a generate call runs, every other call
 * on that session returns INLAY_ERR_BUSY and changes nothing: fork, save, restore, reset,
 * eval_logits, chat, generate, generate_tokens and n_tokens. Checked from inside the
 * call's own on_token (the same thread) and from another thread while the callback waits
 * for it (gates, no sleeps: the call is certainly running). inlay_session_cancel from
 * inside on_token ends the call with INLAY_ERR_CANCELLED after at most one more token,
 * and the session stays consistent: it continues exactly like a fresh session given the
 * same history.
 */
#define _POSIX_C_SOURCE 200809L
#include "capi_default_model.h"

static const char* k_template = "{% for m in messages %}{{ m.content }}{% endfor %}";

typedef struct {
    inlay_session* session;
    char saved[4096];   /* a valid session file (restore must still refuse) */
    char unsaved[4096]; /* save must not create it */
    int failures;       /* checks that failed inside the callback's calls */
    int rounds;         /* times every call was tried */
} Probe;

#define PROBE(call, expected)                                                                          \
    do {                                                                                               \
        inlay_status got_ = (call);                                                                    \
        if (got_ != (expected)) {                                                                      \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s (%s)\n", __FILE__, __LINE__, #call,    \
                    inlay_status_name(got_), inlay_status_name(expected), inlay_last_error());        \
            ++p->failures;                                                                             \
        }                                                                                              \
    } while (0)

/* Every call that must be refused while the session is inside a call. */
static void try_everything(Probe* p) {
    inlay_session* s = p->session;
    inlay_session* forked = (inlay_session*)&forked;
    inlay_result* r = (inlay_result*)&r;
    inlay_generate_params gp = capi_greedy(2, true);
    inlay_chat_message m = {"user", "hi"};
    inlay_chat_params cp;
    const int32_t token = 100;
    float logits[1024];
    size_t n = 12345;
    FILE* f;
    inlay_chat_params_init(&cp);
    cp.chat_template = k_template;
    PROBE(inlay_session_fork(s, &forked), INLAY_ERR_BUSY);
    if (forked != NULL) ++p->failures;
    PROBE(inlay_session_save(s, p->unsaved), INLAY_ERR_BUSY);
    if ((f = fopen(p->unsaved, "rb")) != NULL) {
        fclose(f);
        ++p->failures;
    }
    PROBE(inlay_session_restore(s, p->saved), INLAY_ERR_BUSY);
    PROBE(inlay_session_reset(s), INLAY_ERR_BUSY);
    PROBE(inlay_session_eval_logits(s, &token, 1, logits, 1024), INLAY_ERR_BUSY);
    PROBE(inlay_session_chat(s, &m, 1, &cp, &gp, &r), INLAY_ERR_BUSY);
    if (r != NULL) ++p->failures;
    r = (inlay_result*)&r;
    PROBE(inlay_session_generate(s, "x", &gp, &r), INLAY_ERR_BUSY);
    if (r != NULL) ++p->failures;
    r = (inlay_result*)&r;
    PROBE(inlay_session_generate_tokens(s, &token, 1, &gp, &r), INLAY_ERR_BUSY);
    if (r != NULL) ++p->failures;
    PROBE(inlay_session_n_tokens(s, &n), INLAY_ERR_BUSY);
    if (strncmp(inlay_last_error(), "INLAY_ERR_BUSY: ", 16) != 0) ++p->failures;
    ++p->rounds;
}

/* Run 1: at the 3rd token, try everything from inside the call, then cancel. */
typedef struct {
    Probe* probe;
    int calls;
    int calls_after_cancel;
    inlay_status cancel_status;
} Inside;

static bool inside(int32_t token, const char* piece, size_t len, void* user) {
    Inside* in = (Inside*)user;
    (void)token;
    (void)piece;
    (void)len;
    ++in->calls;
    if (in->cancel_status == INLAY_OK && in->calls > 3) ++in->calls_after_cancel;
    if (in->calls == 3) {
        try_everything(in->probe);
        in->cancel_status = inlay_session_cancel(in->probe->session);
    }
    return true;
}

/* Run 2: at the 3rd token, another thread tries everything while the callback waits. */
typedef struct {
    Probe* probe;
    CapiGate inside_call, done;
    int calls;
} Outside;

static bool wait_for_other(int32_t token, const char* piece, size_t len, void* user) {
    Outside* out = (Outside*)user;
    (void)token;
    (void)piece;
    (void)len;
    if (++out->calls == 3) {
        capi_gate_open(&out->inside_call);
        capi_gate_wait(&out->done);
    }
    return true;
}

static void* other_thread(void* arg) {
    Outside* out = (Outside*)arg;
    capi_gate_wait(&out->inside_call);
    try_everything(out->probe);
    capi_gate_open(&out->done);
    return NULL;
}

int main(void) {
    inlay_model* model = capi_load_default();
    inlay_session* s = NULL;
    inlay_result* r = NULL;
    Probe probe;
    inlay_generate_params gp = capi_greedy(40, true);
    size_t n = 0, n_prompt = 0;

    capi_watchdog_start("capi_runtime_busy", 300);
    memset(&probe, 0, sizeof probe);
    snprintf(probe.saved, sizeof probe.saved, "%s/capi_runtime_busy.saved.inlay", INLAY_BINARY_DIR);
    snprintf(probe.unsaved, sizeof probe.unsaved, "%s/capi_runtime_busy.unsaved.inlay", INLAY_BINARY_DIR);
    remove(probe.unsaved);
    CHECK_STATUS(inlay_session_create(model, NULL, &s), INLAY_OK);
    probe.session = s;
    {
        inlay_generate_params two = capi_greedy(2, true);
        CHECK_STATUS(inlay_session_generate(s, "Q:", &two, &r), INLAY_OK);
        inlay_result_free(r);
        CHECK_STATUS(inlay_session_save(s, probe.saved), INLAY_OK);
        CHECK_STATUS(inlay_session_reset(s), INLAY_OK);
    }

    /* Run 1: from inside, then a cancel from inside. */
    {
        Inside in;
        const int32_t* tokens;
        memset(&in, 0, sizeof in);
        in.probe = &probe;
        in.cancel_status = INLAY_ERR_INTERNAL;
        gp.on_token = inside;
        gp.user = &in;
        CHECK_STATUS(inlay_session_generate(s, "You will", &gp, &r), INLAY_ERR_CANCELLED);
        CHECK(probe.rounds == 1 && probe.failures == 0);
        CHECK(in.cancel_status == INLAY_OK);
        CHECK(r != NULL);
        tokens = inlay_result_tokens(r, &n);
        (void)inlay_result_prompt_tokens(r, &n_prompt);
        CHECK(inlay_result_stop_reason(r) == INLAY_STOP_CANCELLED);
        CHECK(n >= 3 && n <= 4);
        CHECK(in.calls_after_cancel <= 1);
        CHECK(capi_n_tokens(s) == n_prompt + n);
        /* Consistent afterwards: continues like a fresh session on the same history. */
        {
            int32_t history[64];
            inlay_session* fresh = NULL;
            inlay_result* a = NULL;
            inlay_result* b = NULL;
            inlay_generate_params more = capi_greedy(6, true);
            size_t na = 0, nb = 0;
            const int32_t* ta;
            const int32_t* tb;
            memcpy(history, inlay_result_prompt_tokens(r, NULL), n_prompt * sizeof(int32_t));
            memcpy(history + n_prompt, tokens, n * sizeof(int32_t));
            CHECK_STATUS(inlay_session_create(model, NULL, &fresh), INLAY_OK);
            more.max_tokens = 0;
            CHECK_STATUS(inlay_session_generate_tokens(fresh, history, n_prompt + n, &more, &b), INLAY_OK);
            inlay_result_free(b);
            more.max_tokens = 6;
            CHECK_STATUS(inlay_session_generate(s, " Then", &more, &a), INLAY_OK);
            CHECK_STATUS(inlay_session_generate(fresh, " Then", &more, &b), INLAY_OK);
            ta = inlay_result_tokens(a, &na);
            tb = inlay_result_tokens(b, &nb);
            CHECK(na == 6 && nb == 6 && memcmp(ta, tb, 6 * sizeof(int32_t)) == 0);
            inlay_result_free(a);
            inlay_result_free(b);
            inlay_session_free(fresh);
        }
        inlay_result_free(r);
        r = NULL;
    }

    /* Run 2: from another thread, while the call waits inside its callback. */
    {
        Outside out;
        pthread_t t;
        memset(&out, 0, sizeof out);
        out.probe = &probe;
        capi_gate_init(&out.inside_call);
        capi_gate_init(&out.done);
        CHECK_STATUS(inlay_session_reset(s), INLAY_OK);
        gp.max_tokens = 10;
        gp.on_token = wait_for_other;
        gp.user = &out;
        CHECK(pthread_create(&t, NULL, other_thread, &out) == 0);
        CHECK_STATUS(inlay_session_generate(s, "You will", &gp, &r), INLAY_OK);
        pthread_join(t, NULL);
        CHECK(probe.rounds == 2 && probe.failures == 0);
        (void)inlay_result_tokens(r, &n);
        CHECK(n == 10 && inlay_result_stop_reason(r) == INLAY_STOP_MAX_TOKENS);
        inlay_result_free(r);
        capi_gate_destroy(&out.inside_call);
        capi_gate_destroy(&out.done);
    }

    /* Idle again: everything works. */
    {
        inlay_session* forked = NULL;
        CHECK_STATUS(inlay_session_fork(s, &forked), INLAY_OK);
        CHECK(capi_n_tokens(forked) == capi_n_tokens(s));
        inlay_session_free(forked);
        CHECK_STATUS(inlay_session_restore(s, probe.saved), INLAY_OK);
        CHECK(capi_n_tokens(s) == 5); /* BOS, "Q:" and 2 tokens */
    }
    remove(probe.saved);
    inlay_session_free(s);
    inlay_model_free(model);
    capi_watchdog_stop();
    return capi_finish("capi_runtime_busy");
}
