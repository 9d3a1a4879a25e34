//! The C ABI of include/inlay/inlay.h, declared by hand (no bindgen: no crates).
//!
//! Every struct is `#[repr(C)]` with the fields of inlay.h in their order and types
//! (`size_t` = `usize`, `bool` = `bool`, C function pointers = `Option<extern fn>` so that
//! NULL is `None`); tests/layout.rs checks sizes, offsets and constants against the C
//! compiler's view of the header. C enums are declared as `c_int` with constants rather
//! than Rust enums: the library may return values this declaration does not know (a newer
//! minor version adds stop reasons and statuses, docs/ABI.md), and such a value in a Rust
//! enum would be undefined behaviour.
//!
//! `inlay_X_params_init` is a macro in C passing `sizeof` of the caller's struct to
//! `inlay_X_params_init_size`; the plain symbol of that name writes the frozen ABI 1
//! struct and exists only for C programs built before the macro. Rust therefore calls the
//! `_size` functions with `size_of` of the structs below, and the plain symbols are not
//! declared here.
#![allow(non_camel_case_types)]

use std::marker::{PhantomData, PhantomPinned};
use std::os::raw::{c_char, c_int, c_void};

// Opaque handles: only ever used behind pointers, never constructed, !Send/!Sync/!Unpin.
macro_rules! opaque {
    ($($name:ident),*) => {$(
        #[repr(C)]
        pub struct $name {
            _data: [u8; 0],
            _marker: PhantomData<(*mut u8, PhantomPinned)>,
        }
    )*};
}
opaque!(inlay_model, inlay_session, inlay_result, inlay_kv_pool, inlay_vocab);

pub const INLAY_ABI_VERSION: c_int = 1;

pub type inlay_status = c_int;
pub const INLAY_OK: inlay_status = 0;
pub const INLAY_ERR_INVALID_ARGUMENT: inlay_status = 1;
pub const INLAY_ERR_IO: inlay_status = 2;
pub const INLAY_ERR_BAD_FORMAT: inlay_status = 3;
pub const INLAY_ERR_TRUNCATED: inlay_status = 4;
pub const INLAY_ERR_UNSUPPORTED: inlay_status = 5;
pub const INLAY_ERR_MISSING: inlay_status = 6;
pub const INLAY_ERR_SHAPE_MISMATCH: inlay_status = 7;
pub const INLAY_ERR_OUT_OF_MEMORY: inlay_status = 8;
pub const INLAY_ERR_CANCELLED: inlay_status = 9;
pub const INLAY_ERR_CONTEXT_FULL: inlay_status = 10;
pub const INLAY_ERR_KV_FULL: inlay_status = 11;
pub const INLAY_ERR_BUFFER_TOO_SMALL: inlay_status = 12;
pub const INLAY_ERR_BUSY: inlay_status = 13;
pub const INLAY_ERR_INVALID_TOKEN: inlay_status = 14;
pub const INLAY_ERR_INVALID_UTF8: inlay_status = 15;
pub const INLAY_ERR_BAD_WEIGHTS: inlay_status = 16;
pub const INLAY_ERR_INTERNAL: inlay_status = 99;

pub type inlay_log_level = c_int;
pub const INLAY_LOG_DEBUG: inlay_log_level = 0;
pub const INLAY_LOG_INFO: inlay_log_level = 1;
pub const INLAY_LOG_WARN: inlay_log_level = 2;
pub const INLAY_LOG_ERROR: inlay_log_level = 3;
pub const INLAY_LOG_NONE: inlay_log_level = 4;

pub type inlay_log_fn = Option<unsafe extern "C" fn(level: inlay_log_level, message: *const c_char, user: *mut c_void)>;

pub type inlay_progress_fn = Option<unsafe extern "C" fn(progress: f32, user: *mut c_void) -> bool>;

