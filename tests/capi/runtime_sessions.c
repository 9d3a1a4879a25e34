/*
 * Fork, prefix reuse and session files through the C ABI: a fork continues like its
 * source and prefills only its own tokens (metrics); a second session with the same
 * prompt reuses the cached blocks; a saved session restored elsewhere continues exactly
 * like the original; truncated, corrupt and missing files fail with their statuses.
 */
#include "capi_test.h"

static inlay_metrics metrics_of(const inlay_model* model) {
    inlay_metrics m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    CHECK_STATUS(inlay_model_get_metrics(model, &m), INLAY_OK);
    return m;
}

/* Generates greedily; copies the tokens to out (capacity 64); returns the count. */
static size_t generate(inlay_session* s, const char* prompt, int max_tokens, int32_t* out, inlay_timings* t) {
    inlay_generate_params gp;
    inlay_result* r = NULL;
    const int32_t* ids;
    size_t n = 0;
    inlay_generate_params_init(&gp);
    gp.temperature = 0.0f;
    gp.max_tokens = max_tokens;
    gp.ignore_eos = true;
    CHECK_STATUS(inlay_session_generate(s, prompt, &gp, &r), INLAY_OK);
    if (!r) return 0;
    ids = inlay_result_tokens(r, &n);
    if (n > 64) n = 64;
    memcpy(out, ids, n * sizeof(int32_t));
    if (t) {
        memset(t, 0, sizeof *t);
        t->struct_size = sizeof *t;
        CHECK_STATUS(inlay_result_timings(r, t), INLAY_OK);
    }
    inlay_result_free(r);
    return n;
}

int main(void) {
    inlay_model* model = capi_load_stories(0);
    const char* story = "Once upon a time, there was a little girl named Lily. She loved to play outside";
    inlay_session *a = NULL, *b = NULL, *c = NULL, *fork = NULL;
    int32_t ta[64], tb[64], tc[64];
    size_t na, nb, nc;
    inlay_metrics m0, m1;
    inlay_timings t;
    char path[512], bad[512];
    FILE* f;
    char* bytes;
    size_t length = 0;

    snprintf(path, sizeof path, "%s/capi_runtime_sessions.session", INLAY_BINARY_DIR);
    snprintf(bad, sizeof bad, "%s/capi_runtime_sessions.bad", INLAY_BINARY_DIR);
    CHECK_STATUS(inlay_session_create(model, NULL, &a), INLAY_OK);
    CHECK_STATUS(inlay_session_create(model, NULL, &b), INLAY_OK);
    CHECK_STATUS(inlay_session_create(model, NULL, &c), INLAY_OK);

    /* prefix reuse: b's prompt starts with a's whole prompt */
    na = generate(a, story, 8, ta, &t);
    CHECK(na == 8 && t.prompt_tokens_reused == 0);
    m0 = metrics_of(model);
    nb = generate(b, story, 8, tb, &t);
    m1 = metrics_of(model);
    CHECK(nb == 8 && na == nb && memcmp(ta, tb, na * sizeof(int32_t)) == 0);
    CHECK(t.prompt_tokens_reused > 0 && t.prompt_tokens_reused % 16 == 0);
    CHECK(m1.prefix_tokens_reused - m0.prefix_tokens_reused == t.prompt_tokens_reused);
    CHECK(m1.tokens_prefilled - m0.tokens_prefilled == t.prompt_tokens - t.prompt_tokens_reused);
    printf("second prompt: %lld tokens, %lld reused\n", (long long)t.prompt_tokens, (long long)t.prompt_tokens_reused);

    /* fork: shares the KV, continues like its source */
    CHECK_STATUS(inlay_session_fork(a, &fork), INLAY_OK);
    {
        inlay_session* none = a;
        CHECK_STATUS(inlay_session_fork(NULL, &none), INLAY_ERR_INVALID_ARGUMENT);
        CHECK(none == NULL);
    }
    CHECK(metrics_of(model).blocks_shared > 0);
    m0 = metrics_of(model);
    nc = generate(fork, " and", 6, tc, &t);
    m1 = metrics_of(model);
    /* " and" plus the token sampled last by `a`, nothing of the shared history */
    CHECK(t.prompt_tokens >= 2 && t.prompt_tokens <= 3);
    CHECK(m1.tokens_prefilled - m0.tokens_prefilled == t.prompt_tokens);
    na = generate(a, " and", 6, ta, NULL);
    CHECK(nc == 6 && na == 6 && memcmp(ta, tc, 6 * sizeof(int32_t)) == 0);

    /* save, continue; restore into another session, continue the same way */
    CHECK_STATUS(inlay_session_save(a, path), INLAY_OK);
    na = generate(a, " in the", 10, ta, NULL);
    CHECK_STATUS(inlay_session_restore(c, path), INLAY_OK);
    nc = generate(c, " in the", 10, tc, &t);
    CHECK(na == 10 && nc == 10 && memcmp(ta, tc, 10 * sizeof(int32_t)) == 0);
    CHECK(t.prompt_tokens <= 4); /* nothing but the new tokens was computed */

    /* bad files */
    CHECK_STATUS(inlay_session_restore(c, NULL), INLAY_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(inlay_session_save(NULL, path), INLAY_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(inlay_session_restore(c, "/nonexistent/dir/x.session"), INLAY_ERR_IO);
    bytes = capi_read_file(path, &length);
    f = fopen(bad, "wb");
    fwrite(bytes, 1, length / 2, f);
    fclose(f);
    CHECK_STATUS(inlay_session_restore(c, bad), INLAY_ERR_TRUNCATED);
    bytes[length - 1] = (char)(bytes[length - 1] ^ 1);
    f = fopen(bad, "wb");
    fwrite(bytes, 1, length, f);
    fclose(f);
    CHECK_STATUS(inlay_session_restore(c, bad), INLAY_ERR_BAD_FORMAT);
    free(bytes);
    {
        /* a GGUF model is not a session file */
        char model_path[4096];
        capi_testdata(model_path, sizeof model_path, "models/stories260K.gguf");
        CHECK_STATUS(inlay_session_restore(c, model_path), INLAY_ERR_BAD_FORMAT);
    }
    /* c is unchanged by the failures: it continues its own conversation */
    nc = generate(c, " park", 3, tc, NULL);
    CHECK(nc == 3);

    inlay_session_free(fork);
    inlay_session_free(a);
    inlay_session_free(b);
    inlay_session_free(c);
    m1 = metrics_of(model);
    CHECK(m1.blocks_held == 0 && m1.blocks_free == m1.blocks_total && m1.sessions == 0);
    remove(path);
    remove(bad);
    inlay_model_free(model);
    return capi_finish("capi_runtime_sessions");
}
