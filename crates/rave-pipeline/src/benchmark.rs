//! `run_benchmark`: three measurements on one clip, so the bottleneck is plain:
//! 1. inference alone (the first frame, already on the device or in memory, run repeatedly);
//! 2. the whole pipeline with the encode stage replaced by a null sink;
//! 3. the whole pipeline with the real encoder (into a scratch file, deleted after).
//!
//! Pipeline rates count from the first frame decoded to the last written (model loading and
//! warm-up excluded); each stage's capacity is frames per second of its own busy time.

use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use rave_core::codec::FrameSource;
use rave_core::error::{EngineError, Result};
use rave_core::frame::HostYuvFrame;
use rave_core::metrics::StageSnapshot;
use rave_core::types::GpuTexture;
use rave_ffmpeg::{VideoReader, probe};

use crate::backend_choice::{Engine, choose_backend};
use crate::cancel::CancelToken;
use crate::config::{SegmentOptions, UpscaleConfig};
use crate::gpu_convert::{GpuConverter, HostCopies};
use crate::progress::ProgressSink;
use crate::report::{RunReport, RunStatus, ratio};
use crate::upscale::run_upscale;

/// Inference alone.
#[derive(Debug, Clone, Serialize)]
pub struct InferenceOnly {
    /// Frames run.
    pub frames: u64,
    /// Frames per second.
    pub fps: f64,
    /// Frames per inference call.
    pub batch: usize,
}

/// One pipeline run.
#[derive(Debug, Clone, Serialize)]
pub struct PipelineRun {
    /// Frames through the pipeline.
    pub frames: u64,
    /// Seconds from the first frame decoded to the last written.
    pub elapsed_s: f64,
    /// Frames per second over that time.
    pub fps: f64,
    /// Each stage's counters and capacity.
    pub stages: Vec<StageSnapshot>,
    /// The stage with the lowest capacity.
    pub bottleneck: String,
    /// Segments the run was cut into (one worker processes them in turn).
    pub segments: usize,
}

impl PipelineRun {
    fn from(report: &RunReport) -> Self {
        let bottleneck = report
            .stages
            .iter()
            .filter(|s| s.frames > 0)
            .min_by(|a, b| a.capacity_fps.total_cmp(&b.capacity_fps))
            .map(|s| s.name.to_string())
            .unwrap_or_default();
        Self {
            frames: report.frames_out,
            elapsed_s: report.pipeline_s,
            fps: report.pipeline_fps,
            stages: report.stages.clone(),
            bottleneck,
            segments: report.segments.total,
        }
    }

    fn capacity(&self, stage: &str) -> f64 {
        self.stages
            .iter()
            .find(|s| s.name == stage)
            .map_or(0.0, |s| s.capacity_fps)
    }
}

/// Benchmark results.
#[derive(Debug, Clone, Serialize)]
pub struct BenchmarkReport {
    /// Model name.
    pub model: String,
    /// Backend that ran it.
    pub backend: String,
    /// Why that backend.
    pub backend_reason: String,
    /// Input size [width, height].
    pub input_size: [u32; 2],
    /// Output size [width, height].
    pub output_size: [u32; 2],
    /// Inference alone.
    pub inference_only: InferenceOnly,
    /// The pipeline with a null encode stage.
    pub null_encode: PipelineRun,
    /// The whole pipeline.
    pub full: PipelineRun,
    /// Null-encode fps over inference-only fps.
    pub null_vs_inference: f64,
    /// Full fps over the slower of inference alone and the encoder's capacity.
    pub full_vs_bound: f64,
    /// Frames of the full run (same as `full.frames`).
    pub frames: u64,
    /// Full-run fps (same as `full.fps`).
    pub fps: f64,
    /// Full-run stages (same as `full.stages`).
    pub stages: Vec<StageSnapshot>,
    /// Full-run bottleneck (same as `full.bottleneck`).
    pub bottleneck: String,
    /// The full run's report (GPU metrics, host copies, VRAM).
    pub full_report: RunReport,
}

