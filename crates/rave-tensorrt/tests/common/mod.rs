//! Shared helpers of the rave-tensorrt integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

use rave_core::batch::Batching;
use rave_tensorrt::{CpuBackend, ModelOptions, OrtRuntime, RuntimeCandidate};

/// A file of tests/fixtures.
pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
}

/// The ONNX Runtime library set up by scripts/setup.sh (or ORT_DYLIB_PATH).
pub fn runtime() -> &'static OrtRuntime {
    let mut candidates = Vec::new();
    if let Some(p) = std::env::var_os("ORT_DYLIB_PATH") {
        candidates.push(RuntimeCandidate::new(p, "ORT_DYLIB_PATH"));
    }
    let home = std::env::var_os("RAVE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".local/share/rave")
        });
    candidates.push(RuntimeCandidate::new(
        home.join("lib/libonnxruntime.so"),
        "RAVE_HOME",
    ));
    OrtRuntime::load(&candidates).expect("ONNX Runtime (run scripts/setup.sh)")
}

/// The CPU backend on fixture `name` (two threads), running up to `max_batch` frames a run.
pub fn cpu_backend(name: &str, max_batch: usize) -> CpuBackend {
    CpuBackend::new(runtime(), &fixture(name), &ModelOptions { threads: 2 })
        .unwrap()
        .with_batching(Batching {
            max_batch,
            ..Batching::default()
        })
        .unwrap()
}
