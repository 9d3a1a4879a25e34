/*
 * Stress through the C ABI: 8 threads, each with up to 3 sessions of one model, do random
 * (seeded) operations: create and free sessions, generate (cancelling themselves from
 * on_token at a random token), fork, save and restore, reset, eval_logits; a ninth
 * thread cancels random live sessions all along. The KV budget is small (10 blocks, 40 for 24 full sessions), so
 * calls are preempted and idle KV is evicted. Then the same on a second model whose
 * handle is freed while its sessions are in the middle of calls: the sessions go on
 * working, and when the last one is freed the model's engine goes away (the process has
 * the threads it had before that model was loaded).
 *
 * What is checked is what the test controls, never timing: each call's status is one its
 * operation allows, the session's length afterwards follows from the status and the
 * result, a generate on an empty session gives a prefix of that prompt's lone greedy
 * output, no call is BUSY (each session has one user), and every KV block comes back.
 * A watchdog fails the test when no operation completes for 120 s (a deadlock); the
 * ASan stage's leak check covers what is freed. INLAY_STRESS_SEED picks the seeds.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>

#include "capi_default_model.h"

enum { N_WORKERS = 8, MAX_SESSIONS = 3, OPS = 100, N_PROMPTS = 6, MAX_GEN = 24, CONTEXT = 64 };

static const char* const k_prompts[N_PROMPTS] = {"You will", "Q:", "Never", "Life is", "Once upon a time", "The"};

static int g_last_what[N_WORKERS]; /* each worker's current operation, for messages */

/* Lone greedy outputs of each prompt on a fresh session (ignore_eos). */
static int32_t g_reference[N_PROMPTS][MAX_GEN];

/* --- seeded randomness (xorshift64*) ------------------------------------------------- */

typedef struct {
    uint64_t state;
} Rng;

static uint64_t rng_next(Rng* r) {
    r->state ^= r->state >> 12;
    r->state ^= r->state << 25;
    r->state ^= r->state >> 27;
    return r->state * 0x2545F4914F6CDD1Dull;
}

static int rng_below(Rng* r, int n) { return (int)(rng_next(r) % (uint64_t)n); }

/* --- live sessions, for the canceller thread ---------------------------------------- */

static struct {
    pthread_mutex_t lock;
    inlay_session* live[N_WORKERS * MAX_SESSIONS];
    int count;
    int done;
    long cancels;
} g_registry = {PTHREAD_MUTEX_INITIALIZER, {0}, 0, 0, 0};

static void register_session(inlay_session* s) {
    pthread_mutex_lock(&g_registry.lock);
    g_registry.live[g_registry.count++] = s;
    pthread_mutex_unlock(&g_registry.lock);
}

/* Before a session is freed: the canceller never touches it afterwards. */
static void unregister_session(inlay_session* s) {
    int i;
    pthread_mutex_lock(&g_registry.lock);
    for (i = 0; i < g_registry.count; ++i)
        if (g_registry.live[i] == s) {
            g_registry.live[i] = g_registry.live[--g_registry.count];
            break;
        }
    pthread_mutex_unlock(&g_registry.lock);
}

static void* canceller(void* arg) {
    Rng rng = {*(uint64_t*)arg};
    struct timespec pause = {0, 1000000};
    for (;;) {
        pthread_mutex_lock(&g_registry.lock);
        if (g_registry.done) {
            pthread_mutex_unlock(&g_registry.lock);
            return NULL;
        }
        if (g_registry.count > 0) {
            if (inlay_session_cancel(g_registry.live[rng_below(&rng, g_registry.count)]) != INLAY_OK)
                fprintf(stderr, "inlay_session_cancel failed: %s\n", inlay_last_error());
            ++g_registry.cancels;
        }
        pthread_mutex_unlock(&g_registry.lock);
        nanosleep(&pause, NULL);
    }
}

/* --- workers -------------------------------------------------------------------------- */

typedef struct {
    long ops, ok, cancelled, kv_full, context_full, compared;
    long unexpected; /* a status or state the operation does not allow */
} Tally;

