//! Typed configuration of one upscale run; the CLI fills it from flags and environment.

use std::path::PathBuf;

use rave_core::batch::Batching;
use rave_ffmpeg::EncoderSettings;
use rave_tensorrt::RuntimeCandidate;

use crate::tiling_choice::TileRequest;
use rave_tensorrt::ep_options::Precision;
use rave_tensorrt::ep_policy::EpPolicy;
use rave_tensorrt::provider_paths::SearchInputs;

/// Where inference runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Device {
    /// The GPU when RAVE can use one, else the CPU (the report says why).
    Auto,
    /// Always the CPU.
    Cpu,
    /// The GPU or an error.
    Gpu,
}

/// Which precision the GPU path runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrecisionChoice {
    /// FP16 where available: the model's `-fp16` sibling on the CUDA provider, FP16 kernels
    /// on TensorRT.
    Auto,
    /// Float32 throughout.
    Fp32,
    /// Half precision (the `-fp16` sibling model when the given one is float32).
    Fp16,
    /// TensorRT INT8 with this calibration table (TensorRT only).
    Int8(PathBuf),
}

impl PrecisionChoice {
    /// TensorRT's kernel precision for this choice.
    pub fn trt(&self) -> Precision {
        match self {
            PrecisionChoice::Fp32 => Precision::Fp32,
            PrecisionChoice::Auto | PrecisionChoice::Fp16 => Precision::Fp16,
            PrecisionChoice::Int8(table) => Precision::Int8 {
                calibration_table: table.clone(),
            },
        }
    }

    /// Whether a half-precision model variant should be preferred.
    pub fn wants_fp16_model(&self) -> bool {
        !matches!(self, PrecisionChoice::Fp32)
    }
}

/// Options of the GPU path.
#[derive(Debug, Clone)]
pub struct GpuOptions {
    /// CUDA device ordinal (the first of `gpus`; a segment worker's own GPU).
    pub device_id: usize,
    /// The GPUs the run's segment workers are spread over (`--gpus`; `[device_id]`
    /// unless it lists several).
    pub gpus: Vec<usize>,
    /// Whether RAVE's native engine may (or must) run the model instead of ONNX Runtime.
    pub native: NativeChoice,
    /// Execution-provider policy (`--backend` / `RAVE_ORT_TENSORRT`).
    pub policy: EpPolicy,
    /// What asked for one provider (e.g. `--backend cuda`, `RAVE_ORT_TENSORRT=trt`), when
    /// one was: then the GPU is required, and `--device auto` does not fall back to the CPU.
    pub provider_requested_by: Option<String>,
    /// The GPU-only options the user gave explicitly (by flag), warned about when
    /// `--device auto` runs the model on the CPU.
    pub given: Vec<String>,
    /// The most device memory the run may hold (`--vram-limit`); `None`: the GPU's free
    /// memory when the run starts.
    pub vram_limit: Option<usize>,
    /// Segment workers sharing the GPU at once: each gets this share of `--vram-limit`.
    pub workers_sharing: usize,
    /// Workers still to load their model, this one included (they load one at a time): a
    /// worker's share of the GPU's free memory, where no `--vram-limit` is given, is what is
    /// free when it loads over this.
    pub workers_to_start: usize,
    /// Precision.
    pub precision: PrecisionChoice,
    /// TensorRT engine cache (default: `trt_cache` beside the model).
    pub engine_cache: Option<PathBuf>,
    /// TensorRT builder workspace limit in bytes.
    pub workspace_bytes: Option<usize>,
    /// Micro-batching.
    pub batch: Batching,
    /// Capture and replay CUDA graphs.
    pub cuda_graph: bool,
    /// Decode on NVDEC where it can (else the software decoder).
    pub nvdec: bool,
    /// Where to look for the GPU provider libraries (the runtime's folder is added when the
    /// runtime is loaded).
    pub provider_search: SearchInputs,
}

impl Default for GpuOptions {
    fn default() -> Self {
        Self {
            device_id: 0,
            gpus: vec![0],
            native: NativeChoice::Auto,
            policy: EpPolicy::Auto,
            provider_requested_by: None,
            given: Vec::new(),
            vram_limit: None,
            workers_sharing: 1,
            workers_to_start: 1,
            precision: PrecisionChoice::Auto,
            engine_cache: None,
            workspace_bytes: None,
            batch: Batching::default(),
            cuda_graph: false,
            nvdec: true,
            provider_search: SearchInputs::default(),
        }
    }
}

