// Helpers shared by the integration tests: the default model of this repository.
#![allow(dead_code)]
use std::env;
use std::path::PathBuf;

use inlay::{Model, ModelOptions};

/// models/default of this checkout, or INLAY_TEST_MODEL.
pub fn model_path() -> PathBuf {
    match env::var_os("INLAY_TEST_MODEL") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../models/default"),
    }
}

/// One compute thread: the tests run in parallel on small machines.
pub fn options() -> ModelOptions {
    ModelOptions { n_threads: 1, ..ModelOptions::default() }
}

pub fn load() -> Model {
    Model::load(model_path(), &options()).unwrap_or_else(|e| panic!("cannot load {}: {}", model_path().display(), e))
}

/// INLAY_TEST_EXPECT_GPU=1: a CUDA device must serve (as for the C ABI tests).
pub fn expect_gpu() -> bool {
    env::var("INLAY_TEST_EXPECT_GPU").map(|v| v == "1").unwrap_or(false)
}

/// A check that cannot run here: skips with `why`, or fails under INLAY_TEST_NO_SKIP=1.
pub fn skip(why: &str) {
    if env::var("INLAY_TEST_NO_SKIP").map(|v| v == "1").unwrap_or(false) {
        panic!("{} (INLAY_TEST_NO_SKIP=1: not skipping)", why);
    }
    eprintln!("SKIPPED: {}", why);
}