typedef struct {
    int index;
    Rng rng;
    inlay_model* model; /* NULL: the handle may be gone, create no sessions from it */
    inlay_session* sessions[MAX_SESSIONS];
    char path[512];
    Tally tally;
    volatile int ops_done; /* read by main to pick the moment the model is freed */
} Worker;

typedef struct {
    int cancel_at; /* the call of on_token that cancels (beyond max_tokens: none) */
    int calls;
    inlay_session* session;
} SelfCancel;

static bool maybe_cancel(int32_t token, const char* piece, size_t len, void* user) {
    SelfCancel* c = (SelfCancel*)user;
    (void)token;
    (void)piece;
    (void)len;
    if (++c->calls == c->cancel_at) inlay_session_cancel(c->session);
    return true;
}

#define UNEXPECTED(w, ...)                                      \
    do {                                                        \
        fprintf(stderr, "worker %d (op %d): ", (w)->index, g_last_what[(w)->index]); \
        fprintf(stderr, __VA_ARGS__);                           \
        fprintf(stderr, " (last error: %s)\n", inlay_last_error()); \
        ++(w)->tally.unexpected;                                \
    } while (0)

static size_t length_of(Worker* w, inlay_session* s) {
    size_t n = 0;
    inlay_status st = inlay_session_n_tokens(s, &n);
    if (st != INLAY_OK) UNEXPECTED(w, "n_tokens returned %s", inlay_status_name(st));
    return n;
}

static int free_slot(Worker* w) {
    int i;
    for (i = 0; i < MAX_SESSIONS; ++i)
        if (!w->sessions[i]) return i;
    return -1;
}

static int some_session(Worker* w) {
    int start = rng_below(&w->rng, MAX_SESSIONS), i;
    for (i = 0; i < MAX_SESSIONS; ++i)
        if (w->sessions[(start + i) % MAX_SESSIONS]) return (start + i) % MAX_SESSIONS;
    return -1;
}

static void op_generate(Worker* w, inlay_session* s) {
    const int p = rng_below(&w->rng, N_PROMPTS);
    inlay_generate_params gp = capi_greedy(1 + rng_below(&w->rng, MAX_GEN), true);
    SelfCancel sc;
    inlay_result* r = NULL;
    const size_t before = length_of(w, s);
    size_t after, n = 0, n_prompt = 0;
    const int32_t* tokens;
    inlay_status st;
    sc.cancel_at = 1 + rng_below(&w->rng, 2 * gp.max_tokens);
    sc.calls = 0;
    sc.session = s;
    gp.on_token = maybe_cancel;
    gp.user = &sc;
    st = inlay_session_generate(s, k_prompts[p], &gp, &r);
    after = length_of(w, s);
    if (st == INLAY_ERR_CONTEXT_FULL) {
        ++w->tally.context_full;
        if (r != NULL || after != before) UNEXPECTED(w, "CONTEXT_FULL changed the session (%zu -> %zu)", before, after);
        return;
    }
    if (st != INLAY_OK && st != INLAY_ERR_CANCELLED && st != INLAY_ERR_KV_FULL) {
        UNEXPECTED(w, "generate returned %s", inlay_status_name(st));
        inlay_result_free(r);
        return;
    }
    if (!r) {
        UNEXPECTED(w, "generate returned %s without a result", inlay_status_name(st));
        return;
    }
    tokens = inlay_result_tokens(r, &n);
    (void)inlay_result_prompt_tokens(r, &n_prompt);
    if (st == INLAY_OK) {
        const inlay_stop_reason why = inlay_result_stop_reason(r);
        ++w->tally.ok;
        if (!(why == INLAY_STOP_MAX_TOKENS && n == (size_t)gp.max_tokens) && why != INLAY_STOP_CONTEXT_FULL)
            UNEXPECTED(w, "generate OK with stop reason %d after %zu of %d tokens", (int)why, n, gp.max_tokens);
    } else if (st == INLAY_ERR_CANCELLED) {
        ++w->tally.cancelled;
        if (inlay_result_stop_reason(r) != INLAY_STOP_CANCELLED) UNEXPECTED(w, "cancelled without STOP_CANCELLED");
    } else {
        ++w->tally.kv_full;
    }
    if (n > (size_t)gp.max_tokens) UNEXPECTED(w, "%zu tokens for max_tokens %d", n, gp.max_tokens);
    /* The history holds what the call kept: its prompt and tokens, or nothing if it was
     * stopped before it was admitted. */
    if (after != before + n_prompt + n && !(n == 0 && after == before))
        UNEXPECTED(w, "length %zu -> %zu after %zu prompt and %zu generated tokens (%s)", before, after, n_prompt, n,
                   inlay_status_name(st));
    if (before == 0 && n > 0) {
        ++w->tally.compared;
        if (memcmp(tokens, g_reference[p], n * sizeof(int32_t)) != 0)
            UNEXPECTED(w, "prompt %d: the %zu tokens differ from the lone greedy output", p, n);
    }
    inlay_result_free(r);
}

