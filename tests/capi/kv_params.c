/*
 * KV and batch parameters: out-of-range kv_block_size, batch_tokens and pool block_size
 * are INLAY_ERR_INVALID_ARGUMENT naming the value; the extremes of the ranges load and
 * generate exactly what the defaults generate (batching and block size never change the
 * output). Sizes beyond the machine's memory (an absurd context length, KV budget or
 * pool) are INLAY_ERR_OUT_OF_MEMORY with the sizes, refused before anything is
 * allocated (this test would otherwise allocate terabytes). On the CPU the default KV
 * budget follows the context length (4 contexts); on a GPU it is a fraction of the
 * device's free memory, whatever the context length or block size.
 */
#define _POSIX_C_SOURCE 200809L
#include "capi_default_model.h"

/* Loads the default model with one changed field; returns the status (model in *out). */
static inlay_status load(inlay_model_params* mp, inlay_model** out) {
    return inlay_model_load(capi_repo_model_path("default-f32.gguf"), mp, out);
}

static void base(inlay_model_params* mp) {
    inlay_model_params_init(mp);
    mp->n_threads = 1;
}

static void refused(inlay_model_params* mp, inlay_status expected, const char* mentions) {
    inlay_model* model = (inlay_model*)&model;
    CHECK_STATUS(load(mp, &model), expected);
    CHECK(model == NULL);
    if (!strstr(inlay_last_error(), mentions)) {
        fprintf(stderr, "  the message \"%s\" does not mention \"%s\"\n", inlay_last_error(), mentions);
        CHECK(strstr(inlay_last_error(), mentions) != NULL);
    }
}

/* Greedy 12 tokens from "You will" on a fresh session. */
static void generate(inlay_model* model, int32_t* out) {
    inlay_session* s = NULL;
    inlay_result* r = NULL;
    inlay_generate_params gp = capi_greedy(12, true);
    size_t n = 0;
    const int32_t* t;
    memset(out, 0, 12 * sizeof(int32_t));
    CHECK_STATUS(inlay_session_create(model, NULL, &s), INLAY_OK);
    CHECK_STATUS(inlay_session_generate(s, "You will", &gp, &r), INLAY_OK);
    t = inlay_result_tokens(r, &n);
    CHECK(n == 12);
    if (n == 12) memcpy(out, t, 12 * sizeof(int32_t));
    inlay_result_free(r);
    inlay_session_free(s);
}

/* Whether `model` runs on the CPU (its KV budget then follows the context length). */
static int on_cpu(const inlay_model* model) {
    inlay_model_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    CHECK_STATUS(inlay_model_get_info(model, &info), INLAY_OK);
    return info.device != NULL && strcmp(info.device, "cpu") == 0;
}

