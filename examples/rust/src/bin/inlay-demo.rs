//! inlay-demo: the Rust binding in one program.
//!
//!     inlay-demo MODEL [--device auto|cpu|cuda|cuda:N] [--threads N]
//!
//! Loads MODEL (a GGUF file or a Hugging Face folder) with a progress bar, streams a
//! reply, cancels a long generation from another thread, holds a two-turn chat through
//! the model's chat template, and shows what errors look like. The environment variable
//! INLAY_N_THREADS sets the default of --threads. Exit status: 0, 1 on an inlay error
//! (printed with its status), 2 on bad usage.
use std::env;
use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::mpsc;
use std::thread;

use inlay::{ChatMessage, ChatOptions, Device, GenerateOptions, Model, ModelOptions, Session, Status, StopReason};

const USAGE: &str = "usage: inlay-demo MODEL [--device auto|cpu|cuda|cuda:N] [--threads N]";

struct Args {
    model: String,
    device: Device,
    threads: i32,
}

fn parse_args() -> Result<Args, String> {
    let mut args = env::args().skip(1);
    let mut model = None;
    let mut device = Device::Auto;
    let mut threads = match env::var("INLAY_N_THREADS") {
        Ok(v) => v.parse().map_err(|_| format!("INLAY_N_THREADS={} is not a number", v))?,
        Err(_) => 0,
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--device" => {
                let value = args.next().ok_or("--device needs a value")?;
                device = value.parse::<Device>().map_err(|e| e.to_string())?;
            }
            "--threads" => {
                let value = args.next().ok_or("--threads needs a value")?;
                threads = value.parse().map_err(|_| format!("--threads {} is not a number", value))?;
            }
            "-h" | "--help" => return Err(String::new()),
            _ if arg.starts_with('-') => return Err(format!("unknown option {}", arg)),
            _ if model.is_none() => model = Some(arg),
            _ => return Err(format!("unexpected argument {}", arg)),
        }
    }
    let model = model.ok_or("no MODEL given")?;
    Ok(Args { model, device, threads })
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(why) => {
            if !why.is_empty() {
                eprintln!("inlay-demo: {}", why);
            }
            eprintln!("{}", USAGE);
            return ExitCode::from(2);
        }
    };
    restore_sigpipe();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("inlay-demo: {}", e);
            if e.status() == Status::Unsupported && matches!(args.device, Device::Cuda(_)) {
                eprintln!("inlay-demo: no CUDA device here; --device auto takes a GPU when there is one, else the CPU");
            }
            ExitCode::from(1)
        }
    }
}

// Rust ignores SIGPIPE, so `inlay-demo MODEL | head` would panic on the closed pipe;
// like other command-line tools, end quietly instead.
#[cfg(unix)]
fn restore_sigpipe() {
    extern "C" {
        fn signal(signum: std::os::raw::c_int, handler: usize) -> usize;
    }
    const SIGPIPE: std::os::raw::c_int = 13;
    const SIG_DFL: usize = 0;
    // SAFETY: resetting a signal to its default action before any thread is started.
    unsafe {
        signal(SIGPIPE, SIG_DFL);
    }
}

#[cfg(not(unix))]
fn restore_sigpipe() {}

fn run(args: &Args) -> inlay::Result<()> {
    println!("inlay {} (ABI {}) from Rust", inlay::version(), inlay::abi_version());
    let model = load(args)?;
    let info = model.info()?;
    println!(
        "model: {} ({}, {} parameters, context {} tokens) on {}",
        if info.name.is_empty() { "unnamed" } else { &info.name },
        info.architecture,
        info.n_params,
        info.context_length,
        info.device
    );
    stream(&model)?;
    cancel_from_another_thread(&model)?;
    chat(&model)?;
    errors(&model);
    Ok(())
}

// Loading, with a 40-character progress bar on stderr and the device asked for.
fn load(args: &Args) -> inlay::Result<Model> {
    let options = ModelOptions { device: args.device, n_threads: args.threads, ..ModelOptions::default() };
    eprint!("loading {} [", args.model);
    let mut drawn = 0;
    let loaded = Model::load_with_progress(&args.model, &options, |progress| {
        let want = (progress.clamp(0.0, 1.0) * 40.0).round() as usize;
        while drawn < want {
            eprint!("#");
            drawn += 1;
        }
        true // false would abort the load
    });
    eprintln!("{}] {}", " ".repeat(40 - drawn), if loaded.is_ok() { "done" } else { "failed" });
    loaded
}

fn section(title: &str) {
    println!("\n== {} ==", title);
}

fn print_piece(text: &str) {
    print!("{}", text);
    let _ = io::stdout().flush();
}

