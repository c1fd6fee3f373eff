//! The run report: what ran, on what, how fast, and what came out. Printed as JSON with
//! `--json` and summarized on the terminal otherwise.

use std::path::PathBuf;

use rave_core::backend::ModelMetadata;
use rave_core::damage::InputDamage;
use rave_core::gpu::HealthSnapshot;
use rave_core::metrics::StageSnapshot;
use rave_ffmpeg::{DecodeStats, EncoderSettings, WriterSummary};
use rave_tensorrt::backend_report::GpuBackendReport;
use serde::Serialize;

use crate::config::Device;
use crate::gpu_convert::HostCopyReport;
use crate::tiling_choice::TilingReport;

/// Whether the output is the whole video.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Every frame was upscaled and the output is in place.
    Complete,
    /// Cancelled: the finalized output holds the frames done so far, under a `.partial` name.
    Partial,
}

/// Which model ran.
#[derive(Debug, Clone, Serialize)]
pub struct ModelReport {
    /// The model's description.
    #[serde(flatten)]
    pub metadata: ModelMetadata,
    /// The file it came from.
    pub path: PathBuf,
}

/// Where inference ran and why there.
#[derive(Debug, Clone, Serialize)]
pub struct BackendReport {
    /// What the user asked for.
    pub requested: Device,
    /// The backend that ran (e.g. onnxruntime-cpu).
    pub name: String,
    /// Why this backend was chosen.
    pub reason: String,
    /// The ONNX Runtime library used; absent when the native engine ran the model (ONNX
    /// Runtime is then not loaded at all).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime_library: Option<PathBuf>,
}

/// Everything about one finished (or cancelled) upscale.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// complete or partial.
    pub status: RunStatus,
    /// The input file.
    pub input: PathBuf,
    /// Where the output is (the `.partial` file for a cancelled run).
    pub output: PathBuf,
    /// Model.
    pub model: ModelReport,
    /// Backend.
    pub backend: BackendReport,
    /// Whether frames were cut into tiles for the model, and why.
    pub tiling: TilingReport,
    /// Encoder settings.
    pub encoder: EncoderSettings,
    /// Input size [width, height].
    pub input_size: [u32; 2],
    /// Output size [width, height].
    pub output_size: [u32; 2],
    /// Frames decoded.
    pub frames_in: u64,
    /// Frames encoded into the output.
    pub frames_out: u64,
    /// Wall-clock seconds of the whole run.
    pub elapsed_s: f64,
    /// Frames this run upscaled (`frames_out` less those of segments reused from an
    /// earlier, interrupted run).
    pub frames_upscaled: u64,
    /// Frames this run upscaled per second over the whole run.
    pub fps: f64,
    /// Seconds from the first frame decoded to the last written (loading the model, opening
    /// the input and closing the decoders excluded).
    pub pipeline_s: f64,
    /// Output frames per second over `pipeline_s`.
    pub pipeline_fps: f64,
    /// Seconds from the run's start to the first output frame handed to the encoder (`None`
    /// when this run wrote no frame, e.g. every segment was reused).
    pub first_frame_s: Option<f64>,
    /// The start-up's steps in the order they ended: `probe`, `index` (a new job) or
    /// `resume`, `load_model` (the first worker's backend choice and engine build),
    /// `first_frame`.
    pub startup: Vec<StartupStep>,
    /// Per-stage counters.
    pub stages: Vec<StageSnapshot>,
    /// Decoder counters (frames, repaired timestamps, copied packets).
    pub decode: DecodeStats,
    /// What the input lacked or had damaged (all zero for a clean input; nonzero only with
    /// `--allow-corrupt` or in a partial run).
    pub input_damage: InputDamage,
    /// Writer counters (streams copied or skipped).
    pub mux: WriterSummary,
    /// The GPU path's own report, when the GPU ran the model.
    pub gpu: Option<GpuRunReport>,
    /// Per GPU the run used (`--gpus`): its workers, frames, fps and memory.
    pub gpus: Vec<GpuLine>,
    /// How the job was cut into segments and how many were reused.
    pub segments: SegmentsReport,
}

/// One GPU's share of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuLine {
    /// The GPU's index.
    pub gpu: usize,
    /// Segment workers that ran on it.
    pub workers: usize,
    /// Frames its workers upscaled (of the segments they finished).
    pub frames: u64,
    /// Those frames over the time its busiest worker spent on segments.
    pub fps: f64,
    /// RAVE's own VRAM peak there, its workers' added up.
    pub vram_peak: usize,
    /// The device's own memory peak beyond the contexts (the most any of its workers saw).
    pub device_peak: Option<usize>,
    /// Why a worker there stopped early: its model did not load, or the GPU failed mid-run
    /// (its segments went to the other GPUs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    /// The driver's GPU that ran this one's work where `RAVE_TEST_GPU_COPIES` shows GPU 0
    /// as several (a test: the speeds are that one GPU's, shared).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stand_in_for: Option<usize>,
}

