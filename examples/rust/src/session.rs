//! A conversation on a model (inlay_session), and the handle that cancels it from other
//! threads.
use std::cell::Cell;
use std::marker::PhantomData;
use std::mem;
use std::ptr::{self, NonNull};
use std::sync::Arc;

use crate::callback::{token_trampoline, Bridge};
use crate::chat::{ChatMessage, ChatOptions, RawChat};
use crate::error::{check, Error, Result, Status};
use crate::generate::{c_string, GenerateOptions, Generation, Piece, RawGenerate, ResultGuard};
use crate::model::Model;
use crate::sys;

/// How a session is made (inlay_session_params).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct SessionOptions {
    /// Tokens at most; 0 = the model's context_length.
    pub context_length: i32,
}

// The C handle, shared by a Session and its Cancellers; freed when the last one goes.
struct Handle(NonNull<sys::inlay_session>);

// SAFETY (Send, Sync): through a shared Handle only two things happen on other threads
// than the session's own: inlay_session_cancel, which inlay.h allows "from any thread"
// at any time, and inlay_session_free by whichever owner is dropped last, when no call
// can run (the Session, the only one that makes calls, is gone by then or is the one
// dropping it). Everything else goes through a Session, which is not Sync.
unsafe impl Send for Handle {}
unsafe impl Sync for Handle {}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: the last owner of the handle frees it, once.
        unsafe { sys::inlay_session_free(self.0.as_ptr()) }
    }
}

/// One conversation: its token history and KV cache live in the library, so each call
/// only processes what is new. Freed when dropped (and its Cancellers are gone).
///
/// Send: inlay.h allows a session to be used from any thread, one thread at a time, so
/// it may move to another thread. Not Sync: two threads must not call into it at once
/// (calls take `&mut self`, and `&self` queries are not shared across threads either).
/// To stop a call from another thread, give that thread a [`Canceller`].
pub struct Session<'m> {
    handle: Arc<Handle>,
    n_vocab: usize,
    _model: PhantomData<&'m Model>,
    _not_sync: PhantomData<Cell<()>>,
}

/// Cancels the running call of one session, from any thread (inlay_session_cancel): the
/// call returns within one more token, with StopReason::Cancelled. A cancel while no
/// call runs is ignored. Send + Sync + Clone: that is what inlay.h allows cancel.
/// It keeps the C session alive, so it may outlive its Session (not its Model).
#[derive(Clone)]
pub struct Canceller<'m> {
    handle: Arc<Handle>,
    _model: PhantomData<&'m Model>,
}

impl<'m> Canceller<'m> {
    pub fn cancel(&self) {
        // SAFETY: the handle is live while we hold it; cancel is thread-safe. Its only
        // failure is a NULL session, which cannot happen here.
        unsafe {
            sys::inlay_session_cancel(self.handle.0.as_ptr());
        }
    }
}

impl<'m> Session<'m> {
    pub fn new(model: &'m Model) -> Result<Session<'m>> {
        Session::with_options(model, &SessionOptions::default())
    }

    pub fn with_options(model: &'m Model, options: &SessionOptions) -> Result<Session<'m>> {
        let mut params = mem::MaybeUninit::<sys::inlay_session_params>::zeroed();
        // SAFETY: init_size writes exactly size_of bytes; zero bytes are a valid struct.
        let mut params = unsafe {
            sys::inlay_session_params_init_size(params.as_mut_ptr(), mem::size_of::<sys::inlay_session_params>());
            params.assume_init()
        };
        params.context_length = options.context_length;
        let n_vocab = model.info()?.n_vocab.max(0) as usize;
        let mut raw: *mut sys::inlay_session = ptr::null_mut();
        // SAFETY: a live model, our params, an out pointer.
        check(unsafe { sys::inlay_session_create(model.as_ptr(), &params, &mut raw) })?;
        Session::adopt(raw, n_vocab)
    }

    fn adopt(raw: *mut sys::inlay_session, n_vocab: usize) -> Result<Session<'m>> {
        let raw = NonNull::new(raw).ok_or_else(|| Error::new(Status::Internal, "the library returned no session"))?;
        Ok(Session { handle: Arc::new(Handle(raw)), n_vocab, _model: PhantomData, _not_sync: PhantomData })
    }

    fn as_ptr(&self) -> *mut sys::inlay_session {
        self.handle.0.as_ptr()
    }

    /// A handle for other threads (or callbacks) to cancel this session's running call.
    pub fn canceller(&self) -> Canceller<'m> {
        Canceller { handle: Arc::clone(&self.handle), _model: PhantomData }
    }

    /// Appends `prompt` to the conversation and generates. A cancelled generation is
    /// `Ok`, with StopReason::Cancelled and what was produced until then.
    pub fn generate(&mut self, prompt: &str, options: &GenerateOptions) -> Result<Generation> {
        self.generate_streaming(prompt, options, |_| true)
    }

