/* struct_layout: prints sizeof and every field's offsetof of the inlay.h structs that
 * Inlay/Native.cs declares, one "struct SIZE" or "struct.field OFFSET" per line. InlayTests.exe
 * compares them with Marshal.SizeOf / Marshal.OffsetOf of its copies, field by field. */
#include <stddef.h>
#include <stdio.h>

#include "inlay/inlay.h"

#define S(type) printf(#type " %zu\n", sizeof(type))
#define F(type, field) printf(#type "." #field " %zu\n", offsetof(type, field))

int main(void) {
    S(inlay_model_params);
    F(inlay_model_params, struct_size); F(inlay_model_params, n_threads); F(inlay_model_params, context_length);
    F(inlay_model_params, progress); F(inlay_model_params, progress_user); F(inlay_model_params, kv_pool);
    F(inlay_model_params, kv_budget_bytes); F(inlay_model_params, kv_block_size); F(inlay_model_params, batch_tokens);
    F(inlay_model_params, device); F(inlay_model_params, device_index); F(inlay_model_params, kv_memory_fraction);

    S(inlay_model_info);
    F(inlay_model_info, struct_size); F(inlay_model_info, architecture); F(inlay_model_info, name);
    F(inlay_model_info, n_params); F(inlay_model_info, file_bytes); F(inlay_model_info, n_vocab);
    F(inlay_model_info, n_embd); F(inlay_model_info, n_layers); F(inlay_model_info, n_heads);
    F(inlay_model_info, n_kv_heads); F(inlay_model_info, head_dim); F(inlay_model_info, n_ff);
    F(inlay_model_info, context_length); F(inlay_model_info, train_context_length); F(inlay_model_info, bos_token);
    F(inlay_model_info, eos_token); F(inlay_model_info, device);

    S(inlay_session_params);
    F(inlay_session_params, struct_size); F(inlay_session_params, context_length); F(inlay_session_params, reserved);
    F(inlay_session_params, speculation); F(inlay_session_params, draft_model); F(inlay_session_params, n_draft);
    F(inlay_session_params, n_draft_min); F(inlay_session_params, p_min);

    S(inlay_generate_params);
    F(inlay_generate_params, struct_size); F(inlay_generate_params, max_tokens); F(inlay_generate_params, temperature);
    F(inlay_generate_params, top_k); F(inlay_generate_params, top_p); F(inlay_generate_params, min_p);
    F(inlay_generate_params, repeat_penalty); F(inlay_generate_params, frequency_penalty);
    F(inlay_generate_params, presence_penalty); F(inlay_generate_params, penalty_last_n); F(inlay_generate_params, seed);
    F(inlay_generate_params, ignore_eos); F(inlay_generate_params, stop); F(inlay_generate_params, n_stop);
    F(inlay_generate_params, add_bos); F(inlay_generate_params, parse_special); F(inlay_generate_params, on_token);
    F(inlay_generate_params, user);

    S(inlay_timings);
    F(inlay_timings, struct_size); F(inlay_timings, prompt_tokens); F(inlay_timings, generated_tokens);
    F(inlay_timings, prefill_s); F(inlay_timings, decode_s); F(inlay_timings, prefill_tokens_per_s);
    F(inlay_timings, decode_tokens_per_s); F(inlay_timings, prompt_tokens_reused);
    F(inlay_timings, draft_tokens_proposed); F(inlay_timings, draft_tokens_accepted);

    S(inlay_metrics);
    F(inlay_metrics, struct_size); F(inlay_metrics, blocks_total); F(inlay_metrics, blocks_free);
    F(inlay_metrics, blocks_cached); F(inlay_metrics, blocks_shared); F(inlay_metrics, blocks_held);
    F(inlay_metrics, block_cap); F(inlay_metrics, block_size); F(inlay_metrics, sessions);
    F(inlay_metrics, sequences_running); F(inlay_metrics, sequences_waiting); F(inlay_metrics, preemptions);
    F(inlay_metrics, kv_full_failures); F(inlay_metrics, tokens_prefilled); F(inlay_metrics, tokens_generated);
    F(inlay_metrics, prefix_tokens_reused); F(inlay_metrics, steps); F(inlay_metrics, step_seconds_mean);
    F(inlay_metrics, step_seconds_max); F(inlay_metrics, step_seconds_last); F(inlay_metrics, busy_seconds);
    F(inlay_metrics, generated_tokens_per_s); F(inlay_metrics, draft_rounds); F(inlay_metrics, draft_tokens_proposed);
    F(inlay_metrics, draft_tokens_accepted); F(inlay_metrics, draft_acceptance_rate); F(inlay_metrics, draft_passes);
    F(inlay_metrics, draft_seconds);
    F(inlay_metrics, steps_ids_only);
    F(inlay_metrics, steps_pipelined);

    S(inlay_chat_message);
    F(inlay_chat_message, role); F(inlay_chat_message, content);

    S(inlay_chat_params);
    F(inlay_chat_params, struct_size); F(inlay_chat_params, thinking); F(inlay_chat_params, add_generation_prompt);
    F(inlay_chat_params, chat_template);
    return 0;
}
