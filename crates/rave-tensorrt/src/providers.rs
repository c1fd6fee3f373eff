//! Which ONNX Runtime execution providers really load here: the provider folder is resolved
//! (see `provider_paths`), its bridge library preloaded as the seed does, and a session is
//! built on a tiny embedded model with the provider registered as mandatory; the failure, if
//! any, is kept as the reason.

use ort::ep::{CUDA, ExecutionProviderDispatch, TensorRT};
use ort::session::Session;
use serde::Serialize;

use crate::provider_paths::{ProviderCandidate, ProviderKind, SHARED_BRIDGE, resolve};
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
    /// The folder its library was resolved in, and that folder's origin.
    pub resolved_in: Option<String>,
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

/// Load the provider bridge with global symbols (providers built against a static ORT
/// look up `Provider_GetHost` in it), as the seed's preload does.
pub(crate) fn preload_bridge(dir: &std::path::Path) -> Result<(), String> {
    let path = dir.join(SHARED_BRIDGE);
    // SAFETY: loading ONNX Runtime's own bridge library runs only its initialisers; the
    // handle is leaked on purpose so the library stays loaded for the process.
    let lib = unsafe {
        libloading::os::unix::Library::open(
            Some(&path),
            libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_GLOBAL,
        )
    }
    .map_err(|e| format!("{}: {e}", path.display()))?;
    std::mem::forget(lib);
    Ok(())
}

/// Probe the CUDA and TensorRT providers of the loaded runtime, resolving their libraries
/// among `candidates` first.
pub fn probe_gpu_providers(
    runtime: &OrtRuntime,
    candidates: &[ProviderCandidate],
) -> Vec<ProviderStatus> {
    [
        (ProviderKind::Cuda, CUDA::default().build()),
        (ProviderKind::TensorRt, TensorRT::default().build()),
    ]
    .into_iter()
    .map(|(kind, ep)| {
        let name = kind.label();
        let found = match resolve(kind, candidates) {
            Ok(found) => found,
            Err(e) => {
                return ProviderStatus {
                    name,
                    available: false,
                    resolved_in: None,
                    reason: Some(e.to_string()),
                };
            }
        };
        let resolved_in = Some(format!("{} ({})", found.dir.display(), found.origin));
        let outcome = preload_bridge(&found.dir).and_then(|()| try_provider(runtime, ep));
        ProviderStatus {
            name,
            available: outcome.is_ok(),
            resolved_in,
            reason: outcome.err().map(|r| crate::ort_message::first_line(&r)),
        }
    })
    .collect()
}
