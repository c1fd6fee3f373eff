//! Wires the stages (decode -> preprocess -> infer -> postprocess -> encode) into a
//! concurrent pipeline joined by bounded channels, with cancellation, progress events, a
//! safe output file protocol, the run report, and the benchmark.

pub mod backend_choice;
pub mod benchmark;
pub mod cancel;
pub mod channel;
pub mod config;
pub mod copied_streams;
pub mod device_tiles;
pub mod gpu_convert;
pub mod gpu_fit;
pub mod gpu_list;
pub mod gpu_stages;
pub mod infer_stage;
pub mod injected_failure;
mod native_choice;
pub mod no_replace;
pub mod output_file;
pub mod output_lock;
pub mod progress;
pub mod report;
pub mod segment_sink;
pub mod segments;
pub mod stage_run;
pub mod stages;
pub mod tiled_gpu;
pub mod tiling_choice;
pub mod upscale;
pub mod vram_fit;

pub use cancel::CancelToken;
pub use config::{
    ChannelCapacities, Device, GpuOptions, NativeChoice, PrecisionChoice, SegmentOptions,
    UpscaleConfig,
};
pub use progress::{Progress, ProgressSink};
pub use report::RunReport;
pub use tiling_choice::{TileMode, TileRequest};
pub use upscale::run_upscale;
