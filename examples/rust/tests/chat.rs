// Chat through the model's own template: a copy of models/default given a
// chat_template.jinja (the folder loader reads it), so no template is passed in.
mod common;

use std::fs;
use std::path::{Path, PathBuf};

use inlay::{ChatMessage, ChatOptions, GenerateOptions, Model, Session, Status};

const TEMPLATE: &str = "{% for m in messages %}<{{ m.role }}>{{ m.content }}\n{% endfor %}\
{% if add_generation_prompt %}<assistant>{% endif %}";

// A temporary model folder, removed when dropped.
struct Folder(PathBuf);

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn model_with_template() -> Folder {
    let folder = model_copy("template");
    fs::write(folder.0.join("chat_template.jinja"), TEMPLATE).unwrap();
    folder
}

// A copy of models/default whose tokenizer_config.json has no chat_template: a model
// without a template of its own.
fn model_without_template() -> Folder {
    let folder = model_copy("plain");
    let config = r#"{"add_bos_token": true, "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}"#;
    fs::write(folder.0.join("tokenizer_config.json"), config).unwrap();
    folder
}

fn model_copy(what: &str) -> Folder {
    let dir = std::env::temp_dir().join(format!("inlay-rust-chat-{}-{}", what, std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    let src = common::model_path();
    for entry in fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_owned();
        if Path::new(&name).extension().map_or(false, |e| e == "json" || e == "safetensors" || e == "model") {
            fs::copy(&path, dir.join(&name)).unwrap();
        }
    }
    Folder(dir)
}

#[test]
fn the_second_turn_sees_the_first() {
    let folder = model_with_template();
    let model = Model::load(&folder.0, &common::options()).unwrap();
    let chat = ChatOptions::default(); // the model's own template
    let options = GenerateOptions { ignore_eos: true, ..GenerateOptions::greedy(6) };
    let mut session = Session::new(&model).unwrap();

    let mut messages = vec![ChatMessage::user("What is the secret of life?")];
    assert_eq!(model.apply_chat_template(&messages, &chat).unwrap(), "<user>What is the secret of life?\n<assistant>");
    let first = session.chat(&messages, &chat, &options).unwrap();
    assert_eq!(first.tokens.len(), 6);
    messages.push(ChatMessage::assistant(&first.text));
    messages.push(ChatMessage::user("And then?"));

    let mut streamed = String::new();
    let second = session
        .chat_streaming(&messages, &chat, &options, |piece| {
            streamed.push_str(piece.text);
            true
        })
        .unwrap();
    assert_eq!(streamed, second.text);

    // The session's history is the whole rendered conversation plus the reply, and the
    // second turn processed only part of it: the first turn's KV was reused.
    let rendered = model.apply_chat_template(&messages, &chat).unwrap();
    assert!(rendered.contains(&first.text) && rendered.ends_with("<user>And then?\n<assistant>"));
    let all = model.tokenize(&rendered, true, true).unwrap();
    assert_eq!(session.n_tokens().unwrap(), all.len() + second.tokens.len());
    assert!(
        !second.prompt_tokens.is_empty() && second.prompt_tokens.len() < all.len() / 2,
        "turn 2 processed {} of {} tokens",
        second.prompt_tokens.len(),
        all.len()
    );

    // It replies exactly as a fresh session given the whole conversation at once.
    let fresh = Session::new(&model).unwrap().chat(&messages, &chat, &options).unwrap();
    assert_eq!(fresh.prompt_tokens.len(), all.len());
    assert_eq!(second.tokens, fresh.tokens);
    assert_eq!(second.text, fresh.text);
}

#[test]
fn chat_errors() {
    // models/default's own template is a Q/A one.
    let messages = [ChatMessage::user("Hi")];
    assert_eq!(common::load().apply_chat_template(&messages, &ChatOptions::default()).unwrap(), "Q: Hi\nA:");
    // A model without a template: MISSING.
    let folder = model_without_template();
    let model = Model::load(&folder.0, &common::options()).unwrap();
    let err = model.apply_chat_template(&messages, &ChatOptions::default()).unwrap_err();
    assert_eq!(err.status(), Status::Missing);
    let mut session = Session::new(&model).unwrap();
    let err = session.chat(&messages, &ChatOptions::default(), &GenerateOptions::greedy(4)).unwrap_err();
    assert_eq!(err.status(), Status::Missing);

    // An explicit template works on it; a broken one is BAD_FORMAT with a position.
    let given = ChatOptions { chat_template: Some(TEMPLATE.to_string()), ..ChatOptions::default() };
    assert_eq!(model.apply_chat_template(&messages, &given).unwrap(), "<user>Hi\n<assistant>");
    let broken =
        ChatOptions { chat_template: Some("{% if messages %}never closed".to_string()), ..ChatOptions::default() };
    let err = session.chat(&messages, &broken, &GenerateOptions::greedy(4)).unwrap_err();
    assert_eq!(err.status(), Status::BadFormat);
    let err = session.chat(&[ChatMessage::user("a\0b")], &given, &GenerateOptions::greedy(4)).unwrap_err();
    assert_eq!(err.message(), "INLAY_ERR_INVALID_ARGUMENT: messages[0].content holds a NUL byte at offset 1");
    assert_eq!(session.n_tokens().unwrap(), 0);
}