pub type inlay_device = c_int;
pub const INLAY_DEVICE_AUTO: inlay_device = 0;
pub const INLAY_DEVICE_CPU: inlay_device = 1;
pub const INLAY_DEVICE_CUDA: inlay_device = 2;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct inlay_model_params {
    pub struct_size: usize,
    pub n_threads: i32,
    pub context_length: i32,
    pub progress: inlay_progress_fn,
    pub progress_user: *mut c_void,
    pub kv_pool: *mut inlay_kv_pool,
    pub kv_budget_bytes: i64,
    pub kv_block_size: i32,
    pub batch_tokens: i32,
    pub device: i32,
    pub device_index: i32,
    pub kv_memory_fraction: f64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct inlay_model_info {
    pub struct_size: usize,
    pub architecture: *const c_char,
    pub name: *const c_char,
    pub n_params: i64,
    pub file_bytes: i64,
    pub n_vocab: i32,
    pub n_embd: i32,
    pub n_layers: i32,
    pub n_heads: i32,
    pub n_kv_heads: i32,
    pub head_dim: i32,
    pub n_ff: i32,
    pub context_length: i32,
    pub train_context_length: i32,
    pub bos_token: i32,
    pub eos_token: i32,
    pub device: *const c_char,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct inlay_vocab_info {
    pub struct_size: usize,
    pub tokenizer_model: *const c_char,
    pub name: *const c_char,
    pub n_vocab: i32,
    pub bos_token: i32,
    pub eos_token: i32,
    pub add_bos: bool,
}

pub type inlay_tokenize_flags = c_int;
pub const INLAY_TOKENIZE_ADD_BOS: inlay_tokenize_flags = 1;
pub const INLAY_TOKENIZE_PARSE_SPECIAL: inlay_tokenize_flags = 2;

pub type inlay_speculation = c_int;
pub const INLAY_SPECULATION_NONE: inlay_speculation = 0;
pub const INLAY_SPECULATION_DRAFT_MODEL: inlay_speculation = 1;
pub const INLAY_SPECULATION_PROMPT_LOOKUP: inlay_speculation = 2;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct inlay_session_params {
    pub struct_size: usize,
    pub context_length: i32,
    pub reserved: i32,
    pub speculation: i32,
    pub draft_model: *mut inlay_model,
    pub n_draft: i32,
    pub n_draft_min: i32,
    pub p_min: f32,
}

pub type inlay_token_fn =
    Option<unsafe extern "C" fn(token: i32, piece: *const c_char, piece_len: usize, user: *mut c_void) -> bool>;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct inlay_generate_params {
    pub struct_size: usize,
    pub max_tokens: i32,
    pub temperature: f32,
    pub top_k: i32,
    pub top_p: f32,
    pub min_p: f32,
    pub repeat_penalty: f32,
    pub frequency_penalty: f32,
    pub presence_penalty: f32,
    pub penalty_last_n: i32,
    pub seed: u64,
    pub ignore_eos: bool,
    pub stop: *const *const c_char,
    pub n_stop: usize,
    pub add_bos: bool,
    pub parse_special: bool,
    pub on_token: inlay_token_fn,
    pub user: *mut c_void,
}

pub type inlay_stop_reason = c_int;
pub const INLAY_STOP_NONE: inlay_stop_reason = 0;
pub const INLAY_STOP_EOG: inlay_stop_reason = 1;
pub const INLAY_STOP_MAX_TOKENS: inlay_stop_reason = 2;
pub const INLAY_STOP_STRING: inlay_stop_reason = 3;
pub const INLAY_STOP_CALLBACK: inlay_stop_reason = 4;
pub const INLAY_STOP_CANCELLED: inlay_stop_reason = 5;
pub const INLAY_STOP_CONTEXT_FULL: inlay_stop_reason = 6;

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct inlay_timings {
    pub struct_size: usize,
    pub prompt_tokens: i64,
    pub generated_tokens: i64,
    pub prefill_s: f64,
    pub decode_s: f64,
    pub prefill_tokens_per_s: f64,
    pub decode_tokens_per_s: f64,
    pub prompt_tokens_reused: i64,
    pub draft_tokens_proposed: i64,
    pub draft_tokens_accepted: i64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct inlay_kv_pool_params {
    pub struct_size: usize,
    pub budget_bytes: i64,
    pub budget_blocks: i64,
    pub block_size: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct inlay_metrics {
    pub struct_size: usize,
    pub blocks_total: i64,
    pub blocks_free: i64,
    pub blocks_cached: i64,
    pub blocks_shared: i64,
    pub blocks_held: i64,
    pub block_cap: i64,
    pub block_size: i32,
    pub sessions: i32,
    pub sequences_running: i32,
    pub sequences_waiting: i32,
    pub preemptions: i64,
    pub kv_full_failures: i64,
    pub tokens_prefilled: i64,
    pub tokens_generated: i64,
    pub prefix_tokens_reused: i64,
    pub steps: i64,
    pub step_seconds_mean: f64,
    pub step_seconds_max: f64,
    pub step_seconds_last: f64,
    pub busy_seconds: f64,
    pub generated_tokens_per_s: f64,
    pub draft_rounds: i64,
    pub draft_tokens_proposed: i64,
    pub draft_tokens_accepted: i64,
    pub draft_acceptance_rate: f64,
    pub draft_passes: i64,
    pub draft_seconds: f64,
    pub steps_ids_only: i64,
    pub steps_pipelined: i64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct inlay_speculation_stats {
    pub struct_size: usize,
    pub rounds: i64,
    pub tokens_proposed: i64,
    pub tokens_accepted: i64,
    pub acceptance_rate: f64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct inlay_chat_message {
    pub role: *const c_char,
    pub content: *const c_char,
}

pub type inlay_thinking = c_int;
pub const INLAY_THINKING_DEFAULT: inlay_thinking = 0;
pub const INLAY_THINKING_OFF: inlay_thinking = 1;
pub const INLAY_THINKING_ON: inlay_thinking = 2;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct inlay_chat_params {
    pub struct_size: usize,
    pub thinking: inlay_thinking,
    pub add_generation_prompt: bool,
    pub chat_template: *const c_char,
}

extern "C" {
    pub fn inlay_abi_version() -> c_int;
    pub fn inlay_version() -> *const c_char;

    pub fn inlay_status_name(status: inlay_status) -> *const c_char;
    pub fn inlay_last_error() -> *const c_char;

    pub fn inlay_set_log_sink(sink: inlay_log_fn, min_level: inlay_log_level, user: *mut c_void);

    pub fn inlay_model_params_init_size(params: *mut inlay_model_params, size: usize);
    pub fn inlay_model_load(
        path: *const c_char,
        params: *const inlay_model_params,
        out_model: *mut *mut inlay_model,
    ) -> inlay_status;
    pub fn inlay_model_free(model: *mut inlay_model);
    pub fn inlay_model_get_info(model: *const inlay_model, info: *mut inlay_model_info) -> inlay_status;

    pub fn inlay_tokenize(
        model: *const inlay_model,
        text: *const c_char,
        len: usize,
        flags: u32,
        out: *mut i32,
        capacity: usize,
        n_tokens: *mut usize,
    ) -> inlay_status;
    pub fn inlay_detokenize(
        model: *const inlay_model,
        tokens: *const i32,
        n: usize,
        render_special: bool,
        out: *mut c_char,
        capacity: usize,
        length: *mut usize,
    ) -> inlay_status;

    pub fn inlay_vocab_load(path: *const c_char, out_vocab: *mut *mut inlay_vocab) -> inlay_status;
    pub fn inlay_vocab_free(vocab: *mut inlay_vocab);
    pub fn inlay_vocab_get_info(vocab: *const inlay_vocab, info: *mut inlay_vocab_info) -> inlay_status;
    pub fn inlay_vocab_tokenize(
        vocab: *const inlay_vocab,
        text: *const c_char,
        len: usize,
        flags: u32,
        out: *mut i32,
        capacity: usize,
        n_tokens: *mut usize,
    ) -> inlay_status;
    pub fn inlay_vocab_detokenize(
        vocab: *const inlay_vocab,
        tokens: *const i32,
        n: usize,
        render_special: bool,
        out: *mut c_char,
        capacity: usize,
        length: *mut usize,
    ) -> inlay_status;

    pub fn inlay_session_params_init_size(params: *mut inlay_session_params, size: usize);
    pub fn inlay_session_create(
        model: *mut inlay_model,
        params: *const inlay_session_params,
        out_session: *mut *mut inlay_session,
    ) -> inlay_status;
    pub fn inlay_session_free(session: *mut inlay_session);
    pub fn inlay_session_reset(session: *mut inlay_session) -> inlay_status;
    pub fn inlay_session_n_tokens(session: *const inlay_session, n_tokens: *mut usize) -> inlay_status;
    pub fn inlay_session_cancel(session: *mut inlay_session) -> inlay_status;

    pub fn inlay_generate_params_init_size(params: *mut inlay_generate_params, size: usize);
    pub fn inlay_session_generate(
        session: *mut inlay_session,
        prompt: *const c_char,
        params: *const inlay_generate_params,
        out_result: *mut *mut inlay_result,
    ) -> inlay_status;
    pub fn inlay_session_generate_tokens(
        session: *mut inlay_session,
        tokens: *const i32,
        n_tokens: usize,
        params: *const inlay_generate_params,
        out_result: *mut *mut inlay_result,
    ) -> inlay_status;

    pub fn inlay_result_free(result: *mut inlay_result);
    pub fn inlay_result_text(result: *const inlay_result) -> *const c_char;
    pub fn inlay_result_tokens(result: *const inlay_result, n: *mut usize) -> *const i32;
    pub fn inlay_result_prompt_tokens(result: *const inlay_result, n: *mut usize) -> *const i32;
    pub fn inlay_result_stop_reason(result: *const inlay_result) -> inlay_stop_reason;
    pub fn inlay_result_timings(result: *const inlay_result, timings: *mut inlay_timings) -> inlay_status;

    pub fn inlay_session_eval_logits(
        session: *mut inlay_session,
        tokens: *const i32,
        n: usize,
        logits: *mut f32,
        capacity: usize,
    ) -> inlay_status;

    pub fn inlay_kv_pool_params_init_size(params: *mut inlay_kv_pool_params, size: usize);
    pub fn inlay_kv_pool_create(params: *const inlay_kv_pool_params, out_pool: *mut *mut inlay_kv_pool)
        -> inlay_status;
    pub fn inlay_kv_pool_free(pool: *mut inlay_kv_pool);
    pub fn inlay_model_set_kv_cap(model: *mut inlay_model, max_blocks: i64) -> inlay_status;
    pub fn inlay_model_get_metrics(model: *const inlay_model, metrics: *mut inlay_metrics) -> inlay_status;
    pub fn inlay_session_get_speculation_stats(
        session: *const inlay_session,
        stats: *mut inlay_speculation_stats,
    ) -> inlay_status;

    pub fn inlay_session_fork(session: *mut inlay_session, out_session: *mut *mut inlay_session) -> inlay_status;
    pub fn inlay_session_save(session: *mut inlay_session, path: *const c_char) -> inlay_status;
    pub fn inlay_session_restore(session: *mut inlay_session, path: *const c_char) -> inlay_status;

    pub fn inlay_chat_params_init_size(params: *mut inlay_chat_params, size: usize);
    pub fn inlay_chat_apply_template(
        model: *const inlay_model,
        messages: *const inlay_chat_message,
        n: usize,
        params: *const inlay_chat_params,
        out: *mut c_char,
        capacity: usize,
        length: *mut usize,
    ) -> inlay_status;
    pub fn inlay_session_chat(
        session: *mut inlay_session,
        messages: *const inlay_chat_message,
        n: usize,
        chat_params: *const inlay_chat_params,
        gen_params: *const inlay_generate_params,
        out_result: *mut *mut inlay_result,
    ) -> inlay_status;
}
