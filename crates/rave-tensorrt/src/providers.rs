//! Which ONNX Runtime execution providers really load here: a session is built on a tiny
//! embedded model with each provider registered as mandatory, and the failure, if any, is
//! kept as the reason.

use ort::ep::{CUDA, ExecutionProviderDispatch, TensorRT};
use ort::session::Session;
use serde::Serialize;

use crate::runtime::OrtRuntime;

/// A nearest-neighbour x2 model (tests/fixtures/nearest_x2.onnx), 261 bytes.
const PROBE_MODEL: &[u8] = include_bytes!("probe_model.onnx");

/// Whether one provider can run a session.
#[derive(Debug, Clone, Serialize)]
pub struct ProviderStatus {
    /// ONNX Runtime's provider name.
    pub name: &'static str,
    /// Whether a session with it registered was created.
    pub available: bool,
    /// The runtime's error when it was not.
    pub reason: Option<String>,
}

fn try_provider(runtime: &OrtRuntime, ep: ExecutionProviderDispatch) -> Result<(), String> {
    let builder = Session::builder(runtime.environment()).map_err(|e| e.to_string())?;
    let mut builder = builder
        .with_execution_providers([ep.error_on_failure()])
        .map_err(|e| e.to_string())?;
    builder
        .commit_from_memory(PROBE_MODEL)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Probe the CUDA and TensorRT providers of the loaded runtime.
pub fn probe_gpu_providers(runtime: &OrtRuntime) -> Vec<ProviderStatus> {
    [
        ("CUDAExecutionProvider", CUDA::default().build()),
        ("TensorrtExecutionProvider", TensorRT::default().build()),
    ]
    .into_iter()
    .map(|(name, ep)| match try_provider(runtime, ep) {
        Ok(()) => ProviderStatus {
            name,
            available: true,
            reason: None,
        },
        Err(reason) => ProviderStatus {
            name,
            available: false,
            reason: Some(reason.lines().next().unwrap_or("").to_string()),
        },
    })
    .collect()
}
