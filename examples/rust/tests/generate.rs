// Generation through the wrapper: streaming, cancel from another thread, the callback's
// stop and panic, fork and teacher-forced logits.
mod common;

use std::panic;
use std::sync::mpsc;
use std::thread;

use inlay::{GenerateOptions, Session, StopReason};

fn greedy_ignoring_eos(max_tokens: i32) -> GenerateOptions {
    GenerateOptions { ignore_eos: true, ..GenerateOptions::greedy(max_tokens) }
}

#[test]
fn streaming_gives_the_non_streaming_result() {
    let model = common::load();
    let options = greedy_ignoring_eos(32);
    let plain = Session::new(&model).unwrap().generate("Once upon a time", &options).unwrap();

    let mut session = Session::new(&model).unwrap();
    let mut streamed = String::new();
    let mut streamed_tokens = Vec::new();
    let reply = session
        .generate_streaming("Once upon a time", &options, |piece| {
            streamed.push_str(piece.text);
            streamed_tokens.extend(piece.token);
            true
        })
        .unwrap();

    assert_eq!(plain.tokens.len(), 32);
    assert_eq!(plain.stop_reason, StopReason::MaxTokens);
    assert!(!plain.text.is_empty());
    assert_eq!(reply.tokens, plain.tokens);
    assert_eq!(reply.text, plain.text);
    assert_eq!(reply.prompt_tokens, plain.prompt_tokens);
    assert_eq!(streamed, reply.text);
    assert_eq!(streamed_tokens, reply.tokens);
    assert_eq!(reply.timings.generated_tokens, 32);
    assert_eq!(reply.timings.prompt_tokens, reply.prompt_tokens.len() as i64);
    assert_eq!(session.n_tokens().unwrap(), reply.prompt_tokens.len() + 32);
}

#[test]
fn cancel_from_another_thread_stops_early() {
    let model = common::load();
    let mut session = Session::new(&model).unwrap();
    let canceller = session.canceller();
    let options = GenerateOptions { max_tokens: 200, ignore_eos: true, seed: Some(7), ..GenerateOptions::default() };
    let mut seen = 0;
    let reply = thread::scope(|scope| {
        let (wake, woken) = mpsc::channel::<()>();
        let (done, cancelled) = mpsc::channel::<()>();
        scope.spawn(move || {
            if woken.recv().is_ok() {
                canceller.cancel();
                done.send(()).unwrap();
            }
        });
        session.generate_streaming("Once upon a time", &options, |piece| {
            if piece.token.is_some() {
                seen += 1;
            }
            if seen == 5 {
                wake.send(()).unwrap();
                cancelled.recv().unwrap(); // the cancel has been made when this returns
            }
            true
        })
    })
    .unwrap();
    assert_eq!(reply.stop_reason, StopReason::Cancelled);
    // inlay.h: the call stops after at most one more token once cancel has returned.
    assert!(reply.tokens.len() >= 5 && reply.tokens.len() <= 6, "{} tokens", reply.tokens.len());
    assert_eq!(reply.tokens.len(), seen);

    // A cancel while nothing runs is ignored by the next call.
    session.canceller().cancel();
    let next = session.generate(" The end.", &greedy_ignoring_eos(5)).unwrap();
    assert_eq!(next.stop_reason, StopReason::MaxTokens);
    assert_eq!(next.tokens.len(), 5);
}

#[test]
fn on_token_returning_false_stops() {
    let model = common::load();
    let mut session = Session::new(&model).unwrap();
    let mut calls = 0;
    let reply = session
        .generate_streaming("Once", &greedy_ignoring_eos(50), |_| {
            calls += 1;
            calls < 3
        })
        .unwrap();
    assert_eq!(calls, 3);
    assert_eq!(reply.tokens.len(), 3);
    assert_eq!(reply.stop_reason, StopReason::Callback);
}

#[test]
fn a_panic_in_on_token_is_resumed_after_the_call() {
    let model = common::load();
    let mut session = Session::new(&model).unwrap();
    let mut calls = 0;
    let caught = panic::catch_unwind(panic::AssertUnwindSafe(|| {
        let _ = session.generate_streaming("Once", &greedy_ignoring_eos(50), |_| {
            calls += 1;
            if calls == 2 {
                panic!("callback failed on purpose");
            }
            true
        });
    }));
    let payload = caught.expect_err("the panic must reach the caller");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"callback failed on purpose"));
    assert_eq!(calls, 2, "no callback after the panic");
    // The session is free again (not BUSY) and its result was freed.
    let next = session.generate(" again", &greedy_ignoring_eos(4)).unwrap();
    assert_eq!(next.tokens.len(), 4);
}

#[test]
fn fork_continues_the_same_conversation() {
    let model = common::load();
    let mut session = Session::new(&model).unwrap();
    session.generate("Once upon a time", &greedy_ignoring_eos(8)).unwrap();
    let mut fork = session.fork().unwrap();
    assert_eq!(fork.n_tokens().unwrap(), session.n_tokens().unwrap());
    let a = session.generate(" and", &greedy_ignoring_eos(8)).unwrap();
    let b = fork.generate(" and", &greedy_ignoring_eos(8)).unwrap();
    assert_eq!(a.tokens, b.tokens);
    assert_eq!(a.prompt_tokens.len(), b.prompt_tokens.len());
}

#[test]
fn eval_logits_predict_the_greedy_token() {
    let model = common::load();
    let n_vocab = model.info().unwrap().n_vocab as usize;
    let tokens = model.tokenize("You will", true, true).unwrap();
    let logits = Session::new(&model).unwrap().eval_logits(&tokens).unwrap();
    assert_eq!(logits.len(), tokens.len() * n_vocab);
    let last = &logits[(tokens.len() - 1) * n_vocab..];
    let argmax = (0..n_vocab).max_by(|&a, &b| last[a].total_cmp(&last[b])).unwrap() as i32;
    let next = Session::new(&model).unwrap().generate_tokens(&tokens, &greedy_ignoring_eos(1), |_| true).unwrap();
    assert_eq!(next.tokens, vec![argmax]);
}