static void op_eval(Worker* w, inlay_session* s) {
    const int32_t tokens[3] = {100 + rng_below(&w->rng, 800), 200, 300};
    float logits[3 * 1024];
    const size_t before = length_of(w, s);
    const inlay_status st = inlay_session_eval_logits(s, tokens, 3, logits, 3 * 1024);
    size_t after;
    after = length_of(w, s);
    if (st == INLAY_OK) {
        ++w->tally.ok;
        if (after != before + 3) UNEXPECTED(w, "eval_logits: length %zu -> %zu", before, after);
    } else if (st == INLAY_ERR_CANCELLED || st == INLAY_ERR_KV_FULL || st == INLAY_ERR_CONTEXT_FULL) {
        if (st == INLAY_ERR_CANCELLED) ++w->tally.cancelled;
        if (st == INLAY_ERR_KV_FULL) ++w->tally.kv_full;
        if (st == INLAY_ERR_CONTEXT_FULL) ++w->tally.context_full;
        if (after != before && !(st != INLAY_ERR_CONTEXT_FULL && after == before + 3))
            UNEXPECTED(w, "eval_logits %s: length %zu -> %zu", inlay_status_name(st), before, after);
    } else {
        UNEXPECTED(w, "eval_logits returned %s", inlay_status_name(st));
    }
}

static void one_op(Worker* w) {
    const int what = rng_below(&w->rng, 10);
    g_last_what[w->index] = what;
    const int i = some_session(w);
    const int slot = free_slot(w);
    inlay_session* s = i >= 0 ? w->sessions[i] : NULL;
    inlay_status st;

    if (what == 0 || !s) { /* create */
        inlay_session_params sp;
        if (slot < 0 || !w->model) return;
        inlay_session_params_init(&sp);
        sp.context_length = CONTEXT;
        st = inlay_session_create(w->model, &sp, &w->sessions[slot]);
        if (st != INLAY_OK) UNEXPECTED(w, "session_create returned %s", inlay_status_name(st));
        else register_session(w->sessions[slot]);
    } else if (what == 1 && w->model) { /* free (without a model to create more: only at the end) */
        unregister_session(s);
        inlay_session_free(s);
        w->sessions[i] = NULL;
    } else if (what <= 5) { /* (and 1 without a model) */
        op_generate(w, s);
    } else if (what == 6) { /* fork */
        inlay_session* copy = NULL;
        if (slot < 0) return;
        st = inlay_session_fork(s, &copy);
        if (st != INLAY_OK) {
            UNEXPECTED(w, "fork returned %s", inlay_status_name(st));
            return;
        }
        if (length_of(w, copy) != length_of(w, s)) UNEXPECTED(w, "a fork's length differs");
        w->sessions[slot] = copy;
        register_session(copy);
    } else if (what == 7) { /* save, then restore into one of the sessions */
        const size_t saved = length_of(w, s);
        const int j = some_session(w);
        size_t before, after;
        st = inlay_session_save(s, w->path);
        if (st != INLAY_OK) {
            UNEXPECTED(w, "save returned %s", inlay_status_name(st));
            return;
        }
        before = length_of(w, w->sessions[j]);
        st = inlay_session_restore(w->sessions[j], w->path);
        after = length_of(w, w->sessions[j]);
        if (st == INLAY_OK) {
            ++w->tally.ok;
            if (after != saved) UNEXPECTED(w, "restored %zu tokens of %zu", after, saved);
        } else if (st == INLAY_ERR_KV_FULL) {
            ++w->tally.kv_full;
            if (after != before) UNEXPECTED(w, "a failed restore changed the length %zu -> %zu", before, after);
        } else {
            UNEXPECTED(w, "restore returned %s", inlay_status_name(st));
        }
    } else if (what == 8) {
        st = inlay_session_reset(s);
        if (st != INLAY_OK || length_of(w, s) != 0) UNEXPECTED(w, "reset returned %s", inlay_status_name(st));
    } else {
        op_eval(w, s);
    }
}

