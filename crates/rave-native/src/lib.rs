//! RAVE's native inference engine for the common super-resolution architectures.
//! [`recognise`](mod@recognise) finds SRVGGNetCompact or RRDBNet in an ONNX graph (never from the file
//! name) and reads its weights into a [`Network`]; [`reference`](mod@reference) runs that network with plain
//! f32 loops, the ground truth for the GPU kernels; [`gpu`] holds the CUDA kernels (NVRTC at
//! run time) and the whole-network SRVGGNetCompact engine; [`backend`] puts that engine behind
//! the GPU pipeline's backend interface (`--backend native`, or `auto`).
//!
//! ONNX is read with [prost](https://docs.rs/prost): the few `onnx.proto` messages RAVE needs
//! are declared by hand with prost's derive macros in [`proto`] (field numbers from
//! onnx.proto). That needs no `protoc` and no build script, so the crate builds from
//! crates.io alone on a fresh machine, and the declarations are short enough to review
//! against onnx.proto; generated code for the whole schema would be thousands of lines RAVE
//! does not use.

pub mod backend;
pub mod gpu;
pub mod graph;
pub mod network;
pub mod proto;
pub mod recognise;
pub mod reference;
pub mod refusal;
pub mod tensor;

pub use graph::Storage;
pub use network::{Architecture, Network};
pub use recognise::{recognise, recognise_file};
pub use refusal::{Mismatch, Refusal};
