/*
 * C ABI device choice (inlay_model_params.device / device_index / kv_memory_fraction,
 * inlay_model_info.device) on stories260K: the CPU on request and by default, CUDA
 * refused with INLAY_ERR_UNSUPPORTED where no CUDA device can serve (set
 * INLAY_TEST_EXPECT_GPU=1 on a machine where one must), out-of-range values rejected,
 * callers compiled before the device fields still served, a KV budget taken as a
 * share of the device's free memory, and a process on the CPU never mapping cuBLAS
 * (the CUDA backend opens it on demand).
 */
#include <stddef.h>
#include <stdint.h>

#include "capi_test.h"

static inlay_status load(const char* path, const inlay_model_params* mp, inlay_model** model) {
    *model = NULL;
    return inlay_model_load(path, mp, model);
}

/* Whether a mapping of this process names `library` (Linux; elsewhere: no). */
static int maps_library(const char* library) {
    char line[4096];
    int found = 0;
    FILE* maps = fopen("/proc/self/maps", "r");
    if (!maps) return 0;
    while (!found && fgets(line, sizeof line, maps)) found = strstr(line, library) != NULL;
    fclose(maps);
    return found;
}

static void check_device_name(inlay_model* model, const char* want_prefix) {
    inlay_model_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    CHECK_STATUS(inlay_model_get_info(model, &info), INLAY_OK);
    CHECK(info.device != NULL && strncmp(info.device, want_prefix, strlen(want_prefix)) == 0);
}

int main(void) {
    char path[4096];
    inlay_model_params mp;
    inlay_model* model = NULL;
    const char* expect_gpu = getenv("INLAY_TEST_EXPECT_GPU");
    const int gpu = expect_gpu && strcmp(expect_gpu, "1") == 0;
    capi_testdata(path, sizeof path, "models/stories260K.gguf");

    /* The CPU, asked for. */
    inlay_model_params_init(&mp);
    mp.n_threads = 1;
    mp.device = INLAY_DEVICE_CPU;
    CHECK_STATUS(load(path, &mp, &model), INLAY_OK);
    if (model) check_device_name(model, "cpu");
    /* cuBLAS (and its ~140 MiB of resident cublasLt) is not loaded for the CPU. */
    CHECK(!maps_library("libcublas"));
    inlay_model_free(model);

    /* auto: a GPU when one serves, else the CPU. */
    mp.device = INLAY_DEVICE_AUTO;
    CHECK_STATUS(load(path, &mp, &model), INLAY_OK);
    if (model) check_device_name(model, gpu ? "cuda:" : "cpu");
    inlay_model_free(model);

    /* CUDA: served only where a CUDA device is. */
    mp.device = INLAY_DEVICE_CUDA;
    if (gpu) {
        CHECK_STATUS(load(path, &mp, &model), INLAY_OK);
        if (model) check_device_name(model, "cuda:0");
        inlay_model_free(model);
        mp.device_index = 1000; /* no machine has that many */
        CHECK_STATUS(load(path, &mp, &model), INLAY_ERR_UNSUPPORTED);
    } else {
        CHECK_STATUS(load(path, &mp, &model), INLAY_ERR_UNSUPPORTED);
        CHECK(strstr(inlay_last_error(), "cuda") != NULL);
    }
    CHECK(model == NULL);

    /* Out of range. */
    inlay_model_params_init(&mp);
    mp.device = 7;
    CHECK_STATUS(load(path, &mp, &model), INLAY_ERR_INVALID_ARGUMENT);
    inlay_model_params_init(&mp);
    mp.device_index = -1;
    CHECK_STATUS(load(path, &mp, &model), INLAY_ERR_INVALID_ARGUMENT);
    inlay_model_params_init(&mp);
    mp.kv_memory_fraction = 1.5;
    CHECK_STATUS(load(path, &mp, &model), INLAY_ERR_INVALID_ARGUMENT);
    mp.kv_memory_fraction = -0.25;
    CHECK_STATUS(load(path, &mp, &model), INLAY_ERR_INVALID_ARGUMENT);

    /* A caller compiled before the device fields: a shorter struct, and garbage where
     * the new fields would be is never read. */
    {
        unsigned char raw[sizeof(inlay_model_params)];
        inlay_model_params* old = (inlay_model_params*)raw;
        inlay_model_info info;
        memset(raw, 0xff, sizeof raw);
        inlay_model_params_init(old);
        old->n_threads = 1;
        old->struct_size = offsetof(inlay_model_params, device);
        memset(raw + offsetof(inlay_model_params, device), 0xff, sizeof raw - offsetof(inlay_model_params, device));
        CHECK_STATUS(load(path, old, &model), INLAY_OK);
        /* And an old inlay_model_info: nothing is written past its struct_size. */
        memset(&info, 0xab, sizeof info);
        info.struct_size = offsetof(inlay_model_info, device);
        if (model) {
            const unsigned char* tail = (const unsigned char*)&info + offsetof(inlay_model_info, device);
            size_t i;
            int untouched = 1;
            CHECK_STATUS(inlay_model_get_info(model, &info), INLAY_OK);
            for (i = 0; i < sizeof info - offsetof(inlay_model_info, device); ++i) untouched &= tail[i] == 0xab;
            CHECK(untouched);
            CHECK(info.n_vocab == 512);
        }
        inlay_model_free(model);
    }

    /* A KV budget of 1/10000 of the free memory: some blocks, no more than that share
     * of the total. */
    {
        inlay_metrics m;
        const size_t block_bytes = 5 * 2 * 4 * 16 * 8 * 2; /* layers x k|v x KV heads x slots x dims x f16 */
        inlay_model_params_init(&mp);
        mp.n_threads = 1;
        mp.device = INLAY_DEVICE_CPU;
        mp.kv_memory_fraction = 1e-4;
        CHECK_STATUS(load(path, &mp, &model), INLAY_OK);
        if (model) {
            memset(&m, 0, sizeof m);
            m.struct_size = sizeof m;
            CHECK_STATUS(inlay_model_get_metrics(model, &m), INLAY_OK);
            CHECK(m.block_size == 16);
            CHECK(m.blocks_total >= 1);
            /* 1e-4 of at most 16 TiB of RAM */
            CHECK((double)m.blocks_total * (double)block_bytes <= 1e-4 * 16.0 * 1099511627776.0);
            printf("kv_memory_fraction 1e-4: %lld blocks of %zu bytes\n", (long long)m.blocks_total, block_bytes);
        }
        inlay_model_free(model);
    }
    return capi_finish("device");
}
