//! Shared helpers of the rave-native tests: fixtures, installed models, ONNX Runtime.
#![allow(dead_code)]

use std::path::PathBuf;

use rave_tensorrt::{OrtRuntime, RuntimeCandidate};

/// A file of tests/fixtures.
pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
}

fn rave_home() -> PathBuf {
    std::env::var_os("RAVE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".local/share/rave")
        })
}

/// The installed model `name` (scripts/setup.sh), or None with a message saying the test
/// that asked is skipped.
pub fn installed_model(name: &str) -> Option<PathBuf> {
    let p = rave_home().join("models").join(format!("{name}.onnx"));
    if p.is_file() {
        Some(p)
    } else {
        eprintln!(
            "skipped: {} missing (run scripts/setup.sh to install the models)",
            p.display()
        );
        None
    }
}

/// The ONNX Runtime library set up by scripts/setup.sh (or ORT_DYLIB_PATH).
pub fn runtime() -> &'static OrtRuntime {
    let mut candidates = Vec::new();
    if let Some(p) = std::env::var_os("ORT_DYLIB_PATH") {
        candidates.push(RuntimeCandidate::new(p, "ORT_DYLIB_PATH"));
    }
    candidates.push(RuntimeCandidate::new(
        rave_home().join("lib/libonnxruntime.so"),
        "RAVE_HOME",
    ));
    OrtRuntime::load(&candidates).expect("ONNX Runtime (run scripts/setup.sh)")
}