/// One GPU worker's share of the run: its GPU, the frames of the segments it finished, its
/// seconds on segments, RAVE's VRAM peak and the device's.
pub type WorkerShare = (usize, u64, f64, usize, Option<usize>);

impl GpuLine {
    /// The line of a GPU where nothing ran.
    pub fn idle(gpu: usize) -> Self {
        GpuLine {
            gpu,
            workers: 0,
            frames: 0,
            fps: 0.0,
            vram_peak: 0,
            device_peak: None,
            failed: None,
            stand_in_for: rave_core::gpu::stand_in::active()
                .map(|_| rave_core::gpu::stand_in::driver_ordinal(gpu)),
        }
    }

    /// Per GPU, what its workers did: frames added up, fps over the busiest worker's time,
    /// RAVE's peaks added up (they ran at once), the device's the most one saw.
    pub fn per_gpu(shares: &[WorkerShare]) -> Vec<GpuLine> {
        let mut lines: Vec<(GpuLine, f64)> = Vec::new();
        for &(gpu, frames, busy, vram_peak, device_peak) in shares {
            let at = match lines.iter().position(|(l, _)| l.gpu == gpu) {
                Some(at) => at,
                None => {
                    lines.push((GpuLine::idle(gpu), 0.0));
                    lines.len() - 1
                }
            };
            let (line, longest) = &mut lines[at];
            line.workers += 1;
            line.frames += frames;
            line.vram_peak += vram_peak;
            line.device_peak = line.device_peak.max(device_peak);
            *longest = longest.max(busy);
        }
        let mut lines: Vec<GpuLine> = lines
            .into_iter()
            .map(|(line, longest)| GpuLine {
                fps: ratio(line.frames as f64, longest),
                ..line
            })
            .collect();
        lines.sort_by_key(|l| l.gpu);
        lines
    }
}

/// One timed step of a run's start-up.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StartupStep {
    /// What the step did (`probe`, `index`, `resume`, `load_model`, `first_frame`).
    pub name: String,
    /// How long it took.
    pub seconds: f64,
    /// Seconds from the run's start to the step's end.
    pub at_s: f64,
}

/// How a job was segmented and run.
#[derive(Debug, Clone, Serialize)]
pub struct SegmentsReport {
    /// Segments in the job.
    pub total: usize,
    /// Segments processed by this run.
    pub processed: usize,
    /// Segments reused from an earlier, interrupted run.
    pub reused: usize,
    /// Segments processed at once.
    pub jobs: usize,
    /// Target segment length in frames.
    pub segment_frames: u64,
    /// Why the video is one segment, when it is for a reason other than its length.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub single_reason: Option<String>,
    /// The work folder (`None` for a null sink); kept after a partial or failed run, or
    /// with `--keep-work`.
    pub work: Option<PathBuf>,
    /// Whether the work folder is still there.
    pub work_kept: bool,
    /// Segments that failed on a GPU and were upscaled on another (several GPUs).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub retried: Vec<SegmentRetry>,
}

/// A segment whose GPU failed under it, upscaled again on another.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SegmentRetry {
    /// The segment's index in the job.
    pub segment: usize,
    /// The GPU it failed on.
    pub failed_on: usize,
    /// What failed there.
    pub error: String,
    /// The GPU that upscaled it.
    pub upscaled_on: usize,
}

/// What the GPU path did: backend metrics, how frames entered and left the GPU, VRAM and pool.
#[derive(Debug, Clone, Serialize)]
pub struct GpuRunReport {
    /// Provider, binding mode, inference and ring metrics, audit counters.
    pub backend: GpuBackendReport,
    /// Which decoder ran and how frames reached the GPU.
    pub decoder: String,
    /// Which encoder ran and how frames left the GPU.
    pub encoder: String,
    /// Host copies of frame data, counted where they are made.
    pub host_copies: HostCopyReport,
    /// VRAM current/peak, pool counters and hit rate, queue depths.
    pub health: HealthSnapshot,
}

/// `a / b`, or 0 when `b` is not positive (rates over empty or instant runs).
pub(crate) fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 { a / b } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_gpu_gets_one_line_of_its_workers() {
        let shares = [
            (1, 100, 10.0, 2 << 20, Some(3 << 20)),
            (0, 150, 10.0, 1 << 20, Some(2 << 20)),
            (1, 60, 12.0, 2 << 20, Some(5 << 20)),
        ];
        let lines = GpuLine::per_gpu(&shares);
        assert_eq!(lines.len(), 2);
        assert_eq!(
            (lines[0].gpu, lines[0].workers, lines[0].frames),
            (0, 1, 150)
        );
        assert_eq!(
            (lines[1].gpu, lines[1].workers, lines[1].frames),
            (1, 2, 160)
        );
        assert!(
            (lines[1].fps - 160.0 / 12.0).abs() < 1e-9,
            "the busiest worker's time"
        );
        assert_eq!(lines[1].vram_peak, 4 << 20, "two contexts at once");
        assert_eq!(
            lines[1].device_peak,
            Some(5 << 20),
            "the device's, the most seen"
        );
        assert!(GpuLine::per_gpu(&[]).is_empty());
    }
}
