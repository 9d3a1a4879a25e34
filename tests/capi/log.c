/*
 * The log sink: installed process-wide with a minimum level, it receives whole
 * messages (no trailing newline) at or above that level with the user pointer;
 * inlay_set_log_sink(NULL, ...) restores the default and the old sink hears nothing more.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>

#include "capi_test.h"

typedef struct {
    pthread_mutex_t lock;
    int messages;
    int below_min;
    int bad_text;
    int bad_level;
    inlay_log_level min_level;
    char first[256];
} Sink;

static void on_log(inlay_log_level level, const char* message, void* user) {
    Sink* s = (Sink*)user;
    size_t len = message ? strlen(message) : 0;
    pthread_mutex_lock(&s->lock);
    if (s->messages == 0 && message) {
        strncpy(s->first, message, sizeof s->first - 1);
        s->first[sizeof s->first - 1] = '\0';
    }
    s->messages++;
    if (level < INLAY_LOG_DEBUG || level > INLAY_LOG_ERROR) s->bad_level++;
    if (level < s->min_level) s->below_min++;
    if (!message || len == 0 || message[len - 1] == '\n') s->bad_text++;
    pthread_mutex_unlock(&s->lock);
}

static int count(Sink* s) {
    int n;
    pthread_mutex_lock(&s->lock);
    n = s->messages;
    pthread_mutex_unlock(&s->lock);
    return n;
}

int main(void) {
    char path[4096];
    Sink sink;
    inlay_model* model = NULL;
    inlay_model_params mp;
    int before;

    capi_testdata(path, sizeof path, "models/stories260K.gguf");
    memset(&sink, 0, sizeof sink);
    pthread_mutex_init(&sink.lock, NULL);

    /* Everything from DEBUG up: a load and a failing call both say something. */
    sink.min_level = INLAY_LOG_DEBUG;
    inlay_set_log_sink(on_log, INLAY_LOG_DEBUG, &sink);
    inlay_model_params_init(&mp);
    mp.n_threads = 1;
    CHECK_STATUS(inlay_model_load(path, &mp, &model), INLAY_OK);
    inlay_model_free(model);
    model = NULL;
    CHECK_STATUS(inlay_model_load("/nonexistent/missing.gguf", &mp, &model), INLAY_ERR_IO);
    CHECK(count(&sink) >= 1);
    printf("%d message(s); first: %s\n", count(&sink), sink.first);

    /* With ERROR as the minimum nothing below ERROR arrives. */
    sink.min_level = INLAY_LOG_ERROR;
    inlay_set_log_sink(on_log, INLAY_LOG_ERROR, &sink);
    CHECK_STATUS(inlay_model_load(path, &mp, &model), INLAY_OK);
    inlay_model_free(model);
    model = NULL;
    CHECK_STATUS(inlay_model_load("/nonexistent/missing.gguf", &mp, &model), INLAY_ERR_IO);

    /* NONE silences the sink; NULL restores the default (stderr) sink. */
    before = count(&sink);
    inlay_set_log_sink(on_log, INLAY_LOG_NONE, &sink);
    CHECK_STATUS(inlay_model_load("/nonexistent/missing.gguf", &mp, &model), INLAY_ERR_IO);
    CHECK(count(&sink) == before);
    inlay_set_log_sink(NULL, INLAY_LOG_DEBUG, NULL);
    inlay_set_log_sink(NULL, INLAY_LOG_WARN, NULL);
    CHECK_STATUS(inlay_model_load("/nonexistent/missing.gguf", &mp, &model), INLAY_ERR_IO);
    CHECK(count(&sink) == before);

    CHECK(sink.below_min == 0);
    CHECK(sink.bad_text == 0);
    CHECK(sink.bad_level == 0);
    pthread_mutex_destroy(&sink.lock);
    return capi_finish("capi_log");
}
