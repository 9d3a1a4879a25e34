/*
 * The model's own chat template (no chat_template in the params): a copy of the default
 * model's Hugging Face folder (links to its files) with a chat_template.jinja of its own.
 * inlay_chat_apply_template renders exactly that template, with the model's BOS text;
 * inlay_session_chat with NULL chat params generates what a fresh session generates from
 * those rendered tokens; a template in the params still takes precedence. The default
 * GGUF renders its own (Q/A) template; a folder without a template gives INLAY_ERR_MISSING.
 */
#define _POSIX_C_SOURCE 200809L
#include <sys/stat.h>

#include "capi_default_model.h"

static const char* k_own =
    "{{ bos_token }}{% for m in messages %}[{{ m.role | upper }}] {{ m.content }}\n{% endfor %}"
    "{% if add_generation_prompt %}[ASSISTANT]{% endif %}";

static void link_file(const char* dir, const char* name) {
    char from[4096], to[4096];
    const char* folder = capi_repo_model_path("default");
    if ((size_t)snprintf(from, sizeof from, "%s/%s", folder, name) >= sizeof from ||
        (size_t)snprintf(to, sizeof to, "%s/%s", dir, name) >= sizeof to) {
        fprintf(stderr, "path too long\n");
        exit(1);
    }
    unlink(to);
    if (symlink(from, to) != 0) {
        fprintf(stderr, "cannot link %s to %s\n", to, from);
        exit(1);
    }
}

