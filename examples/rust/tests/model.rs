// The model: its facts, the wrapper's defaults (the library's own), tokenizing, load
// progress, devices.
mod common;

use inlay::{ChatOptions, Device, GenerateOptions, Model, ModelOptions, Status, Thinking};

#[test]
fn info_describes_the_default_model() {
    let info = common::load().info().unwrap();
    assert_eq!(info.architecture, "llama");
    assert_eq!(info.n_params, 984_320);
    assert_eq!((info.n_vocab, info.n_embd, info.n_layers, info.n_ff), (1024, 256, 2, 256));
    assert_eq!((info.n_heads, info.n_kv_heads, info.head_dim), (8, 2, 32));
    assert_eq!((info.context_length, info.train_context_length), (256, 256));
    assert_eq!((info.bos_token, info.eos_token), (Some(1), Some(2)));
    assert!(info.file_bytes > 3_000_000, "{}", info.file_bytes);
    assert!(info.device == "cpu" || info.device.starts_with("cuda:"), "{}", info.device);
    assert_eq!(inlay::abi_version(), inlay::sys::INLAY_ABI_VERSION);
    assert!(inlay::version().starts_with("0."), "{}", inlay::version());
}

#[test]
fn defaults_are_the_documented_ones() {
    let g = GenerateOptions::default();
    assert_eq!((g.max_tokens, g.top_k, g.penalty_last_n), (256, 40, 64));
    assert_eq!((g.temperature, g.top_p, g.min_p), (0.8, 0.95, 0.05));
    assert_eq!((g.repeat_penalty, g.frequency_penalty, g.presence_penalty), (1.0, 0.0, 0.0));
    assert_eq!(g.seed, None);
    assert!(!g.ignore_eos && g.add_bos && g.parse_special && g.stop.is_empty());
    let m = ModelOptions::default();
    assert_eq!((m.n_threads, m.context_length, m.device), (0, 0, Device::Auto));
    let c = ChatOptions::default();
    assert_eq!((c.thinking, c.add_generation_prompt, c.chat_template), (Thinking::Default, true, None));
}

#[test]
fn tokenize_and_detokenize_round_trip() {
    let model = common::load();
    let tokens = model.tokenize("You will be happy.", true, true).unwrap();
    assert_eq!(tokens[0], 1, "BOS first");
    assert!(tokens.len() > 3);
    assert_eq!(model.detokenize(&tokens, false).unwrap(), "You will be happy.");
    assert!(model.detokenize(&tokens, true).unwrap().starts_with("<s>"));
    let without_bos = model.tokenize("You will be happy.", false, true).unwrap();
    assert_eq!(&tokens[1..], &without_bos[..]);
    assert_eq!(model.tokenize("", false, true).unwrap(), Vec::<i32>::new());
    let err = model.detokenize(&[5000], false).unwrap_err();
    assert_eq!(err.status(), Status::InvalidToken);
}

#[test]
fn progress_rises_to_one_and_false_aborts() {
    let mut seen = Vec::new();
    Model::load_with_progress(common::model_path(), &common::options(), |p| {
        seen.push(p);
        true
    })
    .unwrap();
    assert!(!seen.is_empty());
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{:?}", seen);
    assert!(seen.iter().all(|p| (0.0..=1.0).contains(p)), "{:?}", seen);
    assert_eq!(*seen.last().unwrap(), 1.0);

    let err = Model::load_with_progress(common::model_path(), &common::options(), |_| false).err().unwrap();
    assert_eq!(err.status(), Status::Cancelled);

    // A panic aborts the load and reaches the caller once the library has returned.
    let mut calls = 0;
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = Model::load_with_progress(common::model_path(), &common::options(), |_| {
            calls += 1;
            panic!("progress failed on purpose")
        });
    }));
    assert_eq!(caught.err().unwrap().downcast_ref::<&str>(), Some(&"progress failed on purpose"));
    assert_eq!(calls, 1);
}

#[test]
fn the_cpu_on_request_and_devices_by_name() {
    let options = ModelOptions { device: Device::Cpu, ..common::options() };
    assert_eq!(Model::load(common::model_path(), &options).unwrap().info().unwrap().device, "cpu");
    assert_eq!("auto".parse::<Device>().unwrap(), Device::Auto);
    assert_eq!("cpu".parse::<Device>().unwrap(), Device::Cpu);
    assert_eq!("cuda".parse::<Device>().unwrap(), Device::Cuda(0));
    assert_eq!("cuda:3".parse::<Device>().unwrap(), Device::Cuda(3));
    assert!("cuda:".parse::<Device>().is_err());
    let huge = ModelOptions { device: Device::Cuda(u32::MAX), ..common::options() };
    assert_eq!(Model::load(common::model_path(), &huge).err().unwrap().status(), Status::InvalidArgument);
}
