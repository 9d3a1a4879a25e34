// Errors carry the library's status and message.
mod common;

use inlay::{Device, GenerateOptions, Model, ModelOptions, Session, Status};

#[test]
fn a_missing_file_is_an_io_error() {
    let err = match Model::load("/nonexistent/dir/model.gguf", &common::options()) {
        Err(e) => e,
        Ok(_) => panic!("a missing file loaded"),
    };
    assert_eq!(err.status(), Status::Io);
    assert_eq!(err.status().name(), "INLAY_ERR_IO");
    assert!(err.message().starts_with("INLAY_ERR_IO: "), "{}", err);
    assert!(err.message().contains("/nonexistent/dir/model.gguf"), "{}", err);
    assert_eq!(err.to_string(), err.message());
}

#[test]
fn bad_arguments_are_invalid_argument() {
    // Found by the library.
    let bad_fraction = ModelOptions { kv_memory_fraction: 1.5, ..common::options() };
    let err = Model::load(common::model_path(), &bad_fraction).err().expect("kv_memory_fraction 1.5 accepted");
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(err.message().starts_with("INLAY_ERR_INVALID_ARGUMENT: "), "{}", err);

    let model = common::load();
    let mut session = Session::new(&model).unwrap();
    let bad_top_p = GenerateOptions { top_p: 2.0, ..GenerateOptions::greedy(4) };
    let err = session.generate("Hi", &bad_top_p).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(err.message().contains("top_p"), "{}", err);

    let err = session.generate_tokens(&[1, 1 << 20], &GenerateOptions::greedy(1), |_| true).unwrap_err();
    assert_eq!(err.status(), Status::InvalidToken);

    // Found by the wrapper: C strings cannot hold a NUL.
    let err = session.generate("a\0b", &GenerateOptions::greedy(1)).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert_eq!(err.message(), "INLAY_ERR_INVALID_ARGUMENT: the prompt holds a NUL byte at offset 1");
    let err = "gpu".parse::<Device>().unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);

    // The session is unchanged by the failures.
    assert_eq!(session.n_tokens().unwrap(), 0);
}

#[test]
fn cuda_is_refused_clearly_where_no_device_serves() {
    let options = ModelOptions { device: Device::Cuda(0), ..common::options() };
    let loaded = Model::load(common::model_path(), &options);
    if common::expect_gpu() {
        let model = loaded.expect("INLAY_TEST_EXPECT_GPU=1 but CUDA failed");
        assert_eq!(model.info().unwrap().device, "cuda:0");
        return;
    }
    let err = match loaded {
        Err(e) => e,
        Ok(model) => {
            panic!("loaded on {} (set INLAY_TEST_EXPECT_GPU=1 on a GPU machine)", model.info().unwrap().device)
        }
    };
    assert_eq!(err.status(), Status::Unsupported);
    assert!(err.message().contains("cuda"), "{}", err);
}

#[test]
fn status_codes_round_trip() {
    for code in [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 99, 42] {
        let status = Status::from_code(code).unwrap();
        assert_eq!(status.code(), code);
    }
    assert_eq!(Status::from_code(0), None);
    assert_eq!(Status::from_code(42), Some(Status::Other(42)));
    assert_eq!(Status::Other(42).name(), "INLAY_ERR_UNKNOWN");
    assert_eq!(Status::KvFull.name(), "INLAY_ERR_KV_FULL");
}
