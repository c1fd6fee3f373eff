//! Typed configuration of one upscale run; the CLI fills it from flags and environment.

use std::path::PathBuf;

use rave_ffmpeg::EncoderSettings;
use rave_tensorrt::RuntimeCandidate;

/// Where inference runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Device {
    /// The GPU when RAVE can use one, else the CPU.
    Auto,
    /// Always the CPU.
    Cpu,
}

/// Capacities of the bounded channels between stages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ChannelCapacities {
    /// decode -> preprocess.
    pub decoded: usize,
    /// preprocess -> infer.
    pub preprocessed: usize,
    /// infer -> postprocess (and postprocess -> encode).
    pub inferred: usize,
}

impl Default for ChannelCapacities {
    fn default() -> Self {
        Self {
            decoded: 4,
            preprocessed: 2,
            inferred: 4,
        }
    }
}

/// Everything one `rave upscale` needs.
#[derive(Debug, Clone)]
pub struct UpscaleConfig {
    /// The input video.
    pub input: PathBuf,
    /// The output file (.mp4, .mkv or .mov).
    pub output: PathBuf,
    /// The ONNX model file.
    pub model: PathBuf,
    /// Encoder choice and settings.
    pub encoder: EncoderSettings,
    /// Where inference runs.
    pub device: Device,
    /// Replace an existing output.
    pub overwrite: bool,
    /// Keep going when the input has damaged frames (they are counted in the report).
    pub allow_corrupt: bool,
    /// Inference threads (0 = one per core).
    pub threads: usize,
    /// Channel capacities.
    pub channels: ChannelCapacities,
    /// Where to look for the ONNX Runtime library, in order.
    pub runtime_candidates: Vec<RuntimeCandidate>,
    /// Stop after this many frames (None = whole video).
    pub max_frames: Option<u64>,
}
