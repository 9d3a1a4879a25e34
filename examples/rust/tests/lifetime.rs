// Ownership and threads: Drop frees what the library holds, the Send/Sync statements
// are what the types really are, and one model serves sessions on many threads.
mod common;

use std::thread;

use inlay::{Canceller, GenerateOptions, Model, Session};

fn held(model: &Model) -> (i32, i64) {
    let m = model.metrics().unwrap();
    (m.sessions, m.blocks_held)
}

#[test]
fn dropping_sessions_frees_them_and_their_kv() {
    let model = common::load();
    assert_eq!(held(&model), (0, 0));
    let mut sessions: Vec<Session> = (0..3).map(|_| Session::new(&model).unwrap()).collect();
    for s in &mut sessions {
        s.generate("Once upon a time", &GenerateOptions::greedy(20)).unwrap();
    }
    let (open, blocks) = held(&model);
    assert_eq!(open, 3);
    assert!(blocks > 0);
    sessions.truncate(1);
    assert_eq!(held(&model).0, 1);
    drop(sessions);
    assert_eq!(held(&model), (0, 0));
}

#[test]
fn a_canceller_keeps_its_session_until_it_is_dropped() {
    let model = common::load();
    let session = Session::new(&model).unwrap();
    let canceller = session.canceller();
    let again = canceller.clone();
    drop(session);
    assert_eq!(held(&model).0, 1);
    again.cancel(); // still a live session: no effect, no crash
    drop(again);
    assert_eq!(held(&model).0, 1);
    drop(canceller);
    assert_eq!(held(&model).0, 0);
}

#[test]
fn one_model_serves_sessions_on_many_threads() {
    let model = common::load();
    let options = GenerateOptions { ignore_eos: true, ..GenerateOptions::greedy(16) };
    let alone = Session::new(&model).unwrap().generate("You will", &options).unwrap().tokens;
    let results: Vec<Vec<i32>> = thread::scope(|scope| {
        let workers: Vec<_> = (0..3)
            .map(|_| scope.spawn(|| Session::new(&model).unwrap().generate("You will", &options).unwrap().tokens))
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    for tokens in results {
        assert_eq!(tokens, alone);
    }
    // A session made on one thread may be used on another (Send).
    let mut session = Session::new(&model).unwrap();
    let tokens =
        thread::scope(|scope| scope.spawn(move || session.generate("You will", &options).unwrap().tokens).join());
    assert_eq!(tokens.unwrap(), alone);
}

// Compile-time statements: this file does not build if they stop holding.
fn is_send<T: Send>() {}
fn is_sync<T: Sync>() {}

// Resolves only when T is not Sync (two candidate impls otherwise: ambiguous).
trait AmbiguousIfSync<A> {
    fn check() {}
}
impl<T: ?Sized> AmbiguousIfSync<()> for T {}
impl<T: ?Sized + Sync> AmbiguousIfSync<u8> for T {}

#[test]
fn send_and_sync_are_as_documented() {
    is_send::<Model>();
    is_sync::<Model>();
    is_send::<Session<'static>>();
    <Session<'static> as AmbiguousIfSync<_>>::check();
    is_send::<Canceller<'static>>();
    is_sync::<Canceller<'static>>();
    is_send::<inlay::Error>();
    is_sync::<inlay::Error>();
}
