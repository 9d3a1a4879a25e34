//! A loaded model (inlay_model): weights, vocabulary, chat template and its engine.
use std::ffi::{CStr, CString};
use std::mem;
use std::os::raw::c_char;
use std::path::Path;
use std::ptr::{self, NonNull};
use std::str::FromStr;

use crate::callback::{progress_trampoline, Bridge};
use crate::chat::{ChatMessage, ChatOptions, RawChat};
use crate::error::{check, Error, Result, Status};
use crate::sys;

/// Where a model runs (inlay_device).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Device {
    /// A usable GPU when this build of the library has a GPU backend, else the CPU.
    Auto,
    Cpu,
    /// The CUDA device of this index; Status::Unsupported when the library has no CUDA
    /// backend or no such device.
    Cuda(u32),
}

impl FromStr for Device {
    type Err = Error;
    /// "auto", "cpu", "cuda" (device 0) or "cuda:N".
    fn from_str(s: &str) -> Result<Device> {
        match s {
            "auto" => Ok(Device::Auto),
            "cpu" => Ok(Device::Cpu),
            "cuda" => Ok(Device::Cuda(0)),
            _ => match s.strip_prefix("cuda:").map(str::parse::<u32>) {
                Some(Ok(index)) => Ok(Device::Cuda(index)),
                _ => Err(Error::new(
                    Status::InvalidArgument,
                    &format!("unknown device '{}' (auto, cpu, cuda or cuda:N)", s),
                )),
            },
        }
    }
}

/// How a model is loaded (inlay_model_params). `Default` is the library's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelOptions {
    /// CPU threads for compute; 0 = the number of cores.
    pub n_threads: i32,
    /// Tokens per session at most; 0 = the model's own.
    pub context_length: i32,
    pub device: Device,
    /// The model's own KV budget in bytes; 0 = the default.
    pub kv_budget_bytes: i64,
    /// Tokens per KV block; 0 = 16.
    pub kv_block_size: i32,
    /// Tokens per forward pass; 0 = 512.
    pub batch_tokens: i32,
    /// KV budget as this share of the device's free memory; 0 = default.
    pub kv_memory_fraction: f64,
}

fn init_model_params() -> sys::inlay_model_params {
    let mut raw = mem::MaybeUninit::<sys::inlay_model_params>::zeroed();
    // SAFETY: init_size writes exactly size_of bytes; zero bytes are a valid struct.
    unsafe {
        sys::inlay_model_params_init_size(raw.as_mut_ptr(), mem::size_of::<sys::inlay_model_params>());
        raw.assume_init()
    }
}

impl Default for ModelOptions {
    fn default() -> ModelOptions {
        let p = init_model_params();
        ModelOptions {
            n_threads: p.n_threads,
            context_length: p.context_length,
            device: match p.device {
                sys::INLAY_DEVICE_CPU => Device::Cpu,
                sys::INLAY_DEVICE_CUDA => Device::Cuda(p.device_index.max(0) as u32),
                _ => Device::Auto,
            },
            kv_budget_bytes: p.kv_budget_bytes,
            kv_block_size: p.kv_block_size,
            batch_tokens: p.batch_tokens,
            kv_memory_fraction: p.kv_memory_fraction,
        }
    }
}

impl ModelOptions {
    fn to_raw(&self) -> Result<sys::inlay_model_params> {
        let mut p = init_model_params();
        p.n_threads = self.n_threads;
        p.context_length = self.context_length;
        let (device, index) = match self.device {
            Device::Auto => (sys::INLAY_DEVICE_AUTO, 0),
            Device::Cpu => (sys::INLAY_DEVICE_CPU, 0),
            Device::Cuda(index) => (sys::INLAY_DEVICE_CUDA, index),
        };
        p.device = device;
        p.device_index = i32::try_from(index)
            .map_err(|_| Error::new(Status::InvalidArgument, &format!("device index {} is too large", index)))?;
        p.kv_budget_bytes = self.kv_budget_bytes;
        p.kv_block_size = self.kv_block_size;
        p.batch_tokens = self.batch_tokens;
        p.kv_memory_fraction = self.kv_memory_fraction;
        Ok(p)
    }
}

