/*
 * The final on_token call: text held back during generation is delivered at the end
 * with token -1, and the streamed pieces add up to the result's text.
 * - A stop string's partial match: the greedy text T of 12 tokens is generated again with
 *   the stop string (T's last 3 characters + "\x01"), which never completes; those 3
 *   characters are held back until the end and come in one last call with token -1.
 * - An unfinished character: a seeded sampling run (searched over seeds, so the test does
 *   not depend on one sampler's stream) whose last token is the first byte of a multi-byte
 *   character ends with U+FFFD delivered the same way.
 * - on_token returning false: nothing is delivered after it (the held-back text is still
 *   the result's).
 */
#define _POSIX_C_SOURCE 200809L
#include "capi_default_model.h"

typedef struct {
    int calls;
    int32_t last_token;
    char last_piece[64];
    char text[4096];
    size_t length;
    int stop_after; /* on_token returns false at this call (0 = never) */
} Stream;

static bool on_token(int32_t token, const char* piece, size_t len, void* user) {
    Stream* s = (Stream*)user;
    ++s->calls;
    s->last_token = token;
    if (len < sizeof s->last_piece) {
        memcpy(s->last_piece, piece, len);
        s->last_piece[len] = '\0';
    }
    if (strlen(piece) != len) s->last_piece[0] = '\x7f'; /* the piece must be NUL-terminated at len */
    if (s->length + len < sizeof s->text) {
        memcpy(s->text + s->length, piece, len);
        s->length += len;
        s->text[s->length] = '\0';
    }
    return s->stop_after == 0 || s->calls < s->stop_after;
}

/* Byte offset where the last `k` UTF-8 characters of text start. */
static size_t last_chars(const char* text, size_t k) {
    size_t at = strlen(text);
    while (k > 0 && at > 0) {
        --at;
        if (((unsigned char)text[at] & 0xC0) != 0x80) --k;
    }
    return at;
}

int main(void) {
    inlay_model* model = capi_load_default();
    inlay_session* s = NULL;
    inlay_result* r = NULL;
    inlay_generate_params gp = capi_greedy(12, true);
    Stream stream;
    char plain[4096];
    char stop_text[64];
    const char* stops[1];
    size_t tail_at, n = 0;

    CHECK_STATUS(inlay_session_create(model, NULL, &s), INLAY_OK);

    /* 1. A stop string that starts to match at the end and never completes. */
    CHECK_STATUS(inlay_session_generate(s, "You will", &gp, &r), INLAY_OK);
    snprintf(plain, sizeof plain, "%s", inlay_result_text(r));
    inlay_result_free(r);
    tail_at = last_chars(plain, 3);
    CHECK(strlen(plain) >= 3 && strlen(plain) - tail_at < 20);
    snprintf(stop_text, sizeof stop_text, "%s\x01", plain + tail_at);
    printf("text \"%s\", stop string \"%s\\x01\"\n", plain, plain + tail_at);
    stops[0] = stop_text;
    CHECK_STATUS(inlay_session_reset(s), INLAY_OK);
    memset(&stream, 0, sizeof stream);
    gp.stop = stops;
    gp.n_stop = 1;
    gp.on_token = on_token;
    gp.user = &stream;
    CHECK_STATUS(inlay_session_generate(s, "You will", &gp, &r), INLAY_OK);
    (void)inlay_result_tokens(r, &n);
    CHECK(n == 12);
    CHECK(inlay_result_stop_reason(r) == INLAY_STOP_MAX_TOKENS);
    CHECK(strcmp(inlay_result_text(r), plain) == 0);
    CHECK(stream.calls == 13); /* 12 tokens, then the held-back text */
    CHECK(stream.last_token == -1);
    CHECK(strcmp(stream.last_piece, plain + tail_at) == 0);
    CHECK(strcmp(stream.text, plain) == 0);
    inlay_result_free(r);

    /* 1b. The same run stopped by on_token at its last token: no call after it. */
    CHECK_STATUS(inlay_session_reset(s), INLAY_OK);
    memset(&stream, 0, sizeof stream);
    stream.stop_after = 12;
    CHECK_STATUS(inlay_session_generate(s, "You will", &gp, &r), INLAY_OK);
    CHECK(inlay_result_stop_reason(r) == INLAY_STOP_CALLBACK);
    CHECK(stream.calls == 12 && stream.last_token != -1);
    CHECK(strcmp(inlay_result_text(r), plain) == 0); /* held-back text is still the result's */
    CHECK(strlen(stream.text) == tail_at && strncmp(stream.text, plain, tail_at) == 0);
    inlay_result_free(r);

    /* 2. A run ending inside a multi-byte character: U+FFFD in the last call. */
    {
        uint64_t seed;
        int found = 0;
        inlay_generate_params sp;
        inlay_generate_params_init(&sp);
        sp.temperature = 3.0f;
        sp.top_k = 0;
        sp.top_p = 1.0f;
        sp.min_p = 0.0f;
        sp.max_tokens = 2;
        sp.ignore_eos = true;
        sp.on_token = on_token;
        sp.user = &stream;
        for (seed = 1; seed <= 20000 && !found; ++seed) {
            CHECK_STATUS(inlay_session_reset(s), INLAY_OK);
            memset(&stream, 0, sizeof stream);
            sp.seed = seed;
            CHECK_STATUS(inlay_session_generate(s, "You will", &sp, &r), INLAY_OK);
            if (stream.last_token == -1) {
                const char* text = inlay_result_text(r);
                found = 1;
                printf("seed %llu ends inside a character: \"%s\"\n", (unsigned long long)seed, text);
                CHECK(stream.calls == 3);
                CHECK(strcmp(stream.last_piece, "\xEF\xBF\xBD") == 0);
                CHECK(strlen(text) >= 3 && strcmp(text + strlen(text) - 3, "\xEF\xBF\xBD") == 0);
                CHECK(strcmp(stream.text, text) == 0);
            }
            inlay_result_free(r);
        }
        CHECK(found); /* ~1 run in 500 ends so with this model */
    }

    inlay_session_free(s);
    inlay_model_free(model);
    return capi_finish("capi_flush");
}
