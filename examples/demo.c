/*
 * demo: a tour of inlay's C ABI (C99 and POSIX threads), the C counterpart of the
 * bindings' demos in examples/ and bindings/.
 *
 *     demo MODEL [auto|cpu|cuda]
 *
 * 1. error handling: a file that does not exist gives a status and a message;
 * 2. loading MODEL on the device asked for (default auto), with a progress bar on stderr;
 *    a device this machine or build cannot serve is reported, then the CPU is used;
 * 3. streaming: greedy text, printed as each token arrives;
 * 4. cancel from another thread: a second thread cancels the generation after 5 tokens;
 * 5. a two-turn chat through the model's own chat template (the session keeps the
 *    conversation, so the second turn processes only its new tokens).
 * Exit status 0 when every step behaved as described, 1 otherwise.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inlay/inlay.h"

static const char* stop_name(inlay_stop_reason reason) {
    static const char* const names[] = {"none", "eog", "max_tokens", "stop string", "callback", "cancelled",
                                        "context full"};
    return (unsigned)reason < sizeof names / sizeof names[0] ? names[reason] : "?";
}

/* The progress bar: 30 cells on stderr, redrawn in place. */
static bool progress_bar(float progress, void* user) {
    int cells = (int)(progress * 30.0f + 0.5f), i;
    (void)user;
    fputs("\r  loading [", stderr);
    for (i = 0; i < 30; ++i) fputc(i < cells ? '#' : ' ', stderr);
    fprintf(stderr, "] %3d%%", (int)(progress * 100.0f + 0.5f));
    if (progress >= 1.0f) fputc('\n', stderr);
    return true;
}

static bool print_piece(int32_t token, const char* piece, size_t len, void* user) {
    (void)token;
    (void)user;
    fwrite(piece, 1, len, stdout);
    fflush(stdout);
    return true;
}

/* Step 4's two threads: the generating one counts tokens and, at the 5th, wakes the
 * canceller and waits until it has called inlay_session_cancel (so the demo does not
 * depend on which thread runs first). */
struct cancel_demo {
    inlay_session* session;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int tokens;
    bool cancelled;
};

static bool count_and_wait(int32_t token, const char* piece, size_t len, void* user) {
    struct cancel_demo* d = (struct cancel_demo*)user;
    (void)token;
    fwrite(piece, 1, len, stdout);
    fflush(stdout);
    pthread_mutex_lock(&d->lock);
    if (++d->tokens == 5) {
        pthread_cond_broadcast(&d->changed);
        while (!d->cancelled) pthread_cond_wait(&d->changed, &d->lock);
    }
    pthread_mutex_unlock(&d->lock);
    return true;
}

static void* canceller(void* arg) {
    struct cancel_demo* d = (struct cancel_demo*)arg;
    pthread_mutex_lock(&d->lock);
    while (d->tokens < 5) pthread_cond_wait(&d->changed, &d->lock);
    inlay_session_cancel(d->session); /* safe from any thread */
    d->cancelled = true;
    pthread_cond_broadcast(&d->changed);
    pthread_mutex_unlock(&d->lock);
    return NULL;
}

/* Loads `path` on `device`, falling back to the CPU when the device cannot serve. */
static inlay_model* load(const char* path, inlay_device device) {
    inlay_model_params mp;
    inlay_model* model = NULL;
    inlay_status status;
    inlay_model_params_init(&mp);
    mp.progress = progress_bar;
    mp.device = device;
    status = inlay_model_load(path, &mp, &model);
    if (status == INLAY_ERR_UNSUPPORTED && device != INLAY_DEVICE_CPU) {
        fprintf(stderr, "\n  that device is not available here (%s); using the CPU\n", inlay_last_error());
        mp.device = INLAY_DEVICE_CPU;
        status = inlay_model_load(path, &mp, &model);
    }
    if (status != INLAY_OK) {
        fprintf(stderr, "\ndemo: %s\n", inlay_last_error());
        return NULL;
    }
    return model;
}