/// What inlay_model_get_info reports, with the strings copied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelInfo {
    pub architecture: String,
    pub name: String,
    pub n_params: i64,
    pub file_bytes: i64,
    pub n_vocab: i32,
    pub n_embd: i32,
    pub n_layers: i32,
    pub n_heads: i32,
    pub n_kv_heads: i32,
    pub head_dim: i32,
    pub n_ff: i32,
    /// The per-session limit in effect.
    pub context_length: i32,
    pub train_context_length: i32,
    /// None when the vocabulary has none.
    pub bos_token: Option<i32>,
    pub eos_token: Option<i32>,
    /// "cpu", "cuda:0", ...
    pub device: String,
}

/// The KV pool and engine counters of a model (inlay_metrics).
pub type Metrics = sys::inlay_metrics;

/// A loaded model. Freed (inlay_model_free) when dropped; the borrow checker keeps it
/// alive while any Session made from it exists, as inlay.h requires.
pub struct Model {
    raw: NonNull<sys::inlay_model>,
}

// SAFETY (Send, Sync): inlay.h: "inlay_model is immutable once loaded and may be shared
// by any number of threads and sessions". Every call the wrapper makes on a model through
// `&Model` (info, metrics, tokenize, templates, making sessions) is one of those, and
// freeing it on another thread than the one that loaded it is allowed.
unsafe impl Send for Model {}
unsafe impl Sync for Model {}

fn path_c_string(path: &Path) -> Result<CString> {
    #[cfg(unix)]
    let bytes = {
        use std::os::unix::ffi::OsStrExt;
        path.as_os_str().as_bytes().to_vec()
    };
    #[cfg(not(unix))]
    let bytes = path
        .to_str()
        .ok_or_else(|| Error::new(Status::InvalidArgument, "the model path is not valid Unicode"))?
        .as_bytes()
        .to_vec();
    CString::new(bytes).map_err(|_| Error::new(Status::InvalidArgument, "the model path holds a NUL byte"))
}

impl Model {
    /// Loads a GGUF file or a Hugging Face folder.
    pub fn load<P: AsRef<Path>>(path: P, options: &ModelOptions) -> Result<Model> {
        let params = options.to_raw()?;
        Model::load_raw(path.as_ref(), &params)
    }

    /// Loads, calling `progress` with values in [0, 1] on this thread as it goes;
    /// `progress` returning false aborts the load (Status::Cancelled). A panic inside it
    /// aborts the load too and is resumed here.
    pub fn load_with_progress<P, F>(path: P, options: &ModelOptions, progress: F) -> Result<Model>
    where
        P: AsRef<Path>,
        F: FnMut(f32) -> bool,
    {
        let mut params = options.to_raw()?;
        let mut bridge = Bridge::new(progress);
        params.progress = Some(progress_trampoline::<F>);
        params.progress_user = bridge.as_user();
        let loaded = Model::load_raw(path.as_ref(), &params);
        bridge.resume_panic(); // drops a model loaded anyway
        loaded
    }

    fn load_raw(path: &Path, params: &sys::inlay_model_params) -> Result<Model> {
        let path = path_c_string(path)?;
        let mut raw: *mut sys::inlay_model = ptr::null_mut();
        // SAFETY: valid NUL-terminated path, params of our own size, out pointer.
        let status = unsafe { sys::inlay_model_load(path.as_ptr(), params, &mut raw) };
        let error = check(status).err();
        let model = NonNull::new(raw).map(|raw| Model { raw });
        match (error, model) {
            (None, Some(model)) => Ok(model),
            (Some(e), _) => Err(e), // a model handed out on failure is dropped (freed)
            (None, None) => Err(Error::new(Status::Internal, "inlay_model_load returned no model")),
        }
    }

    pub(crate) fn as_ptr(&self) -> *mut sys::inlay_model {
        self.raw.as_ptr()
    }

