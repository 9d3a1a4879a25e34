/*
 * Model loading reports progress through inlay_model_params.progress: values in [0, 1],
 * never decreasing, ending at 1 on success. A callback returning false aborts the load
 * with INLAY_ERR_CANCELLED and no model.
 */
#include "capi_test.h"

typedef struct {
    int calls;
    float last;
    int decreased;
    int out_of_range;
    int stop_at_call; /* return false on this call (1-based); 0 = never */
} Progress;

static bool on_progress(float p, void* user) {
    Progress* s = (Progress*)user;
    s->calls++;
    if (!(p >= 0.0f && p <= 1.0f)) s->out_of_range = 1;
    if (s->calls > 1 && p < s->last) s->decreased = 1;
    s->last = p;
    return s->stop_at_call == 0 || s->calls < s->stop_at_call;
}

static inlay_status load(const char* path, Progress* state, inlay_model** model) {
    inlay_model_params mp;
    inlay_model_params_init(&mp);
    mp.n_threads = 1;
    mp.progress = on_progress;
    mp.progress_user = state;
    return inlay_model_load(path, &mp, model);
}

int main(void) {
    char path[4096];
    inlay_model* model = NULL;
    Progress full = {0, 0.0f, 0, 0, 0};
    Progress first = {0, 0.0f, 0, 0, 1};
    Progress second = {0, 0.0f, 0, 0, 2};

    capi_testdata(path, sizeof path, "models/stories260K.gguf");

    CHECK_STATUS(load(path, &full, &model), INLAY_OK);
    CHECK(model != NULL);
    CHECK(full.calls >= 2);
    CHECK(full.last == 1.0f);
    CHECK(!full.decreased && !full.out_of_range);
    inlay_model_free(model);
    model = NULL;

    model = (inlay_model*)&full; /* must be overwritten with NULL */
    CHECK_STATUS(load(path, &first, &model), INLAY_ERR_CANCELLED);
    CHECK(model == NULL);
    CHECK(first.calls == 1);

    if (full.calls >= 3) {
        CHECK_STATUS(load(path, &second, &model), INLAY_ERR_CANCELLED);
        CHECK(model == NULL);
        CHECK(second.calls == 2);
    }

    /* Loading works again afterwards. */
    full.calls = 0;
    CHECK_STATUS(load(path, &full, &model), INLAY_OK);
    inlay_model_free(model);
    return capi_finish("capi_progress");
}