int main(int argc, char** argv) {
    inlay_device device = INLAY_DEVICE_AUTO;
    inlay_model* model;
    inlay_model* missing = NULL;
    inlay_session* session = NULL;
    inlay_result* result = NULL;
    inlay_generate_params gp;
    inlay_model_info info;
    int ok = 1;

    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s MODEL [auto|cpu|cuda]\n", argv[0]);
        return 2;
    }
    if (argc == 3) {
        if (strcmp(argv[2], "cpu") == 0) device = INLAY_DEVICE_CPU;
        else if (strcmp(argv[2], "cuda") == 0) device = INLAY_DEVICE_CUDA;
        else if (strcmp(argv[2], "auto") != 0) {
            fprintf(stderr, "demo: unknown device '%s' (auto, cpu or cuda)\n", argv[2]);
            return 2;
        }
    }

    printf("== error handling\n");
    if (inlay_model_load("no/such/model.gguf", NULL, &missing) == INLAY_ERR_IO && missing == NULL)
        printf("  %s\n", inlay_last_error());
    else
        ok = 0;

    printf("\n== loading %s\n", argv[1]);
    fflush(stdout);
    model = load(argv[1], device);
    if (!model) return 1;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    if (inlay_model_get_info(model, &info) != INLAY_OK) ok = 0;
    printf("  %s model, %lld parameters, %d layers, on %s\n", info.architecture, (long long)info.n_params,
           (int)info.n_layers, info.device);

    if (inlay_session_create(model, NULL, &session) != INLAY_OK) {
        fprintf(stderr, "demo: %s\n", inlay_last_error());
        inlay_model_free(model);
        return 1;
    }

    printf("\n== streaming (greedy)\n");
    inlay_generate_params_init(&gp);
    gp.temperature = 0.0f;
    gp.max_tokens = 48;
    gp.on_token = print_piece;
    if (inlay_session_generate(session, "You will", &gp, &result) == INLAY_OK) {
        printf("\n  [stop: %s]\n", stop_name(inlay_result_stop_reason(result)));
    } else {
        fprintf(stderr, "demo: %s\n", inlay_last_error());
        ok = 0;
    }
    inlay_result_free(result);
    result = NULL;
    inlay_session_reset(session);

    printf("\n== cancel from another thread (after 5 tokens)\n");
    {
        struct cancel_demo d;
        pthread_t thread;
        memset(&d, 0, sizeof d);
        d.session = session;
        pthread_mutex_init(&d.lock, NULL);
        pthread_cond_init(&d.changed, NULL);
        pthread_create(&thread, NULL, canceller, &d);
        gp.on_token = count_and_wait;
        gp.user = &d;
        gp.max_tokens = 200;
        gp.ignore_eos = true;
        /* a cancelled call returns INLAY_ERR_CANCELLED with what it produced */
        if (inlay_session_generate(session, "Once upon a time", &gp, &result) == INLAY_ERR_CANCELLED && result &&
            inlay_result_stop_reason(result) == INLAY_STOP_CANCELLED) {
            size_t n = 0;
            inlay_result_tokens(result, &n);
            printf("\n  [stop: cancelled after %zu of at most 200 tokens]\n", n);
        } else {
            printf("\n  the generation was not cancelled: %s\n", inlay_last_error());
            ok = 0;
        }
        pthread_join(thread, NULL);
        pthread_cond_destroy(&d.changed);
        pthread_mutex_destroy(&d.lock);
        inlay_result_free(result);
        result = NULL;
        gp.user = NULL;
        gp.ignore_eos = false;
    }
    inlay_session_reset(session);

    printf("\n== chat, two turns through the model's chat template\n");
    {
        static char reply[1024];
        inlay_chat_message messages[3] = {{"user", "What is the secret of happiness?"}, {"assistant", reply},
                                          {"user", "And what about money?"}};
        static const char* const stop[] = {"\n"}; /* one line per reply, as the template writes them */
        size_t turn;
        gp.stop = stop;
        gp.n_stop = 1;
        gp.on_token = print_piece;
        gp.max_tokens = 40;
        gp.seed = 7;
        gp.temperature = 0.8f;
        for (turn = 0; turn < 2; ++turn) {
            const size_t n_messages = turn == 0 ? 1 : 3;
            inlay_timings t;
            printf("  user: %s\n  assistant:", messages[turn == 0 ? 0 : 2].content);
            fflush(stdout);
            /* NULL chat params: the model's own template */
            if (inlay_session_chat(session, messages, n_messages, NULL, &gp, &result) != INLAY_OK) {
                fprintf(stderr, "\ndemo: %s\n", inlay_last_error());
                ok = 0;
                break;
            }
            memset(&t, 0, sizeof t);
            t.struct_size = sizeof t;
            inlay_result_timings(result, &t);
            printf("\n  [this turn processed %lld new prompt tokens]\n", (long long)t.prompt_tokens);
            if (turn == 0) snprintf(reply, sizeof reply, "%s", inlay_result_text(result));
            inlay_result_free(result);
            result = NULL;
        }
    }

    inlay_session_free(session);
    inlay_model_free(model);
    return ok ? 0 : 1;
}
