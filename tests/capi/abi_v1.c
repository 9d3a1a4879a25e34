/*
 * ABI discipline (docs/ABI.md), C99. A program compiled against version 1 of inlay.h
 * (its structs are copied in abi_v1_structs.h) keeps working with this library: the
 * structs it passes may be smaller than today's (fields appended since then take their
 * defaults), every field it sets is honoured, and out-structs are written up to its
 * struct_size and never beyond (a canary follows each). A struct_size larger than the
 * library's is accepted when the bytes the library does not know are zero, and rejected
 * with INLAY_ERR_INVALID_ARGUMENT when they are not. Uses the default model in models/.
 */
#include <stddef.h>

#include "abi_v1_structs.h"
#include "capi_test.h"

#define MODEL model_path()
#define CANARY 0xA5
#define SLACK 64 /* canary bytes after each struct */
#define EXTRA 16 /* bytes past the library's struct in the "larger struct_size" checks */

/* size + SLACK bytes, all CANARY: a struct of `size` bytes with a canary after it. */
static void* filled(size_t size) {
    unsigned char* p = (unsigned char*)malloc(size + SLACK);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    memset(p, CANARY, size + SLACK);
    return p;
}

static int all_bytes(const void* p, size_t from, size_t to, unsigned char value) {
    const unsigned char* b = (const unsigned char*)p;
    size_t i;
    for (i = from; i < to; ++i)
        if (b[i] != value) return 0;
    return 1;
}

/* The default model of this checkout (INLAY_SOURCE_DIR from the environment, else from
 * the build, as tests/support does); it is part of the repository, so it is never skipped. */
static const char* model_path(void) {
    static char path[4096];
    const char* dir;
    if (path[0]) return path;
    dir = getenv("INLAY_SOURCE_DIR");
    if (!dir || !*dir) dir = INLAY_SOURCE_DIR;
    if ((size_t)snprintf(path, sizeof path, "%s/models/default-q8_0.gguf", dir) >= sizeof path) {
        fprintf(stderr, "path too long: %s/models/default-q8_0.gguf\n", dir);
        exit(1);
    }
    return path;
}

static int error_mentions(const char* what) { return strstr(inlay_last_error(), what) != NULL; }

/* ------------------------------------------------------------ layout --- */

/* Today's structs only append to v1: every v1 field is where it was, with its size. */
#define SAME_FIELD(v1, now, field)                                                   \
    do {                                                                             \
        CHECK(offsetof(v1, field) == offsetof(now, field));                          \
        CHECK(sizeof(((v1*)0)->field) == sizeof(((now*)0)->field));                  \
    } while (0)