static void* run_worker(void* arg) {
    Worker* w = (Worker*)arg;
    int k, i;
    for (k = 0; k < OPS; ++k) {
        one_op(w);
        for (i = 0; i < MAX_SESSIONS; ++i)
            if (w->sessions[i] && length_of(w, w->sessions[i]) > CONTEXT)
                UNEXPECTED(w, "a session holds %zu tokens, more than its context of %d", length_of(w, w->sessions[i]),
                           CONTEXT);
        ++w->tally.ops;
        __atomic_store_n(&w->ops_done, k + 1, __ATOMIC_RELEASE);
        capi_watchdog_progress();
    }
    return NULL;
}

static void free_sessions(Worker* w) {
    int i;
    for (i = 0; i < MAX_SESSIONS; ++i)
        if (w->sessions[i]) {
            unregister_session(w->sessions[i]);
            inlay_session_free(w->sessions[i]);
            w->sessions[i] = NULL;
        }
}

static int thread_count(void) {
    char line[256];
    int n = -1;
    FILE* f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "Threads:", 8) == 0) n = atoi(line + 8);
    fclose(f);
    return n;
}

/* Runs the workers (and the canceller) once. free_model_after > 0: the handle is freed by
 * this thread once the workers have done that many operations in all. */
static void run_phase(Worker* workers, uint64_t seed, inlay_model** free_model, long free_model_after) {
    pthread_t threads[N_WORKERS], cancel_thread;
    uint64_t cancel_seed = seed ^ 0xC0FFEEull;
    int k;
    pthread_mutex_lock(&g_registry.lock);
    g_registry.done = 0;
    pthread_mutex_unlock(&g_registry.lock);
    CHECK(pthread_create(&cancel_thread, NULL, canceller, &cancel_seed) == 0);
    for (k = 0; k < N_WORKERS; ++k) CHECK(pthread_create(&threads[k], NULL, run_worker, &workers[k]) == 0);
    if (free_model) {
        struct timespec pause = {0, 500000};
        for (;;) {
            long done = 0;
            for (k = 0; k < N_WORKERS; ++k) done += __atomic_load_n(&workers[k].ops_done, __ATOMIC_ACQUIRE);
            if (done >= free_model_after) break;
            nanosleep(&pause, NULL);
        }
        inlay_model_free(*free_model); /* its sessions are in the middle of calls */
        *free_model = NULL;
        printf("model handle freed after %ld operations\n", free_model_after);
    }
    for (k = 0; k < N_WORKERS; ++k) pthread_join(threads[k], NULL);
    pthread_mutex_lock(&g_registry.lock);
    g_registry.done = 1;
    pthread_mutex_unlock(&g_registry.lock);
    pthread_join(cancel_thread, NULL);
}

static void sum(const Worker* workers, const char* what) {
    Tally t;
    int k;
    memset(&t, 0, sizeof t);
    for (k = 0; k < N_WORKERS; ++k) {
        t.ops += workers[k].tally.ops;
        t.ok += workers[k].tally.ok;
        t.cancelled += workers[k].tally.cancelled;
        t.kv_full += workers[k].tally.kv_full;
        t.context_full += workers[k].tally.context_full;
        t.compared += workers[k].tally.compared;
        t.unexpected += workers[k].tally.unexpected;
    }
    printf("%s: %ld operations: %ld ok, %ld cancelled, %ld KV_FULL, %ld CONTEXT_FULL, %ld outputs compared, "
           "%ld unexpected\n",
           what, t.ops, t.ok, t.cancelled, t.kv_full, t.context_full, t.compared, t.unexpected);
    CHECK(t.ops == (long)N_WORKERS * OPS);
    CHECK(t.unexpected == 0);
}

