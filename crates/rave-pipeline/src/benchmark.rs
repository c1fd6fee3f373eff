//! `run_benchmark`: one full upscale of a clip into a scratch file, reported as each stage's
//! own throughput (frames per busy second) next to the overall frames per second, so the
//! bottleneck is plain.

use serde::Serialize;

use rave_core::error::Result;
use rave_core::metrics::StageSnapshot;

use crate::cancel::CancelToken;
use crate::config::UpscaleConfig;
use crate::progress::ProgressSink;
use crate::upscale::run_upscale;

/// Benchmark results.
#[derive(Debug, Clone, Serialize)]
pub struct BenchmarkReport {
    /// Model name.
    pub model: String,
    /// Backend that ran it.
    pub backend: String,
    /// Input size [width, height].
    pub input_size: [u32; 2],
    /// Output size [width, height].
    pub output_size: [u32; 2],
    /// Frames through the whole pipeline.
    pub frames: u64,
    /// Wall-clock seconds of the pipeline (model load included).
    pub elapsed_s: f64,
    /// Overall frames per second.
    pub fps: f64,
    /// Each stage's throughput if it ran alone.
    pub stages: Vec<StageSnapshot>,
    /// The slowest stage.
    pub bottleneck: String,
}

/// Run the pipeline on `config` (its output should be a scratch path) and report.
pub fn run_benchmark(
    config: &UpscaleConfig,
    progress: &dyn ProgressSink,
    cancel: &CancelToken,
) -> Result<BenchmarkReport> {
    let report = run_upscale(config, progress, cancel)?;
    // The scratch output has served its purpose.
    let _ = std::fs::remove_file(&report.output);
    let bottleneck = report
        .stages
        .iter()
        .filter(|s| s.frames > 0)
        .min_by(|a, b| a.capacity_fps.total_cmp(&b.capacity_fps))
        .map(|s| s.name.to_string())
        .unwrap_or_default();
    Ok(BenchmarkReport {
        model: report.model.metadata.name,
        backend: report.backend.name,
        input_size: report.input_size,
        output_size: report.output_size,
        frames: report.frames_out,
        elapsed_s: report.elapsed_s,
        fps: report.fps,
        stages: report.stages,
        bottleneck,
    })
}