// Streaming: each piece is printed as soon as the library produces it.
fn stream(model: &Model) -> inlay::Result<()> {
    section("streaming");
    let mut session = Session::new(model)?;
    let prompt = "You will";
    let options = GenerateOptions { max_tokens: 48, seed: Some(2), ..GenerateOptions::default() };
    print_piece(prompt);
    let reply = session.generate_streaming(prompt, &options, |piece| {
        print_piece(piece.text);
        true
    })?;
    println!(
        "\n[{} tokens, stopped: {:?}, {:.0} tokens/s]",
        reply.tokens.len(),
        reply.stop_reason,
        reply.timings.decode_tokens_per_s
    );
    Ok(())
}

// Cancel: a 200-token generation that another thread cancels once 8 tokens are out. A
// scoped thread, because the Canceller borrows the model (it must not outlive it).
fn cancel_from_another_thread(model: &Model) -> inlay::Result<()> {
    section("cancel from another thread");
    let mut session = Session::new(model)?;
    let canceller = session.canceller(); // Send + Sync: for the other thread
    let options = GenerateOptions { max_tokens: 200, ignore_eos: true, seed: Some(7), ..GenerateOptions::default() };
    let reply = thread::scope(|scope| {
        let (seen_8, wake) = mpsc::channel::<()>();
        let (cancelled, confirmed) = mpsc::channel::<()>();
        scope.spawn(move || {
            if wake.recv().is_ok() {
                canceller.cancel();
                let _ = cancelled.send(());
            }
        });
        let mut tokens = 0;
        print_piece("Once upon a time");
        session.generate_streaming("Once upon a time", &options, |piece| {
            print_piece(piece.text);
            tokens += 1;
            if tokens == 8 {
                // Wake the other thread and wait until its cancel is sent, so that the
                // demo stops at the same place on every run.
                let _ = seen_8.send(());
                let _ = confirmed.recv();
            }
            true
        })
        // seen_8 is dropped here: a thread still waiting wakes up and ends.
    })?;
    println!("\n[{} of at most {} tokens, stopped: {:?}]", reply.tokens.len(), options.max_tokens, reply.stop_reason);
    if reply.stop_reason != StopReason::Cancelled {
        println!("(the generation ended before the cancel arrived)");
    }
    Ok(())
}

// A model without a chat template of its own gets this one (the default model is
// trained on fortunes, some of which are Q:/A: jokes). An assistant message renders as
// the generation prompt "A:" followed by the reply, so that the next turn finds the
// reply's tokens already in the session.
const FALLBACK_TEMPLATE: &str = "{% for m in messages %}{% if m.role == 'user' %}Q: {{ m.content }}\n\
{% else %}A:{{ m.content }}\n{% endif %}{% endfor %}{% if add_generation_prompt %}A:{% endif %}";

// Chat: two turns on one session; the second only processes the new messages.
fn chat(model: &Model) -> inlay::Result<()> {
    section("chat");
    let mut chat_options = ChatOptions::default();
    let probe = [ChatMessage::user("Hello")];
    match model.apply_chat_template(&probe, &chat_options) {
        Ok(_) => println!("(the model's own chat template)"),
        Err(e) if e.status() == Status::Missing => {
            println!("(the model has no chat template: using a Q:/A: one)");
            chat_options.chat_template = Some(FALLBACK_TEMPLATE.to_string());
        }
        Err(e) => return Err(e),
    }
    let mut session = Session::new(model)?;
    let options =
        GenerateOptions { max_tokens: 40, seed: Some(3), stop: vec!["\n".to_string()], ..GenerateOptions::default() };
    let mut messages = Vec::new();
    for question in ["What is the secret of a happy life?", "And what about money?"] {
        println!("user: {}", question);
        messages.push(ChatMessage::user(question));
        print_piece("assistant:");
        let reply = session.chat_streaming(&messages, &chat_options, &options, |piece| {
            print_piece(piece.text);
            true
        })?;
        println!(
            "\n[{} new prompt tokens processed; the conversation is now {} tokens]",
            reply.prompt_tokens.len(),
            session.n_tokens()?
        );
        messages.push(ChatMessage::assistant(&reply.text));
    }
    Ok(())
}

// Errors carry the library's status and message; nothing here ends the program.
fn errors(model: &Model) {
    section("errors");
    match Model::load("no/such/model.gguf", &ModelOptions::default()) {
        Ok(_) => println!("loading a missing file worked?"),
        Err(e) => println!("missing file -> {:?}: {}", e.status(), e),
    }
    let bad = GenerateOptions { top_p: 2.0, ..GenerateOptions::greedy(8) };
    match Session::new(model).and_then(|mut s| s.generate("Hi", &bad)) {
        Ok(_) => println!("top_p 2.0 worked?"),
        Err(e) => println!("top_p 2.0 -> {:?}: {}", e.status(), e),
    }
}
