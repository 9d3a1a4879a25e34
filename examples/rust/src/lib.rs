//! inlay for Rust: a safe wrapper over the C ABI of libinlay (include/inlay/inlay.h).
//!
//! ```no_run
//! use inlay::{GenerateOptions, Model, ModelOptions, Session};
//!
//! fn main() -> inlay::Result<()> {
//!     let model = Model::load("models/default", &ModelOptions::default())?;
//!     let mut session = Session::new(&model)?;
//!     let reply = session.generate_streaming("Once upon a time", &GenerateOptions::greedy(32), |piece| {
//!         print!("{}", piece.text);
//!         true // false stops the generation
//!     })?;
//!     println!("\n{} tokens, stopped by {:?}", reply.tokens.len(), reply.stop_reason);
//!     Ok(())
//! }
//! ```
//!
//! - Ownership: [`Model`] and [`Session`] own their C handle and free it when dropped;
//!   a Session borrows its Model, so the model cannot be freed first. [`Generation`]
//!   is plain data copied out of the library's result, which is freed at once.
//! - Errors: every call returns `Result<_, inlay::Error>`, carrying the [`Status`] and
//!   the library's message (inlay_last_error, read on the calling thread right after
//!   the failing call).
//! - Threads (inlay.h's rules): a Model is Send + Sync and may serve sessions on many
//!   threads at once; a Session is Send but not Sync (one thread at a time); a
//!   [`Canceller`] is Send + Sync and cancels the session's running call from anywhere.
//! - Callbacks (load progress, streamed tokens) are ordinary closures that borrow what
//!   they like: the library calls them only during the call, on the calling thread. A
//!   panic inside one never unwinds through C: it stops the call and is resumed after.
//! - [`sys`] declares the whole C ABI for what the wrapper does not cover (KV pools,
//!   speculative decoding, session files, the log sink).

mod callback;
mod chat;
mod error;
mod generate;
mod model;
mod session;
pub mod sys;

pub use chat::{ChatMessage, ChatOptions, Thinking};
pub use error::{Error, Result, Status};
pub use generate::{GenerateOptions, Generation, Piece, StopReason, Timings};
pub use model::{Device, Metrics, Model, ModelInfo, ModelOptions};
pub use session::{Canceller, Session, SessionOptions};

use std::ffi::CStr;

/// The library's version string ("0.1.0").
pub fn version() -> String {
    // SAFETY: a static NUL-terminated string.
    unsafe { CStr::from_ptr(sys::inlay_version()) }.to_string_lossy().into_owned()
}

/// The ABI major version of the library loaded; this binding is written for
/// [`sys::INLAY_ABI_VERSION`].
pub fn abi_version() -> i32 {
    // SAFETY: no arguments, no state.
    unsafe { sys::inlay_abi_version() }
}
