#define _POSIX_C_SOURCE 200809L  /* setenv */
/*
 * Pipelined steps through the C ABI: a model loaded while INLAY_PIPELINING=always (on a
 * GPU, automatic) queues each decode step behind the one running; its greedy text must be
 * the text of the same model loaded with INLAY_PIPELINING=never, and inlay_metrics counts
 * the pipelined steps and the steps that handed back only ids.
 */
#include "capi_test.h"

typedef struct {
    int32_t tokens[96];
    size_t n;
    inlay_metrics metrics;
} Run;

static Run run_with(const char* pipelining) {
    Run run;
    inlay_model* model;
    inlay_session* session = NULL;
    inlay_generate_params gp;
    inlay_result* result = NULL;
    const int32_t* tokens;
    size_t i;
    memset(&run, 0, sizeof run);
    /* The engine reads the variable when the model's engine is made (load or first session). */
    CHECK(setenv("INLAY_PIPELINING", pipelining, 1) == 0);
    model = capi_load_stories(0);
    CHECK_STATUS(inlay_session_create(model, NULL, &session), INLAY_OK);
    inlay_generate_params_init(&gp);
    gp.temperature = 0.0f;
    gp.max_tokens = 96;
    CHECK_STATUS(inlay_session_generate(session, "Once upon a time", &gp, &result), INLAY_OK);
    if (result) {
        tokens = inlay_result_tokens(result, &run.n);
        CHECK(run.n == 96);
        for (i = 0; i < run.n && i < 96; ++i) run.tokens[i] = tokens[i];
    }
    run.metrics.struct_size = sizeof run.metrics;
    CHECK_STATUS(inlay_model_get_metrics(model, &run.metrics), INLAY_OK);
    inlay_result_free(result);
    inlay_session_free(session);
    inlay_model_free(model);
    return run;
}

int main(void) {
    const Run plain = run_with("never");
    const Run piped = run_with("always");
    CHECK(plain.n == piped.n && memcmp(plain.tokens, piped.tokens, plain.n * sizeof(int32_t)) == 0);
    /* Greedy: every pass handed back ids only (the prompt's, each decode step's). */
    CHECK(plain.metrics.steps > 0 && plain.metrics.steps_ids_only == plain.metrics.steps);
    CHECK(piped.metrics.steps_ids_only == piped.metrics.steps);
    CHECK(plain.metrics.steps_pipelined == 0);
    /* Most steps on a quiet machine; a caller slowed by load pauses its sequence, which
     * drains the pipeline, so only "some" is required. */
    CHECK(piped.metrics.steps_pipelined > 0 && piped.metrics.steps_pipelined < piped.metrics.steps);
    fprintf(stderr, "capi_pipelining: %lld of %lld steps pipelined\n", (long long)piped.metrics.steps_pipelined,
            (long long)piped.metrics.steps);
    return capi_finish("capi_pipelining");
}