    /// Same, calling `on_token` on this thread with each piece of text as it is produced;
    /// returning false stops the generation (StopReason::Callback). A panic in `on_token`
    /// stops it too and is resumed here, after the library has returned.
    pub fn generate_streaming<F>(&mut self, prompt: &str, options: &GenerateOptions, on_token: F) -> Result<Generation>
    where
        F: FnMut(Piece<'_>) -> bool,
    {
        let prompt = c_string(prompt, "the prompt")?;
        let session = self.as_ptr();
        self.run(options, on_token, |params, out| unsafe {
            // SAFETY: a live session, a NUL-terminated prompt, params with live pointers.
            sys::inlay_session_generate(session, prompt.as_ptr(), params, out)
        })
    }

    /// Appends token ids (nothing is added, not even BOS) and generates.
    pub fn generate_tokens<F>(&mut self, tokens: &[i32], options: &GenerateOptions, on_token: F) -> Result<Generation>
    where
        F: FnMut(Piece<'_>) -> bool,
    {
        let session = self.as_ptr();
        self.run(options, on_token, |params, out| unsafe {
            // SAFETY: `tokens` holds tokens.len() ids.
            sys::inlay_session_generate_tokens(session, tokens.as_ptr(), tokens.len(), params, out)
        })
    }

    /// One chat turn: renders the whole conversation with the chat template, processes
    /// only what the session's history lacks of it and generates the reply. Pass the
    /// reply back as an assistant message in the next turn.
    pub fn chat(
        &mut self,
        messages: &[ChatMessage],
        chat: &ChatOptions,
        options: &GenerateOptions,
    ) -> Result<Generation> {
        self.chat_streaming(messages, chat, options, |_| true)
    }

    /// Same, streaming the reply to `on_token` (see generate_streaming).
    pub fn chat_streaming<F>(
        &mut self,
        messages: &[ChatMessage],
        chat: &ChatOptions,
        options: &GenerateOptions,
        on_token: F,
    ) -> Result<Generation>
    where
        F: FnMut(Piece<'_>) -> bool,
    {
        let raw_chat = RawChat::new(messages, chat)?;
        let session = self.as_ptr();
        self.run(options, on_token, |params, out| unsafe {
            // SAFETY: RawChat's pointers are live during the call.
            sys::inlay_session_chat(
                session,
                raw_chat.messages.as_ptr(),
                raw_chat.messages.len(),
                &raw_chat.params,
                params,
                out,
            )
        })
    }

    // The common part of every generating call: params, the streaming bridge, the
    // result's ownership, the error and a resumed panic.
    fn run<F, C>(&mut self, options: &GenerateOptions, on_token: F, call: C) -> Result<Generation>
    where
        F: FnMut(Piece<'_>) -> bool,
        C: FnOnce(*const sys::inlay_generate_params, *mut *mut sys::inlay_result) -> sys::inlay_status,
    {
        let mut raw = RawGenerate::new(options)?;
        let mut bridge = Bridge::new(on_token);
        raw.params.on_token = Some(token_trampoline::<F>);
        raw.params.user = bridge.as_user();
        let mut out: *mut sys::inlay_result = ptr::null_mut();
        let status = call(&raw.params, &mut out);
        // The message first: it is only valid until the next inlay call on this thread.
        let error = match Status::from_code(status) {
            None | Some(Status::Cancelled) => None,
            Some(s) => Some(Error::last(s)),
        };
        let result = ResultGuard(out);
        bridge.resume_panic();
        if let Some(e) = error {
            return Err(e);
        }
        if result.0.is_null() {
            return Err(Error::new(Status::Internal, "the library returned no result"));
        }
        result.read()
    }

    /// Tokens in the conversation so far (prompts and replies).
    pub fn n_tokens(&self) -> Result<usize> {
        let mut n = 0usize;
        // SAFETY: a live session and an out pointer.
        check(unsafe { sys::inlay_session_n_tokens(self.as_ptr(), &mut n) })?;
        Ok(n)
    }

    /// Forgets the conversation; the session starts afresh.
    pub fn reset(&mut self) -> Result<()> {
        // SAFETY: a live session, not in a call (we hold it exclusively).
        check(unsafe { sys::inlay_session_reset(self.as_ptr()) })
    }

    /// A new session continuing this conversation, sharing its KV cache (copy-on-write).
    pub fn fork(&mut self) -> Result<Session<'m>> {
        let mut raw: *mut sys::inlay_session = ptr::null_mut();
        // SAFETY: a live session, not in a call (we hold it exclusively).
        check(unsafe { sys::inlay_session_fork(self.as_ptr(), &mut raw) })?;
        Session::adopt(raw, self.n_vocab)
    }

    /// Teacher forcing: appends `tokens` and returns, for each, the n_vocab logits that
    /// predict the token after it (tokens.len() * n_vocab values).
    pub fn eval_logits(&mut self, tokens: &[i32]) -> Result<Vec<f32>> {
        let mut logits = vec![0f32; tokens.len() * self.n_vocab];
        // SAFETY: `tokens` and `logits` hold the sizes passed.
        check(unsafe {
            sys::inlay_session_eval_logits(
                self.as_ptr(),
                tokens.as_ptr(),
                tokens.len(),
                logits.as_mut_ptr(),
                logits.len(),
            )
        })?;
        Ok(logits)
    }
}
