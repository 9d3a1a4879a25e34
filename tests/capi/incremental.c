/*
 * A session keeps its KV cache: a later generate only prefills the new tokens
 * (timings.prompt_tokens), and what it generates equals what a fresh session produces
 * from the whole token history in one call.
 */
#include "capi_test.h"

/* Appends `n` ids to the growing history `h` (capacity 1024). */
static void append(int32_t* h, size_t* n_h, const int32_t* ids, size_t n) {
    size_t i;
    for (i = 0; i < n && *n_h < 1024; ++i) h[(*n_h)++] = ids[i];
}

static inlay_timings timings_of(const inlay_result* r) {
    inlay_timings t;
    memset(&t, 0, sizeof t);
    t.struct_size = sizeof t;
    CHECK_STATUS(inlay_result_timings(r, &t), INLAY_OK);
    return t;
}

int main(void) {
    inlay_model* model = capi_load_stories(0);
    inlay_session* s1 = NULL;
    inlay_session* s2 = NULL;
    inlay_generate_params gp;
    inlay_result* r = NULL;
    inlay_result* r2 = NULL;
    inlay_timings t;
    int32_t history[1024];
    size_t n_history = 0;
    const int32_t* ids;
    const int32_t* ids2;
    size_t n = 0;
    size_t n2 = 0;
    size_t n_session = 0;

    CHECK_STATUS(inlay_session_create(model, NULL, &s1), INLAY_OK);
    CHECK_STATUS(inlay_session_create(model, NULL, &s2), INLAY_OK);
    if (!s1 || !s2) return capi_finish("capi_incremental");
    inlay_generate_params_init(&gp);
    gp.temperature = 0.0f;

    /* 1: prefill only: BOS + "Once upon a time" = 5 tokens */
    gp.max_tokens = 0;
    CHECK_STATUS(inlay_session_generate(s1, "Once upon a time", &gp, &r), INLAY_OK);
    t = timings_of(r);
    ids = inlay_result_prompt_tokens(r, &n);
    CHECK(n == 5 && t.prompt_tokens == 5 && t.generated_tokens == 0);
    CHECK(inlay_result_stop_reason(r) == INLAY_STOP_NONE);
    append(history, &n_history, ids, n);
    inlay_result_free(r);

    /* 2: new text after a prefill-only call: exactly its own tokens are processed */
    gp.max_tokens = 8;
    CHECK_STATUS(inlay_session_generate(s1, " there was", &gp, &r), INLAY_OK);
    t = timings_of(r);
    ids = inlay_result_prompt_tokens(r, &n);
    CHECK(n >= 2 && ids[0] != 1); /* no second BOS */
    CHECK(t.prompt_tokens == (int64_t)n);
    append(history, &n_history, ids, n);
    ids = inlay_result_tokens(r, &n);
    CHECK(n == 8 && t.generated_tokens == 8);
    append(history, &n_history, ids, n);
    CHECK_STATUS(inlay_session_n_tokens(s1, &n_session), INLAY_OK);
    CHECK(n_session == n_history);
    inlay_result_free(r);

    /* 3: after generating, the new tokens plus at most the last sampled token (not yet
     * evaluated) are processed, not the whole history */
    gp.max_tokens = 6;
    CHECK_STATUS(inlay_session_generate(s1, " One day", &gp, &r), INLAY_OK);
    t = timings_of(r);
    ids = inlay_result_prompt_tokens(r, &n);
    CHECK(n >= 2);
    CHECK(t.prompt_tokens >= (int64_t)n && t.prompt_tokens <= (int64_t)n + 1);
    CHECK(t.prompt_tokens < (int64_t)n_history);
    printf("turn 3: %zu new tokens, %lld processed, history was %zu tokens\n", n, (long long)t.prompt_tokens,
           n_history);
    append(history, &n_history, ids, n);

    /* the same continuation from a fresh session given the whole history at once */
    CHECK_STATUS(inlay_session_generate_tokens(s2, history, n_history, &gp, &r2), INLAY_OK);
    t = timings_of(r2);
    CHECK(t.prompt_tokens == (int64_t)n_history);
    ids = inlay_result_tokens(r, &n);
    ids2 = inlay_result_tokens(r2, &n2);
    CHECK(n == 6 && n2 == 6);
    CHECK(n == n2 && memcmp(ids, ids2, n * sizeof(int32_t)) == 0);
    CHECK(strcmp(inlay_result_text(r), inlay_result_text(r2)) == 0);
    inlay_result_free(r);
    inlay_result_free(r2);

    /* reset forgets everything: BOS and a full prefill again */
    CHECK_STATUS(inlay_session_reset(s1), INLAY_OK);
    CHECK_STATUS(inlay_session_n_tokens(s1, &n_session), INLAY_OK);
    CHECK(n_session == 0);
    gp.max_tokens = 0;
    CHECK_STATUS(inlay_session_generate(s1, "Once upon a time", &gp, &r), INLAY_OK);
    t = timings_of(r);
    ids = inlay_result_prompt_tokens(r, &n);
    CHECK(n == 5 && ids[0] == 1 && t.prompt_tokens == 5);
    inlay_result_free(r);

    inlay_session_free(s1);
    inlay_session_free(s2);
    inlay_model_free(model);
    return capi_finish("capi_incremental");
}
