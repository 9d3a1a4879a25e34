/*
 * INLAY_ERR_CONTEXT_FULL leaves the session as it was. A session of 32 tokens holds a
 * short conversation; then a prompt that does not fit is refused by generate,
 * generate_tokens, eval_logits and chat, each with INLAY_ERR_CONTEXT_FULL, a NULL result
 * and the history length unchanged; afterwards the session continues exactly as a session
 * that never saw those calls (same tokens). Generating into the limit is INLAY_OK with
 * INLAY_STOP_CONTEXT_FULL, and then even one more token is refused.
 */
#define _POSIX_C_SOURCE 200809L
#include "capi_default_model.h"

enum { CONTEXT = 32 };

static const char* k_long =
    "You will find that the longest prompt in the world does not fit into a context of thirty-two tokens, "
    "however hard you try to squeeze it in.";

static const char* k_template =
    "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}";

/* A session of CONTEXT tokens after "You will" and 4 greedy tokens. */
static inlay_session* start(inlay_model* model) {
    inlay_session_params sp;
    inlay_session* s = NULL;
    inlay_result* r = NULL;
    inlay_generate_params gp = capi_greedy(4, true);
    inlay_session_params_init(&sp);
    sp.context_length = CONTEXT;
    CHECK_STATUS(inlay_session_create(model, &sp, &s), INLAY_OK);
    CHECK_STATUS(inlay_session_generate(s, "You will", &gp, &r), INLAY_OK);
    inlay_result_free(r);
    return s;
}

/* The next 6 greedy tokens after " and" into out; returns how many. */
static size_t continue_with(inlay_session* s, int32_t* out) {
    inlay_result* r = NULL;
    inlay_generate_params gp = capi_greedy(6, true);
    const int32_t* t;
    size_t n = 0;
    CHECK_STATUS(inlay_session_generate(s, " and", &gp, &r), INLAY_OK);
    t = inlay_result_tokens(r, &n);
    if (n > 6) n = 6;
    memcpy(out, t, n * sizeof(int32_t));
    inlay_result_free(r);
    return n;
}

int main(void) {
    inlay_model* model = capi_load_default();
    inlay_session* s = start(model);
    inlay_session* fresh = start(model);
    inlay_result* r = NULL;
    inlay_generate_params gp = capi_greedy(4, true);
    inlay_chat_params cp;
    inlay_chat_message messages[1];
    int32_t long_tokens[64];
    float* logits;
    size_t n_long = 0;
    const size_t before = capi_n_tokens(s);
    int32_t got[6], want[6];
    size_t n_got, n_want;
    inlay_model_info info;

    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    CHECK_STATUS(inlay_model_get_info(model, &info), INLAY_OK);
    CHECK(before == capi_n_tokens(fresh) && before > 4 && before < CONTEXT);
    CHECK_STATUS(inlay_tokenize(model, k_long, strlen(k_long), 0, long_tokens, 64, &n_long), INLAY_OK);
    /* The token calls take its first 28: too many now, room for them alone. */
    CHECK(n_long > CONTEXT);
    n_long = 28;
    CHECK(before + n_long > CONTEXT);

    /* generate */
    r = (inlay_result*)&r; /* not NULL: the call must clear it */
    CHECK_STATUS(inlay_session_generate(s, k_long, &gp, &r), INLAY_ERR_CONTEXT_FULL);
    CHECK(r == NULL);
    CHECK(strstr(inlay_last_error(), "context") != NULL);
    CHECK(capi_n_tokens(s) == before);
    /* generate_tokens */
    r = (inlay_result*)&r;
    CHECK_STATUS(inlay_session_generate_tokens(s, long_tokens, n_long, &gp, &r), INLAY_ERR_CONTEXT_FULL);
    CHECK(r == NULL);
    CHECK(capi_n_tokens(s) == before);
    /* eval_logits, with room for every row */
    logits = (float*)malloc(n_long * (size_t)info.n_vocab * sizeof(float));
    CHECK_STATUS(inlay_session_eval_logits(s, long_tokens, n_long, logits, n_long * (size_t)info.n_vocab),
                 INLAY_ERR_CONTEXT_FULL);
    CHECK(capi_n_tokens(s) == before);
    /* chat: the conversation alone does not fit */
    inlay_chat_params_init(&cp);
    cp.chat_template = k_template;
    messages[0].role = "user";
    messages[0].content = k_long;
    r = (inlay_result*)&r;
    CHECK_STATUS(inlay_session_chat(s, messages, 1, &cp, &gp, &r), INLAY_ERR_CONTEXT_FULL);
    CHECK(r == NULL);
    CHECK(capi_n_tokens(s) == before);

    /* Unchanged: the continuation is the one of a session that never saw those calls. */
    n_got = continue_with(s, got);
    n_want = continue_with(fresh, want);
    CHECK(n_got == 6 && n_want == 6 && memcmp(got, want, sizeof got) == 0);
    CHECK(capi_n_tokens(s) == capi_n_tokens(fresh));

    /* Generating into the limit: INLAY_OK, INLAY_STOP_CONTEXT_FULL, exactly full. */
    {
        inlay_generate_params lots = capi_greedy(100, true);
        size_t n = 0;
        const size_t at = capi_n_tokens(s);
        CHECK_STATUS(inlay_session_generate(s, "", &lots, &r), INLAY_OK);
        (void)inlay_result_tokens(r, &n);
        CHECK(inlay_result_stop_reason(r) == INLAY_STOP_CONTEXT_FULL);
        CHECK(n == CONTEXT - at);
        CHECK(capi_n_tokens(s) == CONTEXT);
        inlay_result_free(r);
        r = (inlay_result*)&r;
        CHECK_STATUS(inlay_session_generate_tokens(s, long_tokens, 1, &lots, &r), INLAY_ERR_CONTEXT_FULL);
        CHECK(r == NULL);
        CHECK_STATUS(inlay_session_eval_logits(s, long_tokens, 1, logits, (size_t)info.n_vocab), INLAY_ERR_CONTEXT_FULL);
        CHECK(capi_n_tokens(s) == CONTEXT);
        /* a reset makes room again */
        CHECK_STATUS(inlay_session_reset(s), INLAY_OK);
        CHECK_STATUS(inlay_session_eval_logits(s, long_tokens, n_long, logits, n_long * (size_t)info.n_vocab), INLAY_OK);
        CHECK(capi_n_tokens(s) == n_long);
        /* input that fills the context exactly: accepted, and no token past the limit
         * (the history never exceeds the context: it could not be restored) */
        {
            int32_t fill[CONTEXT];
            size_t k;
            for (k = 0; k < CONTEXT - n_long; ++k) fill[k] = 100 + (int32_t)k;
            CHECK_STATUS(inlay_session_generate_tokens(s, fill, CONTEXT - n_long, &lots, &r), INLAY_OK);
            (void)inlay_result_tokens(r, &n);
            CHECK(n == 0);
            CHECK(inlay_result_stop_reason(r) == INLAY_STOP_CONTEXT_FULL);
            CHECK(capi_n_tokens(s) == CONTEXT);
            inlay_result_free(r);
        }
    }

    free(logits);
    inlay_session_free(s);
    inlay_session_free(fresh);
    inlay_model_free(model);
    return capi_finish("capi_context_full");
}
