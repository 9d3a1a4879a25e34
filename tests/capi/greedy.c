/*
 * Greedy generation from BOS on stories260K reproduces llama2.c's published sample,
 * shared/testdata/models/stories260K.greedy.txt (256 tokens; the file adds one final
 * newline), and the streamed pieces add up to the result's text.
 */
#include "capi_test.h"

typedef struct {
    char* text;
    size_t length;
    size_t capacity;
    size_t calls;
} Stream;

static bool collect(int32_t token, const char* piece, size_t len, void* user) {
    Stream* s = (Stream*)user;
    (void)token;
    if (s->length + len + 1 > s->capacity) {
        size_t cap = (s->capacity + len + 1) * 2;
        char* grown = (char*)realloc(s->text, cap);
        if (!grown) return false;
        s->text = grown;
        s->capacity = cap;
    }
    memcpy(s->text + s->length, piece, len);
    s->length += len;
    s->text[s->length] = '\0';
    s->calls++;
    return true;
}

int main(void) {
    /* README: the first generated ids */
    const int32_t first_ids[20] = {403, 407, 261, 378, 432, 383, 286, 261, 376, 298,
                                   315, 421, 395, 317, 426, 338, 401, 396, 267, 337};
    char path[4096];
    size_t expected_len = 0;
    char* expected;
    inlay_model* model;
    inlay_session* session = NULL;
    inlay_generate_params gp;
    inlay_result* result = NULL;
    Stream stream = {NULL, 0, 0, 0};
    const int32_t* tokens;
    const int32_t* prompt;
    size_t n = 0;
    size_t i;

    capi_testdata(path, sizeof path, "models/stories260K.greedy.txt");
    expected = capi_read_file(path, &expected_len);
    CHECK(expected_len > 0 && expected[expected_len - 1] == '\n');
    if (expected_len > 0) expected[--expected_len] = '\0';

    model = capi_load_stories(0);
    CHECK_STATUS(inlay_session_create(model, NULL, &session), INLAY_OK);
    inlay_generate_params_init(&gp);
    gp.temperature = 0.0f;
    gp.max_tokens = 256;
    gp.on_token = collect;
    gp.user = &stream;
    CHECK_STATUS(inlay_session_generate(session, "", &gp, &result), INLAY_OK);
    if (result) {
        const char* text = inlay_result_text(result);
        prompt = inlay_result_prompt_tokens(result, &n);
        CHECK(n == 1 && prompt[0] == 1);
        tokens = inlay_result_tokens(result, &n);
        CHECK(n == 256);
        for (i = 0; i < 20 && i < n; ++i) CHECK(tokens[i] == first_ids[i]);
        CHECK(inlay_result_stop_reason(result) == INLAY_STOP_MAX_TOKENS);
        CHECK(strcmp(text, expected) == 0);
        if (strcmp(text, expected) != 0) fprintf(stderr, "got:\n%s\nexpected:\n%s\n", text, expected);
        CHECK(stream.text != NULL && strcmp(stream.text, text) == 0);
        CHECK(stream.calls == 256);
    }
    inlay_result_free(result);
    inlay_session_free(session);
    inlay_model_free(model);
    free(stream.text);
    free(expected);
    return capi_finish("capi_greedy");
}
