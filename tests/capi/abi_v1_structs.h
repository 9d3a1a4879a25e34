/*
 * The params and out structs of inlay's C ABI version 1, copied as inlay.h declared them
 * when the ABI rules (docs/ABI.md) were written down, under other names. They must never
 * change: they stand for a program compiled against that header, which has to keep
 * working with every later libinlay.so.1 (abi_v1.c). Fields appended to the structs in
 * inlay.h since then are not here, so these are smaller or equal.
 */
#ifndef INLAY_TESTS_CAPI_ABI_V1_STRUCTS_H
#define INLAY_TESTS_CAPI_ABI_V1_STRUCTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "inlay/inlay.h" /* only for the enums and function pointer types, unchanged since v1 */

typedef struct v1_model_params {
    size_t struct_size;
    int32_t n_threads;
    int32_t context_length;
    inlay_progress_fn progress;
    void* progress_user;
    struct inlay_kv_pool* kv_pool;
    int64_t kv_budget_bytes;
    int32_t kv_block_size;
    int32_t batch_tokens;
    int32_t device;
    int32_t device_index;
    double kv_memory_fraction;
} v1_model_params;

typedef struct v1_model_info {
    size_t struct_size;
    const char* architecture;
    const char* name;
    int64_t n_params;
    int64_t file_bytes;
    int32_t n_vocab;
    int32_t n_embd;
    int32_t n_layers;
    int32_t n_heads;
    int32_t n_kv_heads;
    int32_t head_dim;
    int32_t n_ff;
    int32_t context_length;
    int32_t train_context_length;
    int32_t bos_token;
    int32_t eos_token;
    const char* device;
} v1_model_info;

typedef struct v1_session_params {
    size_t struct_size;
    int32_t context_length;
} v1_session_params;

typedef struct v1_generate_params {
    size_t struct_size;
    int32_t max_tokens;
    float temperature;
    int32_t top_k;
    float top_p;
    float min_p;
    float repeat_penalty;
    float frequency_penalty;
    float presence_penalty;
    int32_t penalty_last_n;
    uint64_t seed;
    bool ignore_eos;
    const char* const* stop;
    size_t n_stop;
    bool add_bos;
    bool parse_special;
    inlay_token_fn on_token;
    void* user;
} v1_generate_params;

typedef struct v1_timings {
    size_t struct_size;
    int64_t prompt_tokens;
    int64_t generated_tokens;
    double prefill_s;
    double decode_s;
    double prefill_tokens_per_s;
    double decode_tokens_per_s;
    int64_t prompt_tokens_reused;
} v1_timings;

typedef struct v1_kv_pool_params {
    size_t struct_size;
    int64_t budget_bytes;
    int64_t budget_blocks;
    int32_t block_size;
} v1_kv_pool_params;

typedef struct v1_metrics {
    size_t struct_size;
    int64_t blocks_total;
    int64_t blocks_free;
    int64_t blocks_cached;
    int64_t blocks_shared;
    int64_t blocks_held;
    int64_t block_cap;
    int32_t block_size;
    int32_t sessions;
    int32_t sequences_running;
    int32_t sequences_waiting;
    int64_t preemptions;
    int64_t kv_full_failures;
    int64_t tokens_prefilled;
    int64_t tokens_generated;
    int64_t prefix_tokens_reused;
    int64_t steps;
    double step_seconds_mean;
    double step_seconds_max;
    double step_seconds_last;
    double busy_seconds;
    double generated_tokens_per_s;
} v1_metrics;

typedef struct v1_chat_params {
    size_t struct_size;
    inlay_thinking thinking;
    bool add_generation_prompt;
    const char* chat_template;
} v1_chat_params;

#endif /* INLAY_TESTS_CAPI_ABI_V1_STRUCTS_H */