int main(void) {
    char dir[2048], path[4096];
    const char* files[] = {"config.json", "model.safetensors", "tokenizer.model", "tokenizer_config.json",
                           "special_tokens_map.json", "generation_config.json"};
    inlay_model_params mp;
    inlay_model* model = NULL;
    inlay_model* gguf = capi_load_default();
    inlay_chat_message m[3] = {{"system", "Be brief."}, {"user", "Tell me a fortune."}, {"assistant", "You will"}};
    char text[2048];
    size_t length = 0, i;
    FILE* f;

    if ((size_t)snprintf(dir, sizeof dir, "%s/capi_chat_model_template", INLAY_BINARY_DIR) >= sizeof dir) return 1;
    mkdir(dir, 0755);
    for (i = 0; i < sizeof files / sizeof files[0]; ++i) link_file(dir, files[i]);
    if ((size_t)snprintf(path, sizeof path, "%s/chat_template.jinja", dir) >= sizeof path) return 1;
    f = fopen(path, "wb");
    if (!f || fputs(k_own, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        return 1;
    }
    inlay_model_params_init(&mp);
    mp.n_threads = 1;
    CHECK_STATUS(inlay_model_load(dir, &mp, &model), INLAY_OK);
    if (!model) return capi_finish("capi_chat_model_template");

    /* Rendered with the model's template and BOS text. */
    CHECK_STATUS(inlay_chat_apply_template(model, m, 2, NULL, text, sizeof text, &length), INLAY_OK);
    CHECK(strcmp(text, "<s>[SYSTEM] Be brief.\n[USER] Tell me a fortune.\n[ASSISTANT]") == 0);
    CHECK(length == strlen(text));
    printf("rendered: %s\n", text);

    /* A chat turn on it equals generating from the rendered tokens. */
    {
        int32_t rendered[256];
        size_t n_rendered = 0, n_chat = 0, n_plain = 0, n_prompt = 0;
        inlay_session* chat = NULL;
        inlay_session* plain = NULL;
        inlay_result* rc = NULL;
        inlay_result* rp = NULL;
        inlay_generate_params gp = capi_greedy(12, true);
        const int32_t* tc;
        const int32_t* tp;
        CHECK_STATUS(inlay_tokenize(model, text, length, INLAY_TOKENIZE_PARSE_SPECIAL, rendered, 256, &n_rendered),
                     INLAY_OK);
        CHECK(n_rendered > 0 && rendered[0] == 1); /* the template wrote BOS: not added twice */
        CHECK_STATUS(inlay_session_create(model, NULL, &chat), INLAY_OK);
        CHECK_STATUS(inlay_session_create(model, NULL, &plain), INLAY_OK);
        CHECK_STATUS(inlay_session_chat(chat, m, 2, NULL, &gp, &rc), INLAY_OK);
        CHECK_STATUS(inlay_session_generate_tokens(plain, rendered, n_rendered, &gp, &rp), INLAY_OK);
        tc = inlay_result_tokens(rc, &n_chat);
        tp = inlay_result_tokens(rp, &n_plain);
        (void)inlay_result_prompt_tokens(rc, &n_prompt);
        CHECK(n_prompt == n_rendered);
        CHECK(n_chat == 12 && n_plain == 12 && memcmp(tc, tp, 12 * sizeof(int32_t)) == 0);
        CHECK(capi_n_tokens(chat) == n_rendered + 12);
        inlay_result_free(rc);
        inlay_result_free(rp);
        inlay_session_free(chat);
        inlay_session_free(plain);
    }

    /* A template in the params wins over the model's. */
    {
        inlay_chat_params cp;
        inlay_chat_params_init(&cp);
        cp.chat_template = "{% for m in messages %}<{{ m.role }}>{% endfor %}";
        CHECK_STATUS(inlay_chat_apply_template(model, m, 3, &cp, text, sizeof text, &length), INLAY_OK);
        CHECK(strcmp(text, "<system><user><assistant>") == 0);
    }
    /* add_generation_prompt false, through the model's template */
    {
        inlay_chat_params cp;
        inlay_chat_params_init(&cp);
        cp.add_generation_prompt = false;
        CHECK_STATUS(inlay_chat_apply_template(model, m, 3, &cp, text, sizeof text, &length), INLAY_OK);
        CHECK(strcmp(text, "<s>[SYSTEM] Be brief.\n[USER] Tell me a fortune.\n[ASSISTANT] You will\n") == 0);
    }
    /* The default GGUF's own template: Q/A lines. */
    CHECK_STATUS(inlay_chat_apply_template(gguf, m, 2, NULL, text, sizeof text, &length), INLAY_OK);
    CHECK(strcmp(text, "Be brief.\nQ: Tell me a fortune.\nA:") == 0);
    /* A model without a template: INLAY_ERR_MISSING, for rendering and for chat. */
    {
        inlay_model* plain_model = NULL;
        inlay_session* s = NULL;
        inlay_result* r = NULL;
        const char* config = "{\"add_bos_token\": true, \"bos_token\": \"<s>\", \"eos_token\": \"</s>\"}";
        if ((size_t)snprintf(dir, sizeof dir, "%s/capi_chat_no_template", INLAY_BINARY_DIR) >= sizeof dir) return 1;
        mkdir(dir, 0755);
        for (i = 0; i < sizeof files / sizeof files[0]; ++i)
            if (strcmp(files[i], "tokenizer_config.json") != 0) link_file(dir, files[i]);
        if ((size_t)snprintf(path, sizeof path, "%s/tokenizer_config.json", dir) >= sizeof path) return 1;
        unlink(path);
        f = fopen(path, "wb");
        if (!f || fputs(config, f) < 0 || fclose(f) != 0) {
            fprintf(stderr, "cannot write %s\n", path);
            return 1;
        }
        CHECK_STATUS(inlay_model_load(dir, &mp, &plain_model), INLAY_OK);
        if (!plain_model) return capi_finish("capi_chat_model_template");
        CHECK_STATUS(inlay_chat_apply_template(plain_model, m, 2, NULL, text, sizeof text, &length),
                     INLAY_ERR_MISSING);
        CHECK_STATUS(inlay_session_create(plain_model, NULL, &s), INLAY_OK);
        CHECK_STATUS(inlay_session_chat(s, m, 2, NULL, NULL, &r), INLAY_ERR_MISSING);
        CHECK(r == NULL);
        CHECK(capi_n_tokens(s) == 0);
        inlay_session_free(s);
        inlay_model_free(plain_model);
    }

    inlay_model_free(model);
    inlay_model_free(gguf);
    return capi_finish("capi_chat_model_template");
}
