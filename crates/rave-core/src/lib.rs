//! RAVE core contracts shared by every crate: frames and pixel formats, the backend and
//! codec traits, the error type with its stable codes, and run metrics.

pub mod backend;
pub mod batch;
pub mod block_on;
pub mod byte_size;
pub mod codec;
pub mod color;
pub mod damage;
#[cfg(feature = "debug-alloc")]
pub mod debug_alloc;
pub mod error;
pub mod file_kind;
pub mod frame;
pub mod gpu;
pub mod metrics;
pub mod tiling;
pub mod types;
pub mod user_dirs;

pub use error::{EngineError, ErrorFamily, Result};