static void check_layout(void) {
    CHECK(sizeof(v1_model_params) <= sizeof(inlay_model_params));
    SAME_FIELD(v1_model_params, inlay_model_params, struct_size);
    SAME_FIELD(v1_model_params, inlay_model_params, n_threads);
    SAME_FIELD(v1_model_params, inlay_model_params, context_length);
    SAME_FIELD(v1_model_params, inlay_model_params, progress);
    SAME_FIELD(v1_model_params, inlay_model_params, progress_user);
    SAME_FIELD(v1_model_params, inlay_model_params, kv_pool);
    SAME_FIELD(v1_model_params, inlay_model_params, kv_budget_bytes);
    SAME_FIELD(v1_model_params, inlay_model_params, kv_block_size);
    SAME_FIELD(v1_model_params, inlay_model_params, batch_tokens);
    SAME_FIELD(v1_model_params, inlay_model_params, device);
    SAME_FIELD(v1_model_params, inlay_model_params, device_index);
    SAME_FIELD(v1_model_params, inlay_model_params, kv_memory_fraction);

    CHECK(sizeof(v1_model_info) <= sizeof(inlay_model_info));
    SAME_FIELD(v1_model_info, inlay_model_info, struct_size);
    SAME_FIELD(v1_model_info, inlay_model_info, architecture);
    SAME_FIELD(v1_model_info, inlay_model_info, name);
    SAME_FIELD(v1_model_info, inlay_model_info, n_params);
    SAME_FIELD(v1_model_info, inlay_model_info, file_bytes);
    SAME_FIELD(v1_model_info, inlay_model_info, n_vocab);
    SAME_FIELD(v1_model_info, inlay_model_info, n_embd);
    SAME_FIELD(v1_model_info, inlay_model_info, n_layers);
    SAME_FIELD(v1_model_info, inlay_model_info, n_heads);
    SAME_FIELD(v1_model_info, inlay_model_info, n_kv_heads);
    SAME_FIELD(v1_model_info, inlay_model_info, head_dim);
    SAME_FIELD(v1_model_info, inlay_model_info, n_ff);
    SAME_FIELD(v1_model_info, inlay_model_info, context_length);
    SAME_FIELD(v1_model_info, inlay_model_info, train_context_length);
    SAME_FIELD(v1_model_info, inlay_model_info, bos_token);
    SAME_FIELD(v1_model_info, inlay_model_info, eos_token);
    SAME_FIELD(v1_model_info, inlay_model_info, device);

    CHECK(sizeof(v1_session_params) <= sizeof(inlay_session_params));
    SAME_FIELD(v1_session_params, inlay_session_params, struct_size);
    SAME_FIELD(v1_session_params, inlay_session_params, context_length);

    CHECK(sizeof(v1_generate_params) <= sizeof(inlay_generate_params));
    SAME_FIELD(v1_generate_params, inlay_generate_params, struct_size);
    SAME_FIELD(v1_generate_params, inlay_generate_params, max_tokens);
    SAME_FIELD(v1_generate_params, inlay_generate_params, temperature);
    SAME_FIELD(v1_generate_params, inlay_generate_params, top_k);
    SAME_FIELD(v1_generate_params, inlay_generate_params, top_p);
    SAME_FIELD(v1_generate_params, inlay_generate_params, min_p);
    SAME_FIELD(v1_generate_params, inlay_generate_params, repeat_penalty);
    SAME_FIELD(v1_generate_params, inlay_generate_params, frequency_penalty);
    SAME_FIELD(v1_generate_params, inlay_generate_params, presence_penalty);
    SAME_FIELD(v1_generate_params, inlay_generate_params, penalty_last_n);
    SAME_FIELD(v1_generate_params, inlay_generate_params, seed);
    SAME_FIELD(v1_generate_params, inlay_generate_params, ignore_eos);
    SAME_FIELD(v1_generate_params, inlay_generate_params, stop);
    SAME_FIELD(v1_generate_params, inlay_generate_params, n_stop);
    SAME_FIELD(v1_generate_params, inlay_generate_params, add_bos);
    SAME_FIELD(v1_generate_params, inlay_generate_params, parse_special);
    SAME_FIELD(v1_generate_params, inlay_generate_params, on_token);
    SAME_FIELD(v1_generate_params, inlay_generate_params, user);

    CHECK(sizeof(v1_timings) <= sizeof(inlay_timings));
    SAME_FIELD(v1_timings, inlay_timings, struct_size);
    SAME_FIELD(v1_timings, inlay_timings, prompt_tokens);
    SAME_FIELD(v1_timings, inlay_timings, generated_tokens);
    SAME_FIELD(v1_timings, inlay_timings, prefill_s);
    SAME_FIELD(v1_timings, inlay_timings, decode_s);
    SAME_FIELD(v1_timings, inlay_timings, prefill_tokens_per_s);
    SAME_FIELD(v1_timings, inlay_timings, decode_tokens_per_s);
    SAME_FIELD(v1_timings, inlay_timings, prompt_tokens_reused);

    CHECK(sizeof(v1_kv_pool_params) <= sizeof(inlay_kv_pool_params));
    SAME_FIELD(v1_kv_pool_params, inlay_kv_pool_params, struct_size);
    SAME_FIELD(v1_kv_pool_params, inlay_kv_pool_params, budget_bytes);
    SAME_FIELD(v1_kv_pool_params, inlay_kv_pool_params, budget_blocks);
    SAME_FIELD(v1_kv_pool_params, inlay_kv_pool_params, block_size);

    CHECK(sizeof(v1_metrics) <= sizeof(inlay_metrics));
    SAME_FIELD(v1_metrics, inlay_metrics, struct_size);
    SAME_FIELD(v1_metrics, inlay_metrics, blocks_total);
    SAME_FIELD(v1_metrics, inlay_metrics, blocks_free);
    SAME_FIELD(v1_metrics, inlay_metrics, blocks_cached);
    SAME_FIELD(v1_metrics, inlay_metrics, blocks_shared);
    SAME_FIELD(v1_metrics, inlay_metrics, blocks_held);
    SAME_FIELD(v1_metrics, inlay_metrics, block_cap);
    SAME_FIELD(v1_metrics, inlay_metrics, block_size);
    SAME_FIELD(v1_metrics, inlay_metrics, sessions);
    SAME_FIELD(v1_metrics, inlay_metrics, sequences_running);
    SAME_FIELD(v1_metrics, inlay_metrics, sequences_waiting);
    SAME_FIELD(v1_metrics, inlay_metrics, preemptions);
    SAME_FIELD(v1_metrics, inlay_metrics, kv_full_failures);
    SAME_FIELD(v1_metrics, inlay_metrics, tokens_prefilled);
    SAME_FIELD(v1_metrics, inlay_metrics, tokens_generated);
    SAME_FIELD(v1_metrics, inlay_metrics, prefix_tokens_reused);
    SAME_FIELD(v1_metrics, inlay_metrics, steps);
    SAME_FIELD(v1_metrics, inlay_metrics, step_seconds_mean);
    SAME_FIELD(v1_metrics, inlay_metrics, step_seconds_max);
    SAME_FIELD(v1_metrics, inlay_metrics, step_seconds_last);
    SAME_FIELD(v1_metrics, inlay_metrics, busy_seconds);
    SAME_FIELD(v1_metrics, inlay_metrics, generated_tokens_per_s);

    CHECK(sizeof(v1_chat_params) <= sizeof(inlay_chat_params));
    SAME_FIELD(v1_chat_params, inlay_chat_params, struct_size);
    SAME_FIELD(v1_chat_params, inlay_chat_params, thinking);
    SAME_FIELD(v1_chat_params, inlay_chat_params, add_generation_prompt);
    SAME_FIELD(v1_chat_params, inlay_chat_params, chat_template);
}