/// Run the three measurements on `config` (its output should be a scratch path).
pub fn run_benchmark(
    config: &UpscaleConfig,
    progress: &dyn ProgressSink,
    cancel: &CancelToken,
) -> Result<BenchmarkReport> {
    // Both passes are scratch: never resumed, their work folder removed however they end.
    let config = &UpscaleConfig {
        segments: SegmentOptions {
            scratch: true,
            ..config.segments.clone()
        },
        ..config.clone()
    };
    let repeats = config.max_frames.unwrap_or(100).clamp(1, 300);
    rave_core::gpu::timeline::section("inference_only");
    let inference_only = measure_inference(config, repeats, cancel)?;
    rave_core::gpu::timeline::section("null_encode");
    let null_report = run_upscale(
        &UpscaleConfig {
            null_output: true,
            ..config.clone()
        },
        progress,
        cancel,
    )?;
    // Stopped during the null pass: no full pass to measure.
    if null_report.status == RunStatus::Partial {
        return Err(EngineError::Cancelled);
    }
    rave_core::gpu::timeline::section("full");
    let full_report = run_upscale(config, progress, cancel)?;
    // The scratch output has served its purpose (its work folder went with the pass).
    let _ = std::fs::remove_file(&full_report.output);
    let null_encode = PipelineRun::from(&null_report);
    let full = PipelineRun::from(&full_report);
    let bound = inference_only.fps.min(full.capacity("encode"));
    Ok(BenchmarkReport {
        model: full_report.model.metadata.name.clone(),
        backend: full_report.backend.name.clone(),
        backend_reason: full_report.backend.reason.clone(),
        input_size: full_report.input_size,
        output_size: full_report.output_size,
        null_vs_inference: ratio(null_encode.fps, inference_only.fps),
        full_vs_bound: ratio(full.fps, bound),
        inference_only,
        frames: full.frames,
        fps: full.fps,
        stages: full.stages.clone(),
        bottleneck: full.bottleneck.clone(),
        null_encode,
        full,
        full_report,
    })
}

fn first_frame(config: &UpscaleConfig) -> Result<(HostYuvFrame, rave_core::color::ColorInfo)> {
    let mut reader = VideoReader::open(&config.input)?;
    let frame = reader.next_frame()?.ok_or_else(|| {
        EngineError::Decode(format!("{}: no video frames", config.input.display()))
    })?;
    Ok((frame, reader.color()))
}

/// Run the model `repeats` times on the clip's first frame, after warm-up; Ctrl+C (`cancel`)
/// stops the run in flight and the measure (`Cancelled`).
pub fn measure_inference(
    config: &UpscaleConfig,
    repeats: u64,
    cancel: &CancelToken,
) -> Result<InferenceOnly> {
    let chosen = choose_backend(config, probe(&config.input)?.frame_size()?, 2)?;
    let (frame, color) = first_frame(config)?;
    // Ctrl+C stops the run in flight and the loop at its next call: nothing more to measure.
    if let Some(i) = chosen.engine.interrupter() {
        cancel.on_cancel(i);
    }
    let stopped = |r: Result<()>| match cancel.reason() {
        Some(_) => Err(EngineError::Cancelled),
        None => r,
    };
    match chosen.engine {
        Engine::Cpu(backend) => {
            let rgb = crate::stages::to_rgb(frame, &color);
            let batch = backend.batching().max_batch;
            let inputs = vec![rgb.image; batch];
            stopped(backend.upscale(&inputs).map(drop))?;
            let t = Instant::now();
            let calls = repeats.div_ceil(batch as u64);
            for _ in 0..calls {
                stopped(backend.upscale(&inputs).map(drop))?;
            }
            Ok(InferenceOnly {
                frames: calls * batch as u64,
                fps: (calls * batch as u64) as f64 / t.elapsed().as_secs_f64(),
                batch,
            })
        }
        Engine::Gpu(gpu) => {
            let tensor = chosen.metadata.tensor_format;
            let converter = GpuConverter::new(
                gpu.ctx.clone(),
                color,
                tensor,
                Arc::new(HostCopies::default()),
            )?;
            let texture = converter.upload(frame)?.texture;
            let batch = gpu.backend.batching().max_batch;
            let inputs: Vec<GpuTexture> = vec![texture; batch];
            // The finished runs' GPU times are read after each call, as the inference stage
            // does, so the timer's queue stays within what it holds without allocating.
            let run = |n: u64| -> Result<()> {
                for _ in 0..n.div_ceil(batch as u64) {
                    stopped(gpu.backend.upscale(&inputs).map(drop))?;
                    gpu.backend.finished_gpu_times(false)?;
                }
                Ok(())
            };
            // A backend may return before the GPU is done: the clock stops when it is.
            let inference = &gpu.ctx.streams().inference;
            run(3 * batch as u64)?;
            gpu.ctx.host_sync(inference, "inference sync")?;
            let t = Instant::now();
            run(repeats)?;
            gpu.ctx.host_sync(inference, "inference sync")?;
            // The timing events of the runs (for the backend's own counters).
            gpu.backend.finished_gpu_times(true)?;
            let frames = repeats.div_ceil(batch as u64) * batch as u64;
            let fps = frames as f64 / t.elapsed().as_secs_f64();
            gpu.backend.close()?;
            Ok(InferenceOnly { frames, fps, batch })
        }
    }
}