int main(void) {
    inlay_model_params mp;
    inlay_model* model = NULL;
    int32_t reference[12], got[12];
    inlay_metrics m;
    int cpu;
    int64_t default_tokens;

    model = capi_load_default();
    generate(model, reference);
    cpu = on_cpu(model);
    m = capi_metrics(model);
    default_tokens = m.blocks_total * m.block_size;
    inlay_model_free(model);

    /* Out of range. */
    base(&mp); mp.kv_block_size = -1;    refused(&mp, INLAY_ERR_INVALID_ARGUMENT, "kv_block_size is -1");
    base(&mp); mp.kv_block_size = 4097;  refused(&mp, INLAY_ERR_INVALID_ARGUMENT, "kv_block_size is 4097");
    base(&mp); mp.batch_tokens = -1;     refused(&mp, INLAY_ERR_INVALID_ARGUMENT, "batch_tokens is -1");
    base(&mp); mp.batch_tokens = 65537;  refused(&mp, INLAY_ERR_INVALID_ARGUMENT, "batch_tokens is 65537");
    base(&mp); mp.kv_budget_bytes = -1;  refused(&mp, INLAY_ERR_INVALID_ARGUMENT, "kv_budget_bytes");
    base(&mp); mp.context_length = -1;   refused(&mp, INLAY_ERR_INVALID_ARGUMENT, "context_length");

    /* The extremes load and give the same tokens. */
    {
        const int32_t sizes[2] = {1, 4096};
        int i;
        for (i = 0; i < 2; ++i) {
            base(&mp);
            mp.kv_block_size = sizes[i];
            CHECK_STATUS(load(&mp, &model), INLAY_OK);
            if (!model) continue;
            m = capi_metrics(model);
            CHECK(m.block_size == sizes[i]);
            if (cpu) {
                CHECK(m.blocks_total == (1024 + sizes[i] - 1) / sizes[i]); /* 4 contexts of 256 tokens */
            } else {
                /* a share of the device's memory, in at most 2^20 blocks of this size,
                 * and no fewer tokens than the default's up to that limit */
                CHECK(m.blocks_total <= (int64_t)1 << 20);
                CHECK(m.blocks_total * sizes[i] >= (default_tokens < ((int64_t)1 << 20) ? default_tokens : ((int64_t)1 << 20)) - sizes[i]);
            }
            generate(model, got);
            CHECK(memcmp(got, reference, sizeof got) == 0);
            inlay_model_free(model);
            model = NULL;
        }
    }
    {
        const int32_t sizes[2] = {1, 4096}; /* 65536 is allowed too, but costs 500 MB here */
        int i;
        for (i = 0; i < 2; ++i) {
            inlay_metrics before;
            base(&mp);
            mp.batch_tokens = sizes[i];
            CHECK_STATUS(load(&mp, &model), INLAY_OK);
            if (!model) continue;
            before = capi_metrics(model);
            generate(model, got);
            CHECK(memcmp(got, reference, sizeof got) == 0);
            m = capi_metrics(model);
            /* one token per pass: the prompt's tokens one by one, then one per new token */
            if (sizes[i] == 1) CHECK(m.steps - before.steps == m.tokens_prefilled - before.tokens_prefilled + 11);
            else CHECK(m.steps - before.steps == 12);
            inlay_model_free(model);
            model = NULL;
        }
    }

    /* Pools. */
    {
        inlay_kv_pool_params pp;
        inlay_kv_pool* pool = (inlay_kv_pool*)&pool;
        const int32_t bad[3] = {0, -1, 4097};
        int i;
        for (i = 0; i < 3; ++i) {
            char expected[64];
            inlay_kv_pool_params_init(&pp);
            pp.block_size = bad[i];
            pool = (inlay_kv_pool*)&pool;
            CHECK_STATUS(inlay_kv_pool_create(&pp, &pool), INLAY_ERR_INVALID_ARGUMENT);
            CHECK(pool == NULL);
            snprintf(expected, sizeof expected, "block_size is %d", bad[i]);
            CHECK(strstr(inlay_last_error(), expected) != NULL);
        }
        inlay_kv_pool_params_init(&pp);
        pp.budget_bytes = -1;
        CHECK_STATUS(inlay_kv_pool_create(&pp, &pool), INLAY_ERR_INVALID_ARGUMENT);
        inlay_kv_pool_params_init(&pp);
        pp.budget_bytes = 0;
        pp.budget_blocks = 0;
        CHECK_STATUS(inlay_kv_pool_create(&pp, &pool), INLAY_ERR_INVALID_ARGUMENT);
        inlay_kv_pool_params_init(&pp);
        pp.budget_blocks = -5;
        CHECK_STATUS(inlay_kv_pool_create(&pp, &pool), INLAY_ERR_INVALID_ARGUMENT);

        /* block_size 1 and 4096 work, and give the same tokens */
        {
            const int32_t sizes[2] = {1, 4096};
            for (i = 0; i < 2; ++i) {
                inlay_kv_pool_params_init(&pp);
                pp.block_size = sizes[i];
                pp.budget_blocks = 2048 / sizes[i] + 1;
                CHECK_STATUS(inlay_kv_pool_create(&pp, &pool), INLAY_OK);
                base(&mp);
                mp.kv_pool = pool;
                CHECK_STATUS(load(&mp, &model), INLAY_OK);
                inlay_kv_pool_free(pool);
                if (!model) continue;
                m = capi_metrics(model);
                CHECK(m.block_size == sizes[i] && m.blocks_total == 2048 / sizes[i] + 1);
                generate(model, got);
                CHECK(memcmp(got, reference, sizeof got) == 0);
                inlay_model_free(model);
                model = NULL;
            }
        }

        /* A pool of 2^29 blocks (4 TiB for this model): made lazily, refused at load. */
        inlay_kv_pool_params_init(&pp);
        pp.budget_blocks = (int64_t)1 << 29;
        CHECK_STATUS(inlay_kv_pool_create(&pp, &pool), INLAY_OK);
        base(&mp);
        mp.kv_pool = pool;
        refused(&mp, INLAY_ERR_OUT_OF_MEMORY, "536870912 blocks of 8192 bytes");
        inlay_kv_pool_free(pool);
    }

    /* Beyond memory: an absurd context length (on the CPU its default budget is 4
     * contexts; a GPU's budget is its memory, so there it only sets a limit), an absurd
     * budget; one past the block limit is INVALID_ARGUMENT. */
    if (cpu) {
        base(&mp); mp.context_length = 2000000000;          refused(&mp, INLAY_ERR_OUT_OF_MEMORY, "500000000 blocks");
        base(&mp); mp.context_length = 2000000000; mp.kv_block_size = 4096;
        refused(&mp, INLAY_ERR_OUT_OF_MEMORY, "blocks of 2097152 bytes");
    } else {
        base(&mp); mp.context_length = 2000000000;
        CHECK_STATUS(load(&mp, &model), INLAY_OK);
        inlay_model_free(model);
        model = NULL;
    }
    base(&mp); mp.kv_budget_bytes = (int64_t)1 << 42;      refused(&mp, INLAY_ERR_OUT_OF_MEMORY, "exceeds the");
    base(&mp); mp.kv_budget_bytes = (int64_t)1 << 60;      refused(&mp, INLAY_ERR_INVALID_ARGUMENT, "blocks is too large");

    /* A session longer than the model's context only sets a limit: nothing is allocated. */
    {
        inlay_session_params sp;
        inlay_session* s = NULL;
        model = capi_load_default();
        inlay_session_params_init(&sp);
        sp.context_length = 2000000000;
        CHECK_STATUS(inlay_session_create(model, &sp, &s), INLAY_OK);
        inlay_session_free(s);
        inlay_model_free(model);
    }
    return capi_finish("capi_kv_params");
}