int main(void) {
    const char* env = getenv("INLAY_STRESS_SEED");
    const uint64_t seed = env && *env ? (uint64_t)strtoull(env, NULL, 10) : 20261201u;
    inlay_model* model;
    inlay_model* second;
    Worker workers[N_WORKERS];
    Rng main_rng;
    inlay_metrics m;
    int k, p, threads_before;

    printf("seed %llu (INLAY_STRESS_SEED)\n", (unsigned long long)seed);
    capi_watchdog_start("capi_runtime_stress", 120);
    main_rng.state = seed * 0x9E3779B97F4A7C15ull + 1;
    model = capi_load_default_with(0, 0, 10 * 8192); /* 10 blocks of 16 tokens */
    for (p = 0; p < N_PROMPTS; ++p) {
        inlay_session* s = NULL;
        inlay_result* r = NULL;
        inlay_generate_params gp = capi_greedy(MAX_GEN, true);
        size_t n = 0;
        const int32_t* t;
        CHECK_STATUS(inlay_session_create(model, NULL, &s), INLAY_OK);
        CHECK_STATUS(inlay_session_generate(s, k_prompts[p], &gp, &r), INLAY_OK);
        t = inlay_result_tokens(r, &n);
        CHECK(n == MAX_GEN);
        memcpy(g_reference[p], t, MAX_GEN * sizeof(int32_t));
        inlay_result_free(r);
        inlay_session_free(s);
    }

    /* Phase 1: sessions come and go from the model's handle. */
    memset(workers, 0, sizeof workers);
    for (k = 0; k < N_WORKERS; ++k) {
        workers[k].index = k;
        workers[k].rng.state = (seed + (uint64_t)k + 1) * 0x9E3779B97F4A7C15ull;
        workers[k].model = model;
        snprintf(workers[k].path, sizeof workers[k].path, "%s/capi_runtime_stress.%d.inlay", INLAY_BINARY_DIR, k);
    }
    run_phase(workers, seed, NULL, 0);
    sum(workers, "phase 1");
    for (k = 0; k < N_WORKERS; ++k) free_sessions(&workers[k]);
    m = capi_metrics(model);
    CHECK(m.sessions == 0 && m.blocks_held == 0 && m.blocks_free == m.blocks_total);
    CHECK(m.sequences_running == 0 && m.sequences_waiting == 0);
    printf("phase 1: %lld preemptions, %lld KV_FULL failures, %ld cancels sent\n", (long long)m.preemptions,
           (long long)m.kv_full_failures, g_registry.cancels);

    /* Phase 2: a second model's handle is freed while its sessions are in calls. */
    threads_before = thread_count();
    second = capi_load_default_with(0, 0, 10 * 8192);
    for (k = 0; k < N_WORKERS; ++k) {
        int i;
        memset(&workers[k].tally, 0, sizeof workers[k].tally);
        workers[k].ops_done = 0;
        workers[k].model = NULL; /* sessions only come from forks now */
        for (i = 0; i < 2; ++i) {
            inlay_session_params sp;
            inlay_session_params_init(&sp);
            sp.context_length = CONTEXT;
            CHECK_STATUS(inlay_session_create(second, &sp, &workers[k].sessions[i]), INLAY_OK);
            register_session(workers[k].sessions[i]);
        }
    }
    CHECK(thread_count() > threads_before); /* the second model's engine runs */
    run_phase(workers, seed + 1, &second, 1 + rng_below(&main_rng, N_WORKERS * OPS / 2));
    sum(workers, "phase 2");
    for (k = 0; k < N_WORKERS; ++k) free_sessions(&workers[k]);
    /* The last session took the model's engine and threads with it. */
    CHECK(thread_count() == threads_before);
    for (k = 0; k < N_WORKERS; ++k) remove(workers[k].path);

    m = capi_metrics(model);
    CHECK(m.sessions == 0 && m.blocks_held == 0 && m.blocks_free == m.blocks_total);
    inlay_model_free(model);
    capi_watchdog_stop();
    return capi_finish("capi_runtime_stress");
}