/// Whether the native engine runs the model (`--backend`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NativeChoice {
    /// Where it takes the model, the GPU and the options (`--backend auto`, the default);
    /// else ONNX Runtime, with the reason in the report.
    Auto,
    /// It must (`--backend native`): where it cannot, the run fails saying why.
    Required,
    /// ONNX Runtime runs the model (`--backend tensorrt|cuda`, or `RAVE_ORT_TENSORRT` set).
    Off,
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

/// How a job is cut into segments, how many run at once, and where they are kept.
#[derive(Debug, Clone, Default)]
pub struct SegmentOptions {
    /// Target segment length in frames (cut at the next keyframe); default about a minute.
    pub segment_frames: Option<u64>,
    /// Segments processed at once, each with its own decoder, model session and encoder;
    /// default: see `default_jobs`.
    pub jobs: Option<usize>,
    /// The work folder (default `.NAME.rave-work` beside the output).
    pub work: Option<PathBuf>,
    /// Keep the work folder after a complete run.
    pub keep_work: bool,
    /// Start over instead of resuming a job planned with other settings.
    pub restart: bool,
    /// A scratch job (a benchmark's pass): never resumed, so its work folder is removed
    /// however the run ends and no advice to resume is given.
    pub scratch: bool,
    /// What resumes the job, where it is not "run the same command again" (an input of a
    /// batch without --skip-existing: its finished outputs would stop the same command).
    pub rerun: Option<String>,
    /// The outputs of a batch's inputs (shared by all of them): an interrupted run's partial
    /// output does not take their names (a user's `clip.partial.mkv` beside `clip.mkv` is an
    /// input too).
    pub batch_outputs: std::sync::Arc<std::collections::HashSet<PathBuf>>,
    /// The `rave upscale` options of the run, recorded in the manifest so `rave segment`
    /// runs the same settings anywhere.
    pub options: Vec<String>,
}

impl SegmentOptions {
    /// What the user runs to resume the job: "run the same command again", or
    /// [`Self::rerun`]; `None` for a scratch job, which nobody resumes.
    pub fn resume_advice(&self) -> Option<&str> {
        (!self.scratch).then(|| {
            self.rerun
                .as_deref()
                .unwrap_or("run the same command again")
        })
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
    /// GPU path options (used when the GPU runs the model).
    pub gpu: GpuOptions,
    /// Replace an existing output.
    pub overwrite: bool,
    /// Keep going when the input has damaged frames (they are counted in the report).
    pub allow_corrupt: bool,
    /// Inference threads (0 = one per core).
    pub threads: usize,
    /// Threads of each software video decoder (`None`: FFmpeg's choice, one per core).
    pub decoder_threads: Option<usize>,
    /// Channel capacities.
    pub channels: ChannelCapacities,
    /// Where to look for the ONNX Runtime library, in order.
    pub runtime_candidates: Vec<RuntimeCandidate>,
    /// Stop after this many frames (None = whole video).
    pub max_frames: Option<u64>,
    /// Replace the encode stage by a sink that drops the frames (benchmarks): no file is
    /// written and no other stream is copied.
    pub null_output: bool,
    /// Segmenting, parallel workers and the work folder.
    pub segments: SegmentOptions,
    /// Whether frames are cut into tiles for the model (`--tile`, `--tile-overlap`).
    pub tiling: TileRequest,
    /// A failure to inject into the workers' inference, for testing (`None` in real runs).
    pub inject_failure: Option<crate::injected_failure::InjectedFailure>,
}

#[cfg(test)]
impl UpscaleConfig {
    /// A CPU run of `input` into `output` with `model`, H.264 at the default settings, for
    /// tests to change what they test.
    pub(crate) fn for_test(input: PathBuf, output: PathBuf, model: PathBuf) -> Self {
        UpscaleConfig {
            input,
            output,
            model,
            encoder: EncoderSettings::new(rave_ffmpeg::VideoCodec::H264, None, None).unwrap(),
            device: Device::Cpu,
            gpu: GpuOptions::default(),
            overwrite: false,
            allow_corrupt: false,
            threads: 0,
            decoder_threads: None,
            channels: ChannelCapacities::default(),
            runtime_candidates: Vec::new(),
            max_frames: None,
            null_output: false,
            segments: SegmentOptions::default(),
            tiling: Default::default(),
            inject_failure: None,
        }
    }
}
