/*
 * KV budgets through the C ABI: two loads of one model share an inlay_kv_pool (same
 * geometry), caps per model, INLAY_ERR_KV_FULL with a partial result when a call cannot
 * fit alone, argument checks.
 */
#include "capi_test.h"

static inlay_metrics metrics_of(const inlay_model* model) {
    inlay_metrics m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    CHECK_STATUS(inlay_model_get_metrics(model, &m), INLAY_OK);
    return m;
}

static inlay_model* load(inlay_kv_pool* pool, int64_t budget_bytes) {
    char path[4096];
    inlay_model_params mp;
    inlay_model* model = NULL;
    capi_testdata(path, sizeof path, "models/stories260K.gguf");
    inlay_model_params_init(&mp);
    mp.n_threads = 1;
    mp.kv_pool = pool;
    mp.kv_budget_bytes = budget_bytes;
    CHECK_STATUS(inlay_model_load(path, &mp, &model), INLAY_OK);
    if (!model) exit(1);
    return model;
}

int main(void) {
    inlay_kv_pool_params pp;
    inlay_kv_pool* pool = NULL;
    inlay_model *m1, *m2, *small;
    inlay_session *s1 = NULL, *s2 = NULL;
    inlay_generate_params gp;
    inlay_result* r = NULL;
    inlay_metrics a, b;
    size_t n = 0;

    inlay_kv_pool_params_init(&pp);
    CHECK(pp.block_size == 16 && pp.budget_bytes > 0);
    pp.budget_bytes = 0;
    CHECK_STATUS(inlay_kv_pool_create(&pp, &pool), INLAY_ERR_INVALID_ARGUMENT);
    pp.budget_blocks = -1;
    CHECK_STATUS(inlay_kv_pool_create(&pp, &pool), INLAY_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(inlay_kv_pool_create(NULL, NULL), INLAY_ERR_INVALID_ARGUMENT);
    pp.budget_blocks = 100;
    CHECK_STATUS(inlay_kv_pool_create(&pp, &pool), INLAY_OK);

    m1 = load(pool, 0);
    m2 = load(pool, 0);
    inlay_kv_pool_free(pool); /* the models keep it */
    a = metrics_of(m1);
    CHECK(a.blocks_total == 100 && a.block_size == 16);

    CHECK_STATUS(inlay_session_create(m1, NULL, &s1), INLAY_OK);
    CHECK_STATUS(inlay_session_create(m2, NULL, &s2), INLAY_OK);
    inlay_generate_params_init(&gp);
    gp.temperature = 0.0f;
    gp.ignore_eos = true;
    gp.max_tokens = 40;
    CHECK_STATUS(inlay_session_generate(s1, "Once upon a time", &gp, &r), INLAY_OK);
    inlay_result_free(r);
    CHECK_STATUS(inlay_session_generate(s2, "The little dog", &gp, &r), INLAY_OK);
    inlay_result_free(r);
    a = metrics_of(m1);
    b = metrics_of(m2);
    CHECK(a.blocks_held == 3 && b.blocks_held == 3); /* 44 cached tokens each */
    CHECK(a.blocks_total - a.blocks_free == 6);     /* one pool, both models */

    /* a cap of 2 blocks (32 tokens) on m1: the next long turn cannot fit */
    CHECK_STATUS(inlay_model_set_kv_cap(m1, -1), INLAY_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(inlay_model_set_kv_cap(NULL, 1), INLAY_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(inlay_model_set_kv_cap(m1, 2), INLAY_OK);
    CHECK_STATUS(inlay_session_reset(s1), INLAY_OK);
    CHECK_STATUS(inlay_session_generate(s1, "Once upon a time", &gp, &r), INLAY_ERR_KV_FULL);
    CHECK(r != NULL);
    (void)inlay_result_tokens(r, &n);
    CHECK(n == 32 - 5 + 1);
    inlay_result_free(r);
    CHECK(metrics_of(m1).block_cap == 2 && metrics_of(m1).kv_full_failures == 1);
    CHECK_STATUS(inlay_model_set_kv_cap(m1, 0), INLAY_OK);
    CHECK_STATUS(inlay_session_reset(s1), INLAY_OK);
    CHECK_STATUS(inlay_session_generate(s1, "Once upon a time", &gp, &r), INLAY_OK);
    inlay_result_free(r);

    /* a private budget of about 2 blocks */
    small = load(NULL, 2 * 16 * 5 * 2 * 4 * 8 * 2 + 100);
    CHECK(metrics_of(small).blocks_total == 2);
    inlay_session_free(s2);
    CHECK_STATUS(inlay_session_create(small, NULL, &s2), INLAY_OK);
    CHECK_STATUS(inlay_session_generate(s2, "Once upon a time", &gp, &r), INLAY_ERR_KV_FULL);
    inlay_result_free(r);

    inlay_session_free(s1);
    inlay_session_free(s2);
    CHECK(metrics_of(m1).blocks_held == 0 && metrics_of(m2).blocks_held == 0);
    CHECK(metrics_of(m1).blocks_free == 100);
    inlay_model_free(m1);
    inlay_model_free(m2);
    inlay_model_free(small);
    return capi_finish("capi_runtime_pool");
}
