/*
 * The chat calls: inlay_chat_apply_template renders a conversation; inlay_session_chat
 * processes only the part of the rendered conversation that the session lacks, and
 * generates exactly what a fresh session generates from the whole rendered
 * conversation, also when an earlier message changes (the session then recomputes from
 * the first differing token). Errors: missing or broken templates, bad messages.
 * Model: the random Qwen3-shaped llamacpp-refs/qwen3-r256-f32.gguf (its vocabulary has
 * <|im_start|> and <|im_end|>), with a ChatML template passed in the params.
 */
#include "capi_test.h"

static const char* k_chatml =
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n{% endif %}";

/* The tokens of the rendered conversation (special tokens parsed, no BOS added). */
static size_t render_tokens(inlay_model* model, const inlay_chat_message* m, size_t n, const inlay_chat_params* cp,
                            int32_t* out, size_t capacity) {
    char text[8192];
    size_t length = 0;
    size_t n_tokens = 0;
    CHECK_STATUS(inlay_chat_apply_template(model, m, n, cp, text, sizeof text, &length), INLAY_OK);
    CHECK_STATUS(inlay_tokenize(model, text, length, INLAY_TOKENIZE_PARSE_SPECIAL, out, capacity, &n_tokens), INLAY_OK);
    return n_tokens;
}

/* Generates greedily from `tokens` on a fresh session; returns the generated ids. */
static size_t fresh_generate(inlay_model* model, const int32_t* tokens, size_t n, const inlay_generate_params* gp,
                             int32_t* out) {
    inlay_session* s = NULL;
    inlay_result* r = NULL;
    const int32_t* ids;
    size_t n_ids = 0;
    CHECK_STATUS(inlay_session_create(model, NULL, &s), INLAY_OK);
    CHECK_STATUS(inlay_session_generate_tokens(s, tokens, n, gp, &r), INLAY_OK);
    ids = inlay_result_tokens(r, &n_ids);
    memcpy(out, ids, n_ids * sizeof(int32_t));
    inlay_result_free(r);
    inlay_session_free(s);
    return n_ids;
}

/* One chat turn; checks it against a fresh session on the whole conversation and
 * returns the number of prompt tokens it processed. The reply goes to reply[]. The
 * count is also checked where the work is measured: the call's timings and the
 * model's metrics (tokens_prefilled grows by what was computed, the prompt tokens less
 * those whose KV came from the prefix cache). */
static size_t chat_turn(inlay_model* model, inlay_session* s, const inlay_chat_message* m, size_t n,
                        const inlay_chat_params* cp, const inlay_generate_params* gp, char* reply, size_t cap) {
    int32_t all[2048];
    int32_t expected[64];
    const int32_t* ids;
    size_t n_ids = 0;
    size_t n_prompt = 0;
    size_t n_all = render_tokens(model, m, n, cp, all, 2048);
    size_t n_expected = fresh_generate(model, all, n_all, gp, expected);
    size_t n_session = 0;
    inlay_result* r = NULL;
    inlay_metrics before;
    inlay_metrics after;
    inlay_timings timings;
    memset(&before, 0, sizeof before);
    memset(&after, 0, sizeof after);
    memset(&timings, 0, sizeof timings);
    before.struct_size = after.struct_size = sizeof(inlay_metrics);
    timings.struct_size = sizeof timings;
    CHECK_STATUS(inlay_model_get_metrics(model, &before), INLAY_OK);
    CHECK_STATUS(inlay_session_chat(s, m, n, cp, gp, &r), INLAY_OK);
    if (!r) return 0;
    CHECK_STATUS(inlay_model_get_metrics(model, &after), INLAY_OK);
    CHECK_STATUS(inlay_result_timings(r, &timings), INLAY_OK);
    ids = inlay_result_tokens(r, &n_ids);
    CHECK(n_ids == n_expected && n_ids > 0);
    CHECK(n_ids == n_expected && memcmp(ids, expected, n_ids * sizeof(int32_t)) == 0);
    inlay_result_prompt_tokens(r, &n_prompt);
    CHECK(n_prompt >= 1 && n_prompt <= n_all);
    CHECK(timings.prompt_tokens == (int64_t)n_prompt && timings.generated_tokens == (int64_t)n_ids);
    CHECK(timings.prompt_tokens_reused >= 0 && timings.prompt_tokens_reused < timings.prompt_tokens);
    CHECK(after.tokens_prefilled - before.tokens_prefilled == timings.prompt_tokens - timings.prompt_tokens_reused);
    CHECK(after.tokens_generated - before.tokens_generated == (int64_t)n_ids);
    CHECK_STATUS(inlay_session_n_tokens(s, &n_session), INLAY_OK);
    CHECK(n_session == n_all + n_ids);
    snprintf(reply, cap, "%s", inlay_result_text(r));
    inlay_result_free(r);
    return n_prompt;
}

