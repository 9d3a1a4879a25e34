//! What a generate call takes (GenerateOptions) and gives (Generation, Piece).
use std::ffi::CString;
use std::mem;
use std::os::raw::c_char;
use std::ptr;

use crate::error::{Error, Result, Status};
use crate::sys;

/// Sampling and stopping for one generate or chat call (inlay_generate_params).
/// `Default` gives the library's own defaults (inlay_generate_params_init_size).
#[derive(Clone, Debug, PartialEq)]
pub struct GenerateOptions {
    /// Tokens to generate at most; 0 = only process the prompt.
    pub max_tokens: i32,
    /// <= 0: greedy (always the most likely token).
    pub temperature: f32,
    pub top_k: i32,
    pub top_p: f32,
    pub min_p: f32,
    pub repeat_penalty: f32,
    pub frequency_penalty: f32,
    pub presence_penalty: f32,
    pub penalty_last_n: i32,
    /// None: a random seed.
    pub seed: Option<u64>,
    /// Keep going past end-of-generation tokens.
    pub ignore_eos: bool,
    /// Stop when one of these appears (it is not part of the text).
    pub stop: Vec<String>,
    pub add_bos: bool,
    pub parse_special: bool,
}

// The library's "random seed" value of inlay_generate_params.seed.
const RANDOM_SEED: u64 = u64::MAX;

pub(crate) fn init_generate_params() -> sys::inlay_generate_params {
    let mut raw = mem::MaybeUninit::<sys::inlay_generate_params>::zeroed();
    // SAFETY: init_size writes the defaults into exactly size_of bytes of our struct;
    // all-zero bytes are a valid inlay_generate_params (null pointers, None callbacks).
    unsafe {
        sys::inlay_generate_params_init_size(raw.as_mut_ptr(), mem::size_of::<sys::inlay_generate_params>());
        raw.assume_init()
    }
}

impl Default for GenerateOptions {
    fn default() -> GenerateOptions {
        let p = init_generate_params();
        GenerateOptions {
            max_tokens: p.max_tokens,
            temperature: p.temperature,
            top_k: p.top_k,
            top_p: p.top_p,
            min_p: p.min_p,
            repeat_penalty: p.repeat_penalty,
            frequency_penalty: p.frequency_penalty,
            presence_penalty: p.presence_penalty,
            penalty_last_n: p.penalty_last_n,
            seed: if p.seed == RANDOM_SEED { None } else { Some(p.seed) },
            ignore_eos: p.ignore_eos,
            stop: Vec::new(),
            add_bos: p.add_bos,
            parse_special: p.parse_special,
        }
    }
}

impl GenerateOptions {
    /// Greedy decoding of at most `max_tokens`: the same text on every run.
    pub fn greedy(max_tokens: i32) -> GenerateOptions {
        GenerateOptions { max_tokens, temperature: 0.0, ..GenerateOptions::default() }
    }
}

/// The C params of `GenerateOptions`, with the stop strings they point to. The pointers
/// stay valid while this value lives (moving it does not move the heap buffers).
pub(crate) struct RawGenerate {
    pub(crate) params: sys::inlay_generate_params,
    _stop: Vec<CString>,
    _stop_ptrs: Vec<*const c_char>,
}

impl RawGenerate {
    pub(crate) fn new(options: &GenerateOptions) -> Result<RawGenerate> {
        let stop = options.stop.iter().map(|s| c_string(s, "a stop string")).collect::<Result<Vec<CString>>>()?;
        let stop_ptrs: Vec<*const c_char> = stop.iter().map(|s| s.as_ptr()).collect();
        let mut params = init_generate_params();
        params.max_tokens = options.max_tokens;
        params.temperature = options.temperature;
        params.top_k = options.top_k;
        params.top_p = options.top_p;
        params.min_p = options.min_p;
        params.repeat_penalty = options.repeat_penalty;
        params.frequency_penalty = options.frequency_penalty;
        params.presence_penalty = options.presence_penalty;
        params.penalty_last_n = options.penalty_last_n;
        params.seed = options.seed.unwrap_or(RANDOM_SEED);
        params.ignore_eos = options.ignore_eos;
        params.stop = if stop_ptrs.is_empty() { ptr::null() } else { stop_ptrs.as_ptr() };
        params.n_stop = stop_ptrs.len();
        params.add_bos = options.add_bos;
        params.parse_special = options.parse_special;
        Ok(RawGenerate { params, _stop: stop, _stop_ptrs: stop_ptrs })
    }
}

