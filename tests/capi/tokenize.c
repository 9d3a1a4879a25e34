/*
 * C ABI: the size-query convention of inlay_tokenize and inlay_detokenize, BOS and
 * special-token flags, on stories260K. Expected ids: "Once upon a time" is the start
 * of the model's greedy story, whose first ids shared/testdata/README.md lists
 * (403 407 261 378), after BOS = 1.
 */
#include "capi_test.h"

static void check_tokenize(inlay_model* model) {
    const char* text = "Once upon a time";
    const int32_t expected[5] = {1, 403, 407, 261, 378};
    int32_t ids[8];
    size_t n = 0;
    size_t i;

    /* size query: NULL buffer with capacity 0 */
    CHECK_STATUS(inlay_tokenize(model, text, strlen(text), INLAY_TOKENIZE_ADD_BOS, NULL, 0, &n),
                 INLAY_ERR_BUFFER_TOO_SMALL);
    CHECK(n == 5);
    /* one short */
    n = 0;
    CHECK_STATUS(inlay_tokenize(model, text, strlen(text), INLAY_TOKENIZE_ADD_BOS, ids, 4, &n),
                 INLAY_ERR_BUFFER_TOO_SMALL);
    CHECK(n == 5);
    /* exact */
    n = 0;
    CHECK_STATUS(inlay_tokenize(model, text, strlen(text), INLAY_TOKENIZE_ADD_BOS, ids, 5, &n), INLAY_OK);
    CHECK(n == 5);
    for (i = 0; i < 5 && n == 5; ++i) CHECK(ids[i] == expected[i]);
    /* without BOS */
    CHECK_STATUS(inlay_tokenize(model, text, strlen(text), 0, ids, 8, &n), INLAY_OK);
    CHECK(n == 4);
    for (i = 0; i < 4 && n == 4; ++i) CHECK(ids[i] == expected[i + 1]);
    /* `len` bytes are used, not up to a NUL: "Once" only */
    CHECK_STATUS(inlay_tokenize(model, text, 4, 0, ids, 8, &n), INLAY_OK);
    CHECK(n == 1 && ids[0] == 403);
    /* empty text: BOS alone, or nothing */
    CHECK_STATUS(inlay_tokenize(model, "", 0, INLAY_TOKENIZE_ADD_BOS, ids, 8, &n), INLAY_OK);
    CHECK(n == 1 && ids[0] == 1);
    CHECK_STATUS(inlay_tokenize(model, NULL, 0, 0, NULL, 0, &n), INLAY_OK);
    CHECK(n == 0);
    /* special-token text */
    CHECK_STATUS(inlay_tokenize(model, "<s>", 3, INLAY_TOKENIZE_PARSE_SPECIAL, ids, 8, &n), INLAY_OK);
    CHECK(n == 1 && ids[0] == 1);
    CHECK_STATUS(inlay_tokenize(model, "<s>", 3, 0, ids, 8, &n), INLAY_OK);
    CHECK(n >= 2);
    for (i = 0; i < n && i < 8; ++i) CHECK(ids[i] != 1);
    /* bad arguments */
    CHECK_STATUS(inlay_tokenize(model, text, strlen(text), 0, NULL, 4, &n), INLAY_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(inlay_tokenize(model, text, strlen(text), 0, ids, 8, NULL), INLAY_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(inlay_tokenize(model, NULL, 3, 0, ids, 8, &n), INLAY_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(inlay_tokenize(model, text, strlen(text), 0x100, ids, 8, &n), INLAY_ERR_INVALID_ARGUMENT);
}

static void check_detokenize(inlay_model* model) {
    const int32_t ids[5] = {1, 403, 407, 261, 378};
    const char* expected = "Once upon a time";
    char buf[64];
    size_t length = 0;

    CHECK_STATUS(inlay_detokenize(model, ids, 5, false, NULL, 0, &length), INLAY_ERR_BUFFER_TOO_SMALL);
    CHECK(length == strlen(expected));
    /* the NUL needs room too */
    memset(buf, 'x', sizeof buf);
    CHECK_STATUS(inlay_detokenize(model, ids, 5, false, buf, strlen(expected), &length), INLAY_ERR_BUFFER_TOO_SMALL);
    CHECK(length == strlen(expected));
    CHECK_STATUS(inlay_detokenize(model, ids, 5, false, buf, strlen(expected) + 1, &length), INLAY_OK);
    CHECK(length == strlen(expected));
    CHECK(strcmp(buf, expected) == 0);
    /* control tokens render only on request */
    CHECK_STATUS(inlay_detokenize(model, ids, 5, true, buf, sizeof buf, &length), INLAY_OK);
    CHECK(strstr(buf, "<s>") != NULL);
    CHECK(strstr(buf, "upon a time") != NULL);
    CHECK(length == strlen(buf));
    /* nothing to decode */
    CHECK_STATUS(inlay_detokenize(model, NULL, 0, false, buf, sizeof buf, &length), INLAY_OK);
    CHECK(length == 0 && buf[0] == '\0');
    CHECK_STATUS(inlay_detokenize(model, ids, 5, false, buf, sizeof buf, NULL), INLAY_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(inlay_detokenize(model, ids, 5, false, NULL, 8, &length), INLAY_ERR_INVALID_ARGUMENT);
}

int main(void) {
    inlay_model* model = capi_load_stories(0);
    check_tokenize(model);
    check_detokenize(model);
    inlay_model_free(model);
    return capi_finish("capi_tokenize");
}