int main(void) {
    char path[4096];
    inlay_model_params mp;
    inlay_model* model = NULL;
    inlay_session* s = NULL;
    inlay_chat_params cp;
    inlay_generate_params gp;
    inlay_chat_message m[6];
    char text[4096];
    char reply1[1024];
    char reply2[1024];
    size_t length = 0;
    size_t first_prompt, second_prompt, third_prompt;
    int32_t all[2048];
    size_t n_all;
    inlay_result* r = NULL;

    capi_testdata(path, sizeof path, "llamacpp-refs/qwen3-r256-f32.gguf");
    inlay_model_params_init(&mp);
    mp.n_threads = 1;
    CHECK_STATUS(inlay_model_load(path, &mp, &model), INLAY_OK);
    if (!model) return capi_finish("capi_chat");
    CHECK_STATUS(inlay_session_create(model, NULL, &s), INLAY_OK);

    inlay_chat_params_init(&cp);
    CHECK(cp.add_generation_prompt && cp.thinking == INLAY_THINKING_DEFAULT && cp.chat_template == NULL);
    cp.chat_template = k_chatml;
    inlay_generate_params_init(&gp);
    gp.temperature = 0.0f;
    gp.max_tokens = 6;
    gp.ignore_eos = true;

    /* Rendering, with the size query. */
    m[0].role = "system";
    m[0].content = "Be brief.";
    m[1].role = "user";
    m[1].content = "Hello there";
    CHECK_STATUS(inlay_chat_apply_template(model, m, 2, &cp, NULL, 0, &length), INLAY_ERR_BUFFER_TOO_SMALL);
    CHECK(length == strlen("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello there<|im_end|>\n"
                           "<|im_start|>assistant\n"));
    CHECK_STATUS(inlay_chat_apply_template(model, m, 2, &cp, text, sizeof text, &length), INLAY_OK);
    CHECK(strcmp(text, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello there<|im_end|>\n"
                       "<|im_start|>assistant\n") == 0);
    cp.thinking = INLAY_THINKING_OFF;
    CHECK_STATUS(inlay_chat_apply_template(model, m, 2, &cp, text, sizeof text, &length), INLAY_OK);
    CHECK(length > 20 && strcmp(text + length - 19, "<think>\n\n</think>\n\n") == 0);
    cp.thinking = INLAY_THINKING_DEFAULT;
    cp.add_generation_prompt = false;
    CHECK_STATUS(inlay_chat_apply_template(model, m, 2, &cp, text, sizeof text, &length), INLAY_OK);
    CHECK(strstr(text, "assistant") == NULL);
    cp.add_generation_prompt = true;

    /* Turn 1: the whole conversation is new. */
    n_all = render_tokens(model, m, 2, &cp, all, 2048);
    first_prompt = chat_turn(model, s, m, 2, &cp, &gp, reply1, sizeof reply1);
    CHECK(first_prompt == n_all);

    /* Turn 2: only the new part (the reply's end marker onwards) is processed. */
    m[2].role = "assistant";
    m[2].content = reply1;
    m[3].role = "user";
    m[3].content = "And then?";
    n_all = render_tokens(model, m, 4, &cp, all, 2048);
    second_prompt = chat_turn(model, s, m, 4, &cp, &gp, reply2, sizeof reply2);
    CHECK(second_prompt > 0 && second_prompt < n_all / 2);

    /* Turn 3 with an edited first message: recomputed from there, same result as fresh. */
    m[4].role = "assistant";
    m[4].content = reply2;
    m[5].role = "user";
    m[5].content = "Thanks";
    m[1].content = "Hello here";
    n_all = render_tokens(model, m, 6, &cp, all, 2048);
    third_prompt = chat_turn(model, s, m, 6, &cp, &gp, reply2, sizeof reply2);
    CHECK(third_prompt > n_all / 2 && third_prompt < n_all);
    m[1].content = "Hello there";

    /* Errors. */
    cp.chat_template = NULL; /* the GGUF has no tokenizer.chat_template */
    CHECK_STATUS(inlay_chat_apply_template(model, m, 2, &cp, text, sizeof text, &length), INLAY_ERR_MISSING);
    CHECK_STATUS(inlay_session_chat(s, m, 2, &cp, &gp, &r), INLAY_ERR_MISSING);
    CHECK(r == NULL);
    cp.chat_template = "{% for m in messages %}\n{{ m.role | nope }}{% endfor %}";
    CHECK_STATUS(inlay_chat_apply_template(model, m, 2, &cp, text, sizeof text, &length), INLAY_ERR_UNSUPPORTED);
    CHECK(strstr(inlay_last_error(), "chat template:2:11: unknown filter 'nope'") != NULL);
    cp.chat_template = "{% if messages %}never closed";
    CHECK_STATUS(inlay_session_chat(s, m, 2, &cp, &gp, &r), INLAY_ERR_BAD_FORMAT);
    cp.chat_template = "{{ raise_exception('Conversation roles must alternate') }}";
    CHECK_STATUS(inlay_session_chat(s, m, 2, &cp, &gp, &r), INLAY_ERR_INVALID_ARGUMENT);
    CHECK(strstr(inlay_last_error(), "Conversation roles must alternate") != NULL);
    cp.chat_template = k_chatml;
    m[0].role = NULL;
    CHECK_STATUS(inlay_session_chat(s, m, 2, &cp, &gp, &r), INLAY_ERR_INVALID_ARGUMENT);
    CHECK(strstr(inlay_last_error(), "messages[0].role is NULL") != NULL);
    m[0].role = "system";
    m[1].content = "bad \xC3";
    CHECK_STATUS(inlay_session_chat(s, m, 2, &cp, &gp, &r), INLAY_ERR_INVALID_UTF8);
    m[1].content = "Hello there";
    cp.thinking = (inlay_thinking)7;
    CHECK_STATUS(inlay_chat_apply_template(model, m, 2, &cp, text, sizeof text, &length), INLAY_ERR_INVALID_ARGUMENT);
    cp.thinking = INLAY_THINKING_DEFAULT;
    CHECK_STATUS(inlay_session_chat(NULL, m, 2, &cp, &gp, &r), INLAY_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(inlay_session_chat(s, NULL, 2, &cp, &gp, &r), INLAY_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(inlay_chat_apply_template(NULL, m, 2, &cp, text, sizeof text, &length), INLAY_ERR_INVALID_ARGUMENT);
    /* A conversation longer than the session's context. */
    {
        inlay_session_params sp;
        inlay_session* small = NULL;
        inlay_session_params_init(&sp);
        sp.context_length = 8;
        CHECK_STATUS(inlay_session_create(model, &sp, &small), INLAY_OK);
        CHECK_STATUS(inlay_session_chat(small, m, 2, &cp, &gp, &r), INLAY_ERR_CONTEXT_FULL);
        inlay_session_free(small);
    }

    inlay_session_free(s);
    inlay_model_free(model);
    return capi_finish("capi_chat");
}
