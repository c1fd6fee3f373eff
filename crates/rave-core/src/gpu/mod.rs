//! The GPU foundation: probing for the CUDA driver without crashing, the device context with
//! its stage streams, the bucketed buffer pool, timing of queued work, VRAM accounting, the health snapshot and a diagnostic timeline.

pub mod buffer;
pub mod context;
pub mod device_memory;
pub mod gpu_timer;
pub mod health;
pub mod pool;
pub mod probe;
pub mod stand_in;
pub mod timeline;
pub mod vram;

pub use buffer::GpuBuffer;
pub use context::{GpuContext, StageStreams, cuda_err};
pub use gpu_timer::GpuTimer;
pub use health::HealthSnapshot;
pub use probe::{DeviceInfo, list_devices, probe_driver};