    pub fn info(&self) -> Result<ModelInfo> {
        // SAFETY: all-zero is a valid inlay_model_info; the library fills it up to
        // struct_size, and its strings are owned by the model, copied at once.
        unsafe {
            let mut info: sys::inlay_model_info = mem::zeroed();
            info.struct_size = mem::size_of::<sys::inlay_model_info>();
            check(sys::inlay_model_get_info(self.as_ptr(), &mut info))?;
            let string = |p: *const c_char| {
                if p.is_null() {
                    String::new()
                } else {
                    CStr::from_ptr(p).to_string_lossy().into_owned()
                }
            };
            let token = |id: i32| if id < 0 { None } else { Some(id) };
            Ok(ModelInfo {
                architecture: string(info.architecture),
                name: string(info.name),
                n_params: info.n_params,
                file_bytes: info.file_bytes,
                n_vocab: info.n_vocab,
                n_embd: info.n_embd,
                n_layers: info.n_layers,
                n_heads: info.n_heads,
                n_kv_heads: info.n_kv_heads,
                head_dim: info.head_dim,
                n_ff: info.n_ff,
                context_length: info.context_length,
                train_context_length: info.train_context_length,
                bos_token: token(info.bos_token),
                eos_token: token(info.eos_token),
                device: string(info.device),
            })
        }
    }

    /// KV pool and engine counters (open sessions, blocks held, tokens generated, ...).
    pub fn metrics(&self) -> Result<Metrics> {
        let mut m = Metrics { struct_size: mem::size_of::<Metrics>(), ..Metrics::default() };
        // SAFETY: a live model and a struct of the size we declare.
        check(unsafe { sys::inlay_model_get_metrics(self.as_ptr(), &mut m) })?;
        Ok(m)
    }

    /// Token ids of `text`; `add_bos`: BOS first when the vocabulary asks for it;
    /// `parse_special`: special-token text such as "<s>" becomes its id.
    pub fn tokenize(&self, text: &str, add_bos: bool, parse_special: bool) -> Result<Vec<i32>> {
        let mut flags = 0u32;
        if add_bos {
            flags |= sys::INLAY_TOKENIZE_ADD_BOS as u32;
        }
        if parse_special {
            flags |= sys::INLAY_TOKENIZE_PARSE_SPECIAL as u32;
        }
        // A first guess that fits most texts; the size query tells the rest.
        let mut out = vec![0i32; text.len() + 2];
        let mut n = 0usize;
        let call = |out: &mut Vec<i32>, n: &mut usize| unsafe {
            // SAFETY: `text` is len bytes (no NUL needed), `out` holds out.len() ids.
            sys::inlay_tokenize(
                self.as_ptr(),
                text.as_ptr() as *const c_char,
                text.len(),
                flags,
                out.as_mut_ptr(),
                out.len(),
                n,
            )
        };
        let mut status = call(&mut out, &mut n);
        if status == sys::INLAY_ERR_BUFFER_TOO_SMALL {
            out.resize(n, 0);
            status = call(&mut out, &mut n);
        }
        check(status)?;
        out.truncate(n);
        Ok(out)
    }

    /// The text of `tokens`; control tokens render only with `render_special`.
    pub fn detokenize(&self, tokens: &[i32], render_special: bool) -> Result<String> {
        query_string(|out, capacity, length| unsafe {
            // SAFETY: `tokens` holds tokens.len() ids; out/capacity per query_string.
            sys::inlay_detokenize(self.as_ptr(), tokens.as_ptr(), tokens.len(), render_special, out, capacity, length)
        })
    }

    /// The conversation rendered with the model's chat template (or options.chat_template).
    pub fn apply_chat_template(&self, messages: &[ChatMessage], options: &ChatOptions) -> Result<String> {
        let chat = RawChat::new(messages, options)?;
        query_string(|out, capacity, length| unsafe {
            // SAFETY: RawChat's pointers are live; out/capacity per query_string.
            sys::inlay_chat_apply_template(
                self.as_ptr(),
                chat.messages.as_ptr(),
                chat.messages.len(),
                &chat.params,
                out,
                capacity,
                length,
            )
        })
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        // SAFETY: we own the handle; no Session borrows it any more.
        unsafe { sys::inlay_model_free(self.raw.as_ptr()) }
    }
}

// The size-query convention of inlay.h: ask with no buffer, then fill one of the size
// it says (its length plus the NUL).
fn query_string(mut call: impl FnMut(*mut c_char, usize, *mut usize) -> sys::inlay_status) -> Result<String> {
    let mut length = 0usize;
    let status = call(ptr::null_mut(), 0, &mut length);
    if status != sys::INLAY_ERR_BUFFER_TOO_SMALL {
        check(status)?;
    }
    let mut buffer = vec![0u8; length + 1];
    check(call(buffer.as_mut_ptr() as *mut c_char, buffer.len(), &mut length))?;
    buffer.truncate(length);
    Ok(String::from_utf8(buffer).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
}
