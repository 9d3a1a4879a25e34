//! Conversations for the model's chat template (inlay_chat_message, inlay_chat_params).
use std::ffi::CString;
use std::mem;
use std::os::raw::c_char;
use std::ptr;

use crate::error::Result;
use crate::generate::c_string;
use crate::sys;

/// One message of a conversation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChatMessage {
    /// "system", "user", "assistant", "tool", ...
    pub role: String,
    pub content: String,
}

impl ChatMessage {
    pub fn new(role: &str, content: &str) -> ChatMessage {
        ChatMessage { role: role.to_string(), content: content.to_string() }
    }
    pub fn system(content: &str) -> ChatMessage {
        ChatMessage::new("system", content)
    }
    pub fn user(content: &str) -> ChatMessage {
        ChatMessage::new("user", content)
    }
    pub fn assistant(content: &str) -> ChatMessage {
        ChatMessage::new("assistant", content)
    }
}

/// The template's `enable_thinking` (inlay_thinking).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Thinking {
    /// Left undefined: the template's default.
    Default,
    Off,
    On,
}

/// How a conversation is rendered. `Default` is the library's (inlay_chat_params_init_size):
/// the model's own template, ending with the assistant's header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChatOptions {
    pub thinking: Thinking,
    pub add_generation_prompt: bool,
    /// Jinja source used instead of the model's template; None = the model's.
    pub chat_template: Option<String>,
}

fn init_chat_params() -> sys::inlay_chat_params {
    let mut raw = mem::MaybeUninit::<sys::inlay_chat_params>::zeroed();
    // SAFETY: init_size writes exactly size_of bytes; zero bytes are a valid struct.
    unsafe {
        sys::inlay_chat_params_init_size(raw.as_mut_ptr(), mem::size_of::<sys::inlay_chat_params>());
        raw.assume_init()
    }
}

impl Default for ChatOptions {
    fn default() -> ChatOptions {
        let p = init_chat_params();
        ChatOptions {
            thinking: match p.thinking {
                sys::INLAY_THINKING_OFF => Thinking::Off,
                sys::INLAY_THINKING_ON => Thinking::On,
                _ => Thinking::Default,
            },
            add_generation_prompt: p.add_generation_prompt,
            chat_template: None,
        }
    }
}

/// The C view of a conversation and its options; the pointers stay valid while it lives.
pub(crate) struct RawChat {
    pub(crate) messages: Vec<sys::inlay_chat_message>,
    pub(crate) params: sys::inlay_chat_params,
    _strings: Vec<CString>,
}

impl RawChat {
    pub(crate) fn new(messages: &[ChatMessage], options: &ChatOptions) -> Result<RawChat> {
        let mut strings = Vec::with_capacity(2 * messages.len() + 1);
        let mut raw_messages = Vec::with_capacity(messages.len());
        for (i, m) in messages.iter().enumerate() {
            let role = c_string(&m.role, &format!("messages[{}].role", i))?;
            let content = c_string(&m.content, &format!("messages[{}].content", i))?;
            raw_messages.push(sys::inlay_chat_message { role: role.as_ptr(), content: content.as_ptr() });
            strings.push(role);
            strings.push(content);
        }
        let mut params = init_chat_params();
        params.thinking = match options.thinking {
            Thinking::Default => sys::INLAY_THINKING_DEFAULT,
            Thinking::Off => sys::INLAY_THINKING_OFF,
            Thinking::On => sys::INLAY_THINKING_ON,
        };
        params.add_generation_prompt = options.add_generation_prompt;
        params.chat_template = match &options.chat_template {
            Some(source) => {
                let source = c_string(source, "the chat template")?;
                let p: *const c_char = source.as_ptr();
                strings.push(source);
                p
            }
            None => ptr::null(),
        };
        // A CString's buffer does not move when the CString is moved into `strings`.
        Ok(RawChat { messages: raw_messages, params, _strings: strings })
    }
}
