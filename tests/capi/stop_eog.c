/*
 * Stopping at an end-of-generation token, the default path (ignore_eos false): greedy
 * decoding of the default model from "You will" reaches EOS well before max_tokens. The
 * call returns INLAY_OK with INLAY_STOP_EOG; the EOS token ends the result's tokens (and
 * the session's history) but is neither streamed through on_token nor part of the text.
 * That EOS is the model's own greedy choice is checked independently of generate: the
 * teacher-forced logits (inlay_session_eval_logits) after the tokens before it have their
 * maximum at EOS. With ignore_eos the same tokens come out and generation goes on past it.
 */
#define _POSIX_C_SOURCE 200809L
#include "capi_default_model.h"

enum { MAX_GEN = 200 };

typedef struct {
    int calls;
    int saw_eos;
    int32_t eos;
    char text[4096];
    size_t length;
} Stream;

static bool on_token(int32_t token, const char* piece, size_t len, void* user) {
    Stream* s = (Stream*)user;
    ++s->calls;
    if (token == s->eos) s->saw_eos = 1;
    if (s->length + len < sizeof s->text) {
        memcpy(s->text + s->length, piece, len);
        s->length += len;
        s->text[s->length] = '\0';
    }
    return true;
}

int main(void) {
    inlay_model* model = capi_load_default();
    inlay_model_info info;
    inlay_session* s = NULL;
    inlay_session* check = NULL;
    inlay_result* r = NULL;
    inlay_generate_params gp = capi_greedy(MAX_GEN, false);
    Stream stream;
    const int32_t* tokens;
    const int32_t* prompt;
    size_t n = 0, n_prompt = 0, i;
    int32_t generated[MAX_GEN];

    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    CHECK_STATUS(inlay_model_get_info(model, &info), INLAY_OK);
    CHECK(info.eos_token >= 0);
    memset(&stream, 0, sizeof stream);
    stream.eos = info.eos_token;
    gp.on_token = on_token;
    gp.user = &stream;

    CHECK_STATUS(inlay_session_create(model, NULL, &s), INLAY_OK);
    CHECK_STATUS(inlay_session_generate(s, "You will", &gp, &r), INLAY_OK);
    CHECK(r != NULL);
    if (!r) return capi_finish("capi_stop_eog");
    tokens = inlay_result_tokens(r, &n);
    prompt = inlay_result_prompt_tokens(r, &n_prompt);
    printf("stopped after %zu tokens: \"%s\"\n", n, inlay_result_text(r));
    CHECK(inlay_result_stop_reason(r) == INLAY_STOP_EOG);
    CHECK(n >= 2 && n < MAX_GEN);
    CHECK(n >= 1 && tokens[n - 1] == info.eos_token);
    for (i = 0; i + 1 < n; ++i) CHECK(tokens[i] != info.eos_token); /* the first EOS ends it */
    /* Streamed: every token but the EOS; the text is what was streamed. */
    CHECK(stream.calls == (int)n - 1);
    CHECK(!stream.saw_eos);
    CHECK(strcmp(stream.text, inlay_result_text(r)) == 0);
    CHECK(strlen(inlay_result_text(r)) > 0 && strstr(inlay_result_text(r), "</s>") == NULL);
    /* The history holds the prompt and every generated token, EOS included. */
    CHECK(capi_n_tokens(s) == n_prompt + n);
    memcpy(generated, tokens, (n < MAX_GEN ? n : MAX_GEN) * sizeof(int32_t));

    /* Independently: the logits after the prompt and the tokens before EOS favour EOS. */
    if (n >= 1 && n < MAX_GEN) {
        const size_t n_in = n_prompt + n - 1;
        const size_t n_vocab = (size_t)info.n_vocab;
        int32_t* in = (int32_t*)malloc(n_in * sizeof(int32_t));
        float* logits = (float*)malloc(n_in * n_vocab * sizeof(float));
        const float* last;
        size_t best = 0, v;
        memcpy(in, prompt, n_prompt * sizeof(int32_t));
        memcpy(in + n_prompt, generated, (n - 1) * sizeof(int32_t));
        CHECK_STATUS(inlay_session_create(model, NULL, &check), INLAY_OK);
        CHECK_STATUS(inlay_session_eval_logits(check, in, n_in, logits, n_in * n_vocab), INLAY_OK);
        last = logits + (n_in - 1) * n_vocab;
        for (v = 1; v < n_vocab; ++v)
            if (last[v] > last[best]) best = v;
        CHECK((int32_t)best == info.eos_token);
        inlay_session_free(check);
        free(in);
        free(logits);
    }
    inlay_result_free(r);
    r = NULL;

    /* ignore_eos: the same tokens, EOS included, and then more (max_tokens ends it). */
    {
        inlay_session* t = NULL;
        size_t m = 0;
        const int32_t* more;
        inlay_generate_params all = capi_greedy((int32_t)n + 8, true);
        CHECK_STATUS(inlay_session_create(model, NULL, &t), INLAY_OK);
        CHECK_STATUS(inlay_session_generate(t, "You will", &all, &r), INLAY_OK);
        more = inlay_result_tokens(r, &m);
        CHECK(inlay_result_stop_reason(r) == INLAY_STOP_MAX_TOKENS);
        CHECK(m == n + 8);
        CHECK(m >= n && memcmp(more, generated, n * sizeof(int32_t)) == 0);
        inlay_result_free(r);
        inlay_session_free(t);
    }

    /* The conversation goes on after an EOS stop: the next call continues the history. */
    {
        inlay_generate_params next = capi_greedy(4, true);
        const size_t before = capi_n_tokens(s);
        size_t m = 0, m_prompt = 0;
        CHECK_STATUS(inlay_session_generate(s, " Then", &next, &r), INLAY_OK);
        (void)inlay_result_tokens(r, &m);
        (void)inlay_result_prompt_tokens(r, &m_prompt);
        CHECK(m == 4);
        CHECK(capi_n_tokens(s) == before + m_prompt + m);
        inlay_result_free(r);
    }

    inlay_session_free(s);
    inlay_model_free(model);
    return capi_finish("capi_stop_eog");
}