/// A NUL-terminated copy of `text` for the C ABI; a NUL inside it is INVALID_ARGUMENT.
pub(crate) fn c_string(text: &str, what: &str) -> Result<CString> {
    CString::new(text).map_err(|e| {
        Error::new(Status::InvalidArgument, &format!("{} holds a NUL byte at offset {}", what, e.nul_position()))
    })
}

/// One streamed piece of text: what a token completes (whole UTF-8 characters; "" when
/// the token ends inside a character). `token` is None for the final flush of text held
/// back at the end (a partial stop-string match that did not complete).
#[derive(Clone, Copy, Debug)]
pub struct Piece<'a> {
    pub token: Option<i32>,
    pub text: &'a str,
}

/// Why a generation ended (inlay_stop_reason).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StopReason {
    /// max_tokens was 0.
    None,
    /// An end-of-generation token.
    EndOfGeneration,
    MaxTokens,
    /// A stop string appeared.
    StopString,
    /// The streaming callback returned false.
    Callback,
    /// Session::cancel / Canceller::cancel.
    Cancelled,
    ContextFull,
    /// A reason this binding does not know (a newer library): the call still stopped.
    Other(i32),
}

impl StopReason {
    pub(crate) fn from_code(code: sys::inlay_stop_reason) -> StopReason {
        match code {
            sys::INLAY_STOP_NONE => StopReason::None,
            sys::INLAY_STOP_EOG => StopReason::EndOfGeneration,
            sys::INLAY_STOP_MAX_TOKENS => StopReason::MaxTokens,
            sys::INLAY_STOP_STRING => StopReason::StopString,
            sys::INLAY_STOP_CALLBACK => StopReason::Callback,
            sys::INLAY_STOP_CANCELLED => StopReason::Cancelled,
            sys::INLAY_STOP_CONTEXT_FULL => StopReason::ContextFull,
            other => StopReason::Other(other),
        }
    }
}

/// Timings and counts of one call (inlay_timings).
pub type Timings = sys::inlay_timings;

/// What one generate or chat call produced, copied out of the library's inlay_result
/// (which is freed before the call returns).
#[derive(Clone, Debug)]
pub struct Generation {
    /// The generated text (stop strings excluded).
    pub text: String,
    /// The generated token ids.
    pub tokens: Vec<i32>,
    /// The prompt tokens this call processed (BOS included when added).
    pub prompt_tokens: Vec<i32>,
    pub stop_reason: StopReason,
    pub timings: Timings,
}

/// Owns an inlay_result until it is dropped (also while a callback's panic unwinds).
pub(crate) struct ResultGuard(pub(crate) *mut sys::inlay_result);

impl Drop for ResultGuard {
    fn drop(&mut self) {
        // SAFETY: the pointer came from a generate call and is freed once; NULL is fine.
        unsafe { sys::inlay_result_free(self.0) }
    }
}

impl ResultGuard {
    pub(crate) fn read(&self) -> Result<Generation> {
        let r = self.0;
        // SAFETY: `r` is a live result; the arrays and the text it returns stay valid
        // while it lives and are copied here.
        unsafe {
            let mut timings = Timings { struct_size: mem::size_of::<Timings>(), ..Timings::default() };
            crate::error::check(sys::inlay_result_timings(r, &mut timings))?;
            let text = std::ffi::CStr::from_ptr(sys::inlay_result_text(r)).to_string_lossy().into_owned();
            Ok(Generation {
                text,
                tokens: copy_ids(|n| sys::inlay_result_tokens(r, n)),
                prompt_tokens: copy_ids(|n| sys::inlay_result_prompt_tokens(r, n)),
                stop_reason: StopReason::from_code(sys::inlay_result_stop_reason(r)),
                timings,
            })
        }
    }
}

unsafe fn copy_ids(get: impl FnOnce(*mut usize) -> *const i32) -> Vec<i32> {
    let mut n = 0usize;
    let p = get(&mut n);
    if p.is_null() || n == 0 {
        return Vec::new();
    }
    std::slice::from_raw_parts(p, n).to_vec()
}
