// The hand-written declarations of src/sys.rs against the C compiler's view of
// inlay.h (layout/layout.c, run by build.rs): every struct's size and alignment, every
// field's offset and size, every constant's value.
mod common;

use std::mem::{align_of, size_of, MaybeUninit};
use std::ptr;

use inlay::sys;

include!(concat!(env!("OUT_DIR"), "/c_layout.rs"));

fn size_of_pointee<T>(_: *const T) -> usize {
    size_of::<T>()
}

macro_rules! rust_layout {
    ($($t:ident { $($f:ident),* $(,)? })*) => {{
        let mut lines: Vec<String> = Vec::new();
        $(
            lines.push(format!("struct {} {} {}", stringify!($t), size_of::<sys::$t>(), align_of::<sys::$t>()));
            $({
                let value = MaybeUninit::<sys::$t>::uninit();
                let base = value.as_ptr();
                // SAFETY: only the address of the field is taken; nothing is read.
                let field = unsafe { ptr::addr_of!((*base).$f) };
                lines.push(format!(
                    "field {} {} {} {}",
                    stringify!($t),
                    stringify!($f),
                    field as usize - base as usize,
                    size_of_pointee(field)
                ));
            })*
        )*
        lines
    }};
}

macro_rules! rust_constants {
    ($($c:ident),* $(,)?) => {
        vec![$(format!("const {} {}", stringify!($c), sys::$c as i64)),*]
    };
}

#[test]
fn declarations_match_the_c_header() {
    let c_table = match C_LAYOUT {
        Ok(table) => table,
        Err(why) => return common::skip(&format!("no C layout to compare with: {}", why)),
    };
    let mut rust = rust_layout! {
        inlay_model_params { struct_size, n_threads, context_length, progress, progress_user, kv_pool,
            kv_budget_bytes, kv_block_size, batch_tokens, device, device_index, kv_memory_fraction }
        inlay_model_info { struct_size, architecture, name, n_params, file_bytes, n_vocab, n_embd, n_layers,
            n_heads, n_kv_heads, head_dim, n_ff, context_length, train_context_length, bos_token, eos_token, device }
        inlay_vocab_info { struct_size, tokenizer_model, name, n_vocab, bos_token, eos_token, add_bos }
        inlay_session_params { struct_size, context_length, reserved, speculation, draft_model, n_draft,
            n_draft_min, p_min }
        inlay_generate_params { struct_size, max_tokens, temperature, top_k, top_p, min_p, repeat_penalty,
            frequency_penalty, presence_penalty, penalty_last_n, seed, ignore_eos, stop, n_stop, add_bos,
            parse_special, on_token, user }
        inlay_timings { struct_size, prompt_tokens, generated_tokens, prefill_s, decode_s, prefill_tokens_per_s,
            decode_tokens_per_s, prompt_tokens_reused, draft_tokens_proposed, draft_tokens_accepted }
        inlay_kv_pool_params { struct_size, budget_bytes, budget_blocks, block_size }
        inlay_metrics { struct_size, blocks_total, blocks_free, blocks_cached, blocks_shared, blocks_held,
            block_cap, block_size, sessions, sequences_running, sequences_waiting, preemptions, kv_full_failures,
            tokens_prefilled, tokens_generated, prefix_tokens_reused, steps, step_seconds_mean, step_seconds_max,
            step_seconds_last, busy_seconds, generated_tokens_per_s, draft_rounds, draft_tokens_proposed,
            draft_tokens_accepted, draft_acceptance_rate, draft_passes, draft_seconds, steps_ids_only,
            steps_pipelined }
        inlay_speculation_stats { struct_size, rounds, tokens_proposed, tokens_accepted, acceptance_rate }
        inlay_chat_message { role, content }
        inlay_chat_params { struct_size, thinking, add_generation_prompt, chat_template }
        inlay_status {}
        inlay_thinking {}
    };
    rust.extend(rust_constants![
        INLAY_ABI_VERSION,
        INLAY_OK,
        INLAY_ERR_INVALID_ARGUMENT,
        INLAY_ERR_IO,
        INLAY_ERR_BAD_FORMAT,
        INLAY_ERR_TRUNCATED,
        INLAY_ERR_UNSUPPORTED,
        INLAY_ERR_MISSING,
        INLAY_ERR_SHAPE_MISMATCH,
        INLAY_ERR_OUT_OF_MEMORY,
        INLAY_ERR_CANCELLED,
        INLAY_ERR_CONTEXT_FULL,
        INLAY_ERR_KV_FULL,
        INLAY_ERR_BUFFER_TOO_SMALL,
        INLAY_ERR_BUSY,
        INLAY_ERR_INVALID_TOKEN,
        INLAY_ERR_INVALID_UTF8,
        INLAY_ERR_BAD_WEIGHTS,
        INLAY_ERR_INTERNAL,
        INLAY_LOG_DEBUG,
        INLAY_LOG_INFO,
        INLAY_LOG_WARN,
        INLAY_LOG_ERROR,
        INLAY_LOG_NONE,
        INLAY_DEVICE_AUTO,
        INLAY_DEVICE_CPU,
        INLAY_DEVICE_CUDA,
        INLAY_TOKENIZE_ADD_BOS,
        INLAY_TOKENIZE_PARSE_SPECIAL,
        INLAY_SPECULATION_NONE,
        INLAY_SPECULATION_DRAFT_MODEL,
        INLAY_SPECULATION_PROMPT_LOOKUP,
        INLAY_STOP_NONE,
        INLAY_STOP_EOG,
        INLAY_STOP_MAX_TOKENS,
        INLAY_STOP_STRING,
        INLAY_STOP_CALLBACK,
        INLAY_STOP_CANCELLED,
        INLAY_STOP_CONTEXT_FULL,
        INLAY_THINKING_DEFAULT,
        INLAY_THINKING_OFF,
        INLAY_THINKING_ON,
    ]);
    let mut c: Vec<String> = c_table.lines().map(str::to_string).collect();
    assert!(c.len() > 150, "layout.c printed {} lines", c.len());
    c.sort();
    rust.sort();
    let only_c: Vec<&String> = c.iter().filter(|l| !rust.contains(l)).collect();
    let only_rust: Vec<&String> = rust.iter().filter(|l| !c.contains(l)).collect();
    assert!(
        only_c.is_empty() && only_rust.is_empty(),
        "C says:\n  {}\nRust says:\n  {}",
        only_c.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n  "),
        only_rust.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n  ")
    );
}
