//! Rust closures behind the C callbacks (load progress, streamed tokens).
//!
//! The closure travels as the callback's `user` pointer to a `Bridge` on the caller's
//! stack. That is sound because inlay.h runs these callbacks only during the call that
//! was given them, on the thread that made it: the bridge outlives every use, and the
//! closure needs to be neither `Send` nor `'static`. A panic must not unwind into the C
//! library (undefined behaviour), so each call is wrapped in `catch_unwind`: a panic is
//! kept, the callback tells the library to stop (false), later callbacks are refused, and
//! the wrapper resumes the panic once the C call has returned and its resources are freed.
use std::any::Any;
use std::borrow::Cow;
use std::os::raw::{c_char, c_void};
use std::panic::{self, AssertUnwindSafe};
use std::slice;

use crate::generate::Piece;

pub(crate) struct Bridge<F> {
    f: F,
    panic: Option<Box<dyn Any + Send + 'static>>,
}

impl<F> Bridge<F> {
    pub(crate) fn new(f: F) -> Bridge<F> {
        Bridge { f, panic: None }
    }

    /// The user pointer for the C call; the bridge must not be touched until it returns.
    pub(crate) fn as_user(&mut self) -> *mut c_void {
        self as *mut Bridge<F> as *mut c_void
    }

    // Runs the closure; after a panic (now or before) returns false: stop.
    fn call(&mut self, body: impl FnOnce(&mut F) -> bool) -> bool {
        if self.panic.is_some() {
            return false;
        }
        let f = &mut self.f;
        match panic::catch_unwind(AssertUnwindSafe(|| body(f))) {
            Ok(keep_going) => keep_going,
            Err(payload) => {
                self.panic = Some(payload);
                false
            }
        }
    }

    /// Re-raises a panic of the closure on the caller's side of the FFI boundary.
    pub(crate) fn resume_panic(&mut self) {
        if let Some(payload) = self.panic.take() {
            panic::resume_unwind(payload);
        }
    }
}

/// inlay_progress_fn for a `Bridge<F>`.
pub(crate) unsafe extern "C" fn progress_trampoline<F: FnMut(f32) -> bool>(progress: f32, user: *mut c_void) -> bool {
    // SAFETY: `user` is the Bridge<F> that Model::load_with_progress passed for this call.
    let bridge = &mut *(user as *mut Bridge<F>);
    bridge.call(|f| f(progress))
}

/// inlay_token_fn for a `Bridge<F>`.
pub(crate) unsafe extern "C" fn token_trampoline<F: FnMut(Piece<'_>) -> bool>(
    token: i32,
    piece: *const c_char,
    piece_len: usize,
    user: *mut c_void,
) -> bool {
    // SAFETY: `user` is the Bridge<F> that Session::run passed for this call, and
    // `piece` points to `piece_len` bytes valid during this callback.
    let bridge = &mut *(user as *mut Bridge<F>);
    let bytes: &[u8] =
        if piece.is_null() || piece_len == 0 { &[] } else { slice::from_raw_parts(piece as *const u8, piece_len) };
    // Whole UTF-8 characters by the ABI's promise; a lossy view never panics if not.
    let text: Cow<'_, str> = String::from_utf8_lossy(bytes);
    let token = if token < 0 { None } else { Some(token) };
    bridge.call(|f| f(Piece { token, text: &text }))
}
