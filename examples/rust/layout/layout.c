/*
 * Prints what the C compiler makes of inlay.h's structs and constants, one per line:
 *     struct NAME SIZE ALIGN
 *     field NAME FIELD OFFSET SIZE
 *     const NAME VALUE
 * build.rs runs it; tests/layout.rs compares each line with src/sys.rs, so a field or
 * constant mistyped in the hand-written Rust declarations fails a test.
 */
#include <stdalign.h>
#include <stddef.h>
#include <stdio.h>

#include "inlay/inlay.h"

#define STRUCT(T) printf("struct %s %zu %zu\n", #T, sizeof(T), alignof(T))
#define FIELD(T, f) printf("field %s %s %zu %zu\n", #T, #f, offsetof(T, f), sizeof(((T*)0)->f))
#define CONST(c) printf("const %s %lld\n", #c, (long long)(c))

int main(void) {
    STRUCT(inlay_model_params);
    FIELD(inlay_model_params, struct_size);
    FIELD(inlay_model_params, n_threads);
    FIELD(inlay_model_params, context_length);
    FIELD(inlay_model_params, progress);
    FIELD(inlay_model_params, progress_user);
    FIELD(inlay_model_params, kv_pool);
    FIELD(inlay_model_params, kv_budget_bytes);
    FIELD(inlay_model_params, kv_block_size);
    FIELD(inlay_model_params, batch_tokens);
    FIELD(inlay_model_params, device);
    FIELD(inlay_model_params, device_index);
    FIELD(inlay_model_params, kv_memory_fraction);

    STRUCT(inlay_vocab_info);
    FIELD(inlay_vocab_info, struct_size);
    FIELD(inlay_vocab_info, tokenizer_model);
    FIELD(inlay_vocab_info, name);
    FIELD(inlay_vocab_info, n_vocab);
    FIELD(inlay_vocab_info, bos_token);
    FIELD(inlay_vocab_info, eos_token);
    FIELD(inlay_vocab_info, add_bos);

    STRUCT(inlay_model_info);
    FIELD(inlay_model_info, struct_size);
    FIELD(inlay_model_info, architecture);
    FIELD(inlay_model_info, name);
    FIELD(inlay_model_info, n_params);
    FIELD(inlay_model_info, file_bytes);
    FIELD(inlay_model_info, n_vocab);
    FIELD(inlay_model_info, n_embd);
    FIELD(inlay_model_info, n_layers);
    FIELD(inlay_model_info, n_heads);
    FIELD(inlay_model_info, n_kv_heads);
    FIELD(inlay_model_info, head_dim);
    FIELD(inlay_model_info, n_ff);
    FIELD(inlay_model_info, context_length);
    FIELD(inlay_model_info, train_context_length);
    FIELD(inlay_model_info, bos_token);
    FIELD(inlay_model_info, eos_token);
    FIELD(inlay_model_info, device);

    STRUCT(inlay_session_params);
    FIELD(inlay_session_params, struct_size);
    FIELD(inlay_session_params, context_length);
    FIELD(inlay_session_params, reserved);
    FIELD(inlay_session_params, speculation);
    FIELD(inlay_session_params, draft_model);
    FIELD(inlay_session_params, n_draft);
    FIELD(inlay_session_params, n_draft_min);
    FIELD(inlay_session_params, p_min);

    STRUCT(inlay_generate_params);
    FIELD(inlay_generate_params, struct_size);
    FIELD(inlay_generate_params, max_tokens);
    FIELD(inlay_generate_params, temperature);
    FIELD(inlay_generate_params, top_k);
    FIELD(inlay_generate_params, top_p);
    FIELD(inlay_generate_params, min_p);
    FIELD(inlay_generate_params, repeat_penalty);
    FIELD(inlay_generate_params, frequency_penalty);
    FIELD(inlay_generate_params, presence_penalty);
    FIELD(inlay_generate_params, penalty_last_n);
    FIELD(inlay_generate_params, seed);
    FIELD(inlay_generate_params, ignore_eos);
    FIELD(inlay_generate_params, stop);
    FIELD(inlay_generate_params, n_stop);
    FIELD(inlay_generate_params, add_bos);
    FIELD(inlay_generate_params, parse_special);
    FIELD(inlay_generate_params, on_token);
    FIELD(inlay_generate_params, user);

    STRUCT(inlay_timings);
    FIELD(inlay_timings, struct_size);
    FIELD(inlay_timings, prompt_tokens);
    FIELD(inlay_timings, generated_tokens);
    FIELD(inlay_timings, prefill_s);
    FIELD(inlay_timings, decode_s);
    FIELD(inlay_timings, prefill_tokens_per_s);
    FIELD(inlay_timings, decode_tokens_per_s);
    FIELD(inlay_timings, prompt_tokens_reused);
    FIELD(inlay_timings, draft_tokens_proposed);
    FIELD(inlay_timings, draft_tokens_accepted);

    STRUCT(inlay_kv_pool_params);
    FIELD(inlay_kv_pool_params, struct_size);
    FIELD(inlay_kv_pool_params, budget_bytes);
    FIELD(inlay_kv_pool_params, budget_blocks);
    FIELD(inlay_kv_pool_params, block_size);

    STRUCT(inlay_metrics);
    FIELD(inlay_metrics, struct_size);
    FIELD(inlay_metrics, blocks_total);
    FIELD(inlay_metrics, blocks_free);
    FIELD(inlay_metrics, blocks_cached);
    FIELD(inlay_metrics, blocks_shared);
    FIELD(inlay_metrics, blocks_held);
    FIELD(inlay_metrics, block_cap);
    FIELD(inlay_metrics, block_size);
    FIELD(inlay_metrics, sessions);
    FIELD(inlay_metrics, sequences_running);
    FIELD(inlay_metrics, sequences_waiting);
    FIELD(inlay_metrics, preemptions);
    FIELD(inlay_metrics, kv_full_failures);
    FIELD(inlay_metrics, tokens_prefilled);
    FIELD(inlay_metrics, tokens_generated);
    FIELD(inlay_metrics, prefix_tokens_reused);
    FIELD(inlay_metrics, steps);
    FIELD(inlay_metrics, step_seconds_mean);
    FIELD(inlay_metrics, step_seconds_max);
    FIELD(inlay_metrics, step_seconds_last);
    FIELD(inlay_metrics, busy_seconds);
    FIELD(inlay_metrics, generated_tokens_per_s);
    FIELD(inlay_metrics, draft_rounds);
    FIELD(inlay_metrics, draft_tokens_proposed);
    FIELD(inlay_metrics, draft_tokens_accepted);
    FIELD(inlay_metrics, draft_acceptance_rate);
    FIELD(inlay_metrics, draft_passes);
    FIELD(inlay_metrics, draft_seconds);
    FIELD(inlay_metrics, steps_ids_only);
    FIELD(inlay_metrics, steps_pipelined);

    STRUCT(inlay_speculation_stats);
    FIELD(inlay_speculation_stats, struct_size);
    FIELD(inlay_speculation_stats, rounds);
    FIELD(inlay_speculation_stats, tokens_proposed);
    FIELD(inlay_speculation_stats, tokens_accepted);
    FIELD(inlay_speculation_stats, acceptance_rate);

    STRUCT(inlay_chat_message);
    FIELD(inlay_chat_message, role);
    FIELD(inlay_chat_message, content);

    STRUCT(inlay_chat_params);
    FIELD(inlay_chat_params, struct_size);
    FIELD(inlay_chat_params, thinking);
    FIELD(inlay_chat_params, add_generation_prompt);
    FIELD(inlay_chat_params, chat_template);

    /* Enums cross the ABI as C ints (sys.rs declares them as c_int). */
    STRUCT(inlay_status);
    STRUCT(inlay_thinking);
    CONST(INLAY_ABI_VERSION);
    CONST(INLAY_OK);
    CONST(INLAY_ERR_INVALID_ARGUMENT);
    CONST(INLAY_ERR_IO);
    CONST(INLAY_ERR_BAD_FORMAT);
    CONST(INLAY_ERR_TRUNCATED);
    CONST(INLAY_ERR_UNSUPPORTED);
    CONST(INLAY_ERR_MISSING);
    CONST(INLAY_ERR_SHAPE_MISMATCH);
    CONST(INLAY_ERR_OUT_OF_MEMORY);
    CONST(INLAY_ERR_CANCELLED);
    CONST(INLAY_ERR_CONTEXT_FULL);
    CONST(INLAY_ERR_KV_FULL);
    CONST(INLAY_ERR_BUFFER_TOO_SMALL);
    CONST(INLAY_ERR_BUSY);
    CONST(INLAY_ERR_INVALID_TOKEN);
    CONST(INLAY_ERR_INVALID_UTF8);
    CONST(INLAY_ERR_BAD_WEIGHTS);
    CONST(INLAY_ERR_INTERNAL);
    CONST(INLAY_LOG_DEBUG);
    CONST(INLAY_LOG_INFO);
    CONST(INLAY_LOG_WARN);
    CONST(INLAY_LOG_ERROR);
    CONST(INLAY_LOG_NONE);
    CONST(INLAY_DEVICE_AUTO);
    CONST(INLAY_DEVICE_CPU);
    CONST(INLAY_DEVICE_CUDA);
    CONST(INLAY_TOKENIZE_ADD_BOS);
    CONST(INLAY_TOKENIZE_PARSE_SPECIAL);
    CONST(INLAY_SPECULATION_NONE);
    CONST(INLAY_SPECULATION_DRAFT_MODEL);
    CONST(INLAY_SPECULATION_PROMPT_LOOKUP);
    CONST(INLAY_STOP_NONE);
    CONST(INLAY_STOP_EOG);
    CONST(INLAY_STOP_MAX_TOKENS);
    CONST(INLAY_STOP_STRING);
    CONST(INLAY_STOP_CALLBACK);
    CONST(INLAY_STOP_CANCELLED);
    CONST(INLAY_STOP_CONTEXT_FULL);
    CONST(INLAY_THINKING_DEFAULT);
    CONST(INLAY_THINKING_OFF);
    CONST(INLAY_THINKING_ON);
    return 0;
}
