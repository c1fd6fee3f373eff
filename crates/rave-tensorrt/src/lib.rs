//! Inference backends on ONNX Runtime: the runtime library loader with its search order,
//! model loading and metadata shared by every backend, and the CPU backend.

pub mod backend_report;
pub mod cpu_backend;
pub mod device_binding;
pub mod ep_options;
pub mod ep_policy;
pub mod gpu_backend;
pub mod gpu_inference;
pub mod model;
mod ort_message;
pub mod output_ring;
pub mod provider_paths;
pub mod providers;
mod run_terminator;
pub mod runtime;

pub use cpu_backend::CpuBackend;
pub use model::{LoadedModel, ModelOptions};
pub use runtime::{OrtRuntime, RuntimeCandidate};