/* ---------------------------------------------------------- v1 inits --- */

/* A v1 program initialises its (v1-sized) structs with the library's *_params_init: the
 * library must not write past them. The name in parentheses calls the symbol itself, as
 * a program compiled before inlay.h's *_params_init macro does. */
#define CHECK_INIT(v1, now)                                                                   \
    do {                                                                                      \
        v1* p = (v1*)filled(sizeof(v1));                                                      \
        (now##_init)((now*)(void*)p);                                                         \
        if (!all_bytes(p, sizeof(v1), sizeof(v1) + SLACK, CANARY))                            \
            fprintf(stderr, "%s_init wrote past a v1 caller's %s (%zu bytes): an old program " \
                    "calling it overflows; see docs/ABI.md\n", #now, #v1, sizeof(v1));        \
        CHECK(all_bytes(p, sizeof(v1), sizeof(v1) + SLACK, CANARY));                          \
        free(p);                                                                              \
    } while (0)

/* Initialises a v1 struct with the library's defaults, and the struct_size a v1 program
 * passes: its own. (Through a buffer of today's size, so that the checks below stay
 * independent of check_inits.) */
#define V1_INIT(v1, now, p)                                     \
    do {                                                        \
        now scratch;                                            \
        memset(&scratch, 0, sizeof scratch);                    \
        now##_init(&scratch);                                   \
        memcpy((p), &scratch, sizeof(v1));                      \
        (p)->struct_size = sizeof(v1);                          \
    } while (0)

static void check_inits(void) {
    CHECK_INIT(v1_model_params, inlay_model_params);
    CHECK_INIT(v1_session_params, inlay_session_params);
    CHECK_INIT(v1_generate_params, inlay_generate_params);
    CHECK_INIT(v1_kv_pool_params, inlay_kv_pool_params);
    CHECK_INIT(v1_chat_params, inlay_chat_params);
}

/* ------------------------------------------------------- v1 callers --- */

static int progress_calls;
static float progress_last;
static bool on_progress(float progress, void* user) {
    CHECK(user == &progress_calls);
    ++progress_calls;
    progress_last = progress;
    return true;
}

static int token_calls;
static bool on_token(int32_t token, const char* piece, size_t len, void* user) {
    (void)token;
    (void)piece;
    (void)len;
    CHECK(user == &token_calls);
    ++token_calls;
    return true;
}

static void check_v1_callers(void) {
    v1_model_params mp;
    v1_session_params sp;
    v1_generate_params gp;
    v1_kv_pool_params pp;
    v1_chat_params cp;
    v1_model_info* info;
    v1_timings* timings;
    v1_metrics* metrics;
    inlay_model* model = NULL;
    inlay_model* pooled = NULL;
    inlay_kv_pool* pool = NULL;
    inlay_session* session = NULL;
    inlay_result* result = NULL;
    const int32_t* prompt;
    size_t n = 0;
    size_t length = 0;
    char text[256];
    inlay_chat_message message;
    int32_t bos = -1;

    /* Model params: every field given is honoured. */
    V1_INIT(v1_model_params, inlay_model_params, &mp);
    mp.n_threads = 1;
    mp.context_length = 64;
    mp.progress = on_progress;
    mp.progress_user = &progress_calls;
    mp.kv_block_size = 8;
    mp.batch_tokens = 16;
    mp.device = INLAY_DEVICE_CPU;
    CHECK_STATUS(inlay_model_load(MODEL, (const inlay_model_params*)(const void*)&mp, &model), INLAY_OK);
    if (!model) return;
    CHECK(progress_calls > 0);
    CHECK(progress_last == 1.0f);

    /* Model info: a v1 struct, then one cut short; nothing past struct_size is written. */
    info = (v1_model_info*)filled(sizeof(v1_model_info));
    info->struct_size = sizeof(v1_model_info);
    CHECK_STATUS(inlay_model_get_info(model, (inlay_model_info*)(void*)info), INLAY_OK);
    CHECK(info->struct_size == sizeof(v1_model_info));
    CHECK(info->architecture && strcmp(info->architecture, "llama") == 0);
    CHECK(info->n_vocab == 1024);
    CHECK(info->n_layers == 2);
    CHECK(info->context_length == 64);
    CHECK(info->device && strcmp(info->device, "cpu") == 0);
    bos = info->bos_token;
    CHECK(bos >= 0);
    CHECK(all_bytes(info, sizeof(v1_model_info), sizeof(v1_model_info) + SLACK, CANARY));
    memset(info, CANARY, sizeof(v1_model_info) + SLACK);
    info->struct_size = offsetof(v1_model_info, n_vocab);
    CHECK_STATUS(inlay_model_get_info(model, (inlay_model_info*)(void*)info), INLAY_OK);
    CHECK(info->struct_size == offsetof(v1_model_info, n_vocab));
    CHECK(info->architecture && strcmp(info->architecture, "llama") == 0);
    CHECK(info->n_params == 984320);
    CHECK(all_bytes(info, offsetof(v1_model_info, n_vocab), sizeof(v1_model_info) + SLACK, CANARY));
    free(info);

    /* Session params: the context length is the session's. */
    V1_INIT(v1_session_params, inlay_session_params, &sp);
    sp.context_length = 24;
    CHECK_STATUS(inlay_session_create(model, (const inlay_session_params*)(const void*)&sp, &session), INLAY_OK);
    if (!session) {
        inlay_model_free(model);
        return;
    }

    /* Generate params: budget, greedy, ignore_eos, add_bos, streaming with user data. */
    V1_INIT(v1_generate_params, inlay_generate_params, &gp);
    gp.max_tokens = 5;
    gp.temperature = 0.0f;
    gp.ignore_eos = true;
    gp.add_bos = false;
    gp.on_token = on_token;
    gp.user = &token_calls;
    CHECK_STATUS(inlay_session_generate(session, "You will", (const inlay_generate_params*)(const void*)&gp, &result),
                 INLAY_OK);
    if (result) {
        inlay_result_tokens(result, &n);
        CHECK(n == 5);
        CHECK(token_calls >= 5);
        CHECK(inlay_result_stop_reason(result) == INLAY_STOP_MAX_TOKENS);
        prompt = inlay_result_prompt_tokens(result, &n);
        CHECK(n > 0 && prompt[0] != bos); /* add_bos = false */

        timings = (v1_timings*)filled(sizeof(v1_timings));
        timings->struct_size = sizeof(v1_timings);
        CHECK_STATUS(inlay_result_timings(result, (inlay_timings*)(void*)timings), INLAY_OK);
        CHECK(timings->struct_size == sizeof(v1_timings));
        CHECK(timings->generated_tokens == 5);
        CHECK(timings->prompt_tokens == (int64_t)n);
        CHECK(timings->prompt_tokens_reused == 0);
        CHECK(all_bytes(timings, sizeof(v1_timings), sizeof(v1_timings) + SLACK, CANARY));
        memset(timings, CANARY, sizeof(v1_timings) + SLACK);
        timings->struct_size = offsetof(v1_timings, prefill_s);
        CHECK_STATUS(inlay_result_timings(result, (inlay_timings*)(void*)timings), INLAY_OK);
        CHECK(timings->generated_tokens == 5);
        CHECK(all_bytes(timings, offsetof(v1_timings, prefill_s), sizeof(v1_timings) + SLACK, CANARY));
        free(timings);
        inlay_result_free(result);
        result = NULL;
    }
    /* The session's context (24) ends the next generation. */
    gp.max_tokens = 100;
    CHECK_STATUS(inlay_session_generate(session, "", (const inlay_generate_params*)(const void*)&gp, &result),
                 INLAY_OK);
    if (result) CHECK(inlay_result_stop_reason(result) == INLAY_STOP_CONTEXT_FULL);
    inlay_result_free(result);
    result = NULL;
    CHECK_STATUS(inlay_session_n_tokens(session, &n), INLAY_OK);
    CHECK(n == 24);

    /* Metrics: the model's block size (kv_block_size above); cut short, then whole. */
    metrics = (v1_metrics*)filled(sizeof(v1_metrics));
    metrics->struct_size = sizeof(v1_metrics);
    CHECK_STATUS(inlay_model_get_metrics(model, (inlay_metrics*)(void*)metrics), INLAY_OK);
    CHECK(metrics->struct_size == sizeof(v1_metrics));
    CHECK(metrics->block_size == 8);
    CHECK(metrics->sessions == 1);
    CHECK(metrics->tokens_generated >= 5);
    CHECK(all_bytes(metrics, sizeof(v1_metrics), sizeof(v1_metrics) + SLACK, CANARY));
    memset(metrics, CANARY, sizeof(v1_metrics) + SLACK);
    metrics->struct_size = offsetof(v1_metrics, sessions);
    CHECK_STATUS(inlay_model_get_metrics(model, (inlay_metrics*)(void*)metrics), INLAY_OK);
    CHECK(metrics->block_size == 8);
    CHECK(all_bytes(metrics, offsetof(v1_metrics, sessions), sizeof(v1_metrics) + SLACK, CANARY));
    free(metrics);

    /* Chat params: the template given replaces the model's. */
    V1_INIT(v1_chat_params, inlay_chat_params, &cp);
    cp.add_generation_prompt = false;
    cp.chat_template = "{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}"
                       "{% if add_generation_prompt %}<reply>{% endif %}";
    message.role = "user";
    message.content = "hi";
    CHECK_STATUS(inlay_chat_apply_template(model, &message, 1, (const inlay_chat_params*)(const void*)&cp, text,
                                           sizeof text, &length),
                 INLAY_OK);
    CHECK(strcmp(text, "[user:hi]") == 0);
    CHECK(length == strlen("[user:hi]"));

    /* KV pool params: a pool of 40 blocks of 8 tokens, shared by a model loaded with it. */
    V1_INIT(v1_kv_pool_params, inlay_kv_pool_params, &pp);
    pp.budget_blocks = 40;
    pp.block_size = 8;
    CHECK_STATUS(inlay_kv_pool_create((const inlay_kv_pool_params*)(const void*)&pp, &pool), INLAY_OK);
    if (pool) {
        V1_INIT(v1_model_params, inlay_model_params, &mp);
        mp.n_threads = 1;
        mp.kv_pool = pool;
        CHECK_STATUS(inlay_model_load(MODEL, (const inlay_model_params*)(const void*)&mp, &pooled), INLAY_OK);
        inlay_kv_pool_free(pool);
        if (pooled) {
            metrics = (v1_metrics*)filled(sizeof(v1_metrics));
            metrics->struct_size = sizeof(v1_metrics);
            CHECK_STATUS(inlay_model_get_metrics(pooled, (inlay_metrics*)(void*)metrics), INLAY_OK);
            CHECK(metrics->blocks_total == 40);
            CHECK(metrics->block_size == 8);
            free(metrics);
            inlay_model_free(pooled);
        }
    }

    inlay_session_free(session);
    inlay_model_free(model);
}

/* -------------------------------------------- larger than the library --- */

/* A struct EXTRA bytes longer than the library's, initialised, with struct_size saying so
 * and zeros after the library's part. */
#define LARGER(now, p)                                      \
    do {                                                    \
        (p) = (now*)filled(sizeof(now) + EXTRA);            \
        memset((p), 0, sizeof(now) + EXTRA);                \
        now##_init(p);                                      \
        (p)->struct_size = sizeof(now) + EXTRA;             \
    } while (0)
#define POISON(now, p) (((unsigned char*)(void*)(p))[sizeof(now) + EXTRA - 3] = 1)

static void check_larger(void) {
    inlay_model_params* mp;
    inlay_session_params* sp;
    inlay_generate_params* gp;
    inlay_kv_pool_params* pp;
    inlay_chat_params* cp;
    inlay_model_info* info;
    inlay_metrics* metrics;
    inlay_model* model = NULL;
    inlay_session* session = NULL;
    inlay_result* result = NULL;
    inlay_kv_pool* pool = NULL;
    inlay_chat_message message = {"user", "hi"};
    char text[256];
    size_t length = 0;

    LARGER(inlay_model_params, mp);
    mp->n_threads = 1;
    POISON(inlay_model_params, mp);
    CHECK_STATUS(inlay_model_load(MODEL, mp, &model), INLAY_ERR_INVALID_ARGUMENT);
    CHECK(error_mentions("struct_size"));
    CHECK(model == NULL);
    inlay_model_free(model);
    model = NULL;
    mp->struct_size = (size_t)1 << 20; /* absurd */
    CHECK_STATUS(inlay_model_load(MODEL, mp, &model), INLAY_ERR_INVALID_ARGUMENT);
    CHECK(error_mentions("struct_size"));
    memset((unsigned char*)mp + sizeof(inlay_model_params), 0, EXTRA);
    mp->struct_size = sizeof(inlay_model_params) + EXTRA;
    CHECK_STATUS(inlay_model_load(MODEL, mp, &model), INLAY_OK);
    free(mp);
    if (!model) return;

    LARGER(inlay_session_params, sp);
    POISON(inlay_session_params, sp);
    CHECK_STATUS(inlay_session_create(model, sp, &session), INLAY_ERR_INVALID_ARGUMENT);
    CHECK(error_mentions("struct_size"));
    CHECK(session == NULL);
    memset((unsigned char*)sp + sizeof(inlay_session_params), 0, EXTRA);
    CHECK_STATUS(inlay_session_create(model, sp, &session), INLAY_OK);
    free(sp);

    LARGER(inlay_generate_params, gp);
    gp->max_tokens = 2;
    gp->temperature = 0.0f;
    gp->ignore_eos = true;
    POISON(inlay_generate_params, gp);
    if (session) {
        CHECK_STATUS(inlay_session_generate(session, "You", gp, &result), INLAY_ERR_INVALID_ARGUMENT);
        CHECK(error_mentions("struct_size"));
        CHECK(result == NULL);
        memset((unsigned char*)gp + sizeof(inlay_generate_params), 0, EXTRA);
        CHECK_STATUS(inlay_session_generate(session, "You", gp, &result), INLAY_OK);
        if (result) {
            size_t n = 0;
            inlay_result_tokens(result, &n);
            CHECK(n == 2);
        }
        inlay_result_free(result);
    }
    free(gp);

    LARGER(inlay_chat_params, cp);
    cp->chat_template = "{% for m in messages %}<{{ m.content }}>{% endfor %}";
    POISON(inlay_chat_params, cp);
    CHECK_STATUS(inlay_chat_apply_template(model, &message, 1, cp, text, sizeof text, &length),
                 INLAY_ERR_INVALID_ARGUMENT);
    CHECK(error_mentions("struct_size"));
    memset((unsigned char*)cp + sizeof(inlay_chat_params), 0, EXTRA);
    CHECK_STATUS(inlay_chat_apply_template(model, &message, 1, cp, text, sizeof text, &length), INLAY_OK);
    CHECK(strcmp(text, "<hi>") == 0);
    free(cp);

    LARGER(inlay_kv_pool_params, pp);
    pp->budget_blocks = 8;
    POISON(inlay_kv_pool_params, pp);
    CHECK_STATUS(inlay_kv_pool_create(pp, &pool), INLAY_ERR_INVALID_ARGUMENT);
    CHECK(error_mentions("struct_size"));
    CHECK(pool == NULL);
    memset((unsigned char*)pp + sizeof(inlay_kv_pool_params), 0, EXTRA);
    CHECK_STATUS(inlay_kv_pool_create(pp, &pool), INLAY_OK);
    inlay_kv_pool_free(pool);
    free(pp);

    /* Out-structs longer than the library's: zeros where the library has no field, nothing
     * after the caller's struct_size. */
    info = (inlay_model_info*)filled(sizeof(inlay_model_info) + EXTRA);
    info->struct_size = sizeof(inlay_model_info) + EXTRA;
    CHECK_STATUS(inlay_model_get_info(model, info), INLAY_OK);
    CHECK(info->struct_size == sizeof(inlay_model_info) + EXTRA);
    CHECK(info->n_vocab == 1024);
    CHECK(all_bytes(info, sizeof(inlay_model_info), sizeof(inlay_model_info) + EXTRA, 0));
    CHECK(all_bytes(info, sizeof(inlay_model_info) + EXTRA, sizeof(inlay_model_info) + EXTRA + SLACK, CANARY));
    free(info);
    metrics = (inlay_metrics*)filled(sizeof(inlay_metrics) + EXTRA);
    metrics->struct_size = sizeof(inlay_metrics) + EXTRA;
    CHECK_STATUS(inlay_model_get_metrics(model, metrics), INLAY_OK);
    CHECK(metrics->block_size == 16);
    CHECK(all_bytes(metrics, sizeof(inlay_metrics), sizeof(inlay_metrics) + EXTRA, 0));
    CHECK(all_bytes(metrics, sizeof(inlay_metrics) + EXTRA, sizeof(inlay_metrics) + EXTRA + SLACK, CANARY));
    free(metrics);

    inlay_session_free(session);
    inlay_model_free(model);
}

int main(void) {
    inlay_set_log_sink(NULL, INLAY_LOG_ERROR, NULL);
    check_layout();
    check_inits();
    check_v1_callers();
    check_larger();
    return capi_finish("abi_v1");
}
