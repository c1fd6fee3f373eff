//! A segment worker: loads the model once (ONNX Runtime session, GPU context, kernels) and
//! runs one set of the five stages over the segments it is given, each into its own file.

use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, OnceLock};

use rave_core::error::{EngineError, Result};
use rave_ffmpeg::cuda_surfaces::CudaSurfacePool;
use rave_ffmpeg::encoder_choice::{EncoderPick, EncoderRequest, choose_encoder};
use rave_ffmpeg::hw_caps::nvenc_session_on;
use rave_ffmpeg::nvdec::CudaDevice;
use rave_ffmpeg::nvenc_settings::NvencConfig;
use rave_ffmpeg::structure_check::StructureProblem;
use rave_ffmpeg::video_decoder::DecoderThreads;
use rave_ffmpeg::writer::NvencOutput;
use rave_ffmpeg::{Container, FrameBounds, MediaWriter, VideoReader};

use super::nvenc_everywhere;
use super::plan::PlannedSegment;
use crate::backend_choice::{ChosenBackend, Engine, choose_backend};
use crate::cancel::CancelToken;
use crate::config::UpscaleConfig;
use crate::gpu_convert::HostCopies;
use crate::gpu_stages;
use crate::injected_failure::FailAfter;
use crate::progress::ProgressSink;
use crate::stage_run::{OpenSegment, Settle, StageRun, run_stages};
use crate::stages::{DecodePolicy, PipelineMetrics};

/// Where a segment worker runs and how it shares its GPU with the others that load one at
/// a time.
#[derive(Debug, Clone, Copy)]
pub struct LoadTurn {
    /// The GPU.
    pub gpu: usize,
    /// Workers on that GPU (each gets this share of `--vram-limit`).
    pub sharing: usize,
    /// Of them, those still to load, this one included (its share of the free memory).
    pub to_start: usize,
}

/// What every segment of a job shares.
pub struct JobSpec {
    /// The run's configuration.
    pub config: UpscaleConfig,
    /// The output container (segments are encoded as it needs).
    pub container: Container,
    /// Input frame size.
    pub in_size: (u32, u32),
    /// Bits per sample of the input (8 or 10).
    pub bit_depth: u8,
    /// The verdict of the input's structure check (not repeated per segment).
    pub structure: Option<StructureProblem>,
    /// With `--encoder auto` on several GPUs: whether an NVENC session opens on every GPU
    /// of the job, decided by the first worker to ask, so that every worker encodes alike.
    pub nvenc_everywhere: OnceLock<std::result::Result<(), String>>,
    /// The input starts mid-GOP and has a keyframe later (the plan's read saw both): a
    /// segment read from the start of the file skips the video packets before that
    /// keyframe instead of decoding them (a decoder fed them complains about pictures
    /// after it that are whole).
    pub skip_before_keyframe: bool,
    /// The plan's read found damage (kept with --allow-corrupt): the decoder conceals it
    /// the same way on every run (`DecoderThreads::same_every_run`).
    pub damaged: bool,
}

/// What the workers of one run share.
pub struct RunShared<'a> {
    /// Job progress.
    pub progress: &'a dyn ProgressSink,
    /// The job's cancellation.
    pub cancel: &'a CancelToken,
    /// Stage counters of the whole job.
    pub metrics: &'a PipelineMetrics,
    /// Host copies of the GPU path.
    pub copies: &'a Arc<HostCopies>,
}

/// A loaded model and what feeds it.
pub struct Worker {
    engine: Engine,
    nvdec: Option<CudaDevice>,
    /// NVENC, where `--encoder auto|nvenc` got a session for the output (None: software).
    nvenc: Option<NvencPath>,
    /// Why the software encoder runs where NVENC was asked for by `auto`, for the report.
    pub software_reason: Option<String>,
    /// The model's scale.
    pub scale: u32,
    /// What `choose_backend` chose (for the report).
    pub info: BackendInfo,
    /// The GPU it was given (where the GPU runs the model).
    gpu_index: usize,
    /// Frames its inference has run, for a failure injected after some (`RAVE_INJECT_FAILURE`).
    injected_frames: AtomicU64,
}

/// What was chosen to run the model, for the report.
pub struct BackendInfo {
    /// The model's description.
    pub metadata: rave_core::backend::ModelMetadata,
    /// The model file that runs.
    pub model: std::path::PathBuf,
    /// Report entry.
    pub report: crate::report::BackendReport,
    /// Something the user should be told.
    pub warning: Option<String>,
    /// Whether frames are cut into tiles, and why.
    pub tiling: crate::tiling_choice::TilingReport,
}

impl Worker {
    /// Load the model for frames of `job.in_size`; `cancel` interrupts an inference in flight.
    pub fn start(job: &JobSpec, cancel: &CancelToken) -> Result<Self> {
        let turn = LoadTurn {
            gpu: job.config.gpu.device_id,
            sharing: 1,
            to_start: 1,
        };
        Self::start_in_turn(job, cancel, turn)
    }

    /// [`Worker::start`] for one of several workers loading one at a time, on `turn.gpu`.
    pub fn start_in_turn(job: &JobSpec, cancel: &CancelToken, turn: LoadTurn) -> Result<Self> {
        let mut config = job.config.clone();
        config.gpu.device_id = turn.gpu;
        config.gpu.workers_sharing = turn.sharing;
        config.gpu.workers_to_start = turn.to_start;
        let config = &config;
        let (w, h) = job.in_size;
        let downstream = config.channels.inferred.max(1) + 1;
        if config.device != crate::config::Device::Cpu {
            // NVRTC compiles the colour kernels while the backend is chosen and built.
            rave_cuda::gpu_kernels::ColorKernels::compile_in_background();
        }
        let ChosenBackend {
            engine,
            metadata,
            model,
            report,
            warning,
            tiling,
        } = choose_backend(config, (w, h), downstream)?;
        let meta = &metadata;
        if !engine.model()?.accepts(w, h) {
            return Err(EngineError::ModelMetadata(format!(
                "{}: model {} takes fixed {}x{} inputs, the video is {w}x{h}; --tile auto tiles it",
                model.display(),
                meta.name,
                meta.min_input_hw.1,
                meta.min_input_hw.0
            )));
        }
        let scale = meta.scale;
        if let Some(i) = engine.interrupter() {
            cancel.on_cancel(i);
        }
        let nvdec = match &engine {
            Engine::Gpu(gpu) if config.gpu.nvdec => Some(gpu_stages::nvdec_device(&gpu.ctx)?),
            _ => None,
        };
        let surfaces = (config.channels.inferred + 4) as u32;
        let (nvenc, software_reason) = choose_nvenc(
            job,
            config.gpu.device_id,
            &engine,
            (w * scale, h * scale),
            surfaces,
        )?;
        Ok(Self {
            engine,
            nvdec,
            nvenc,
            software_reason,
            scale,
            info: BackendInfo {
                metadata,
                model,
                report,
                warning,
                tiling,
            },
            gpu_index: config.gpu.device_id,
            injected_frames: AtomicU64::new(0),
        })
    }

    /// The NVENC encoder in use, if any (its FFmpeg name).
    pub fn nvenc_encoder(&self) -> Option<&'static str> {
        self.nvenc.as_ref().map(|n| n.config.encoder)
    }

    /// The engine (for the GPU report).
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The GPU that runs the model (`None`: the CPU does).
    pub fn on_gpu(&self) -> Option<usize> {
        match &self.engine {
            Engine::Gpu(_) => Some(self.gpu_index),
            Engine::Cpu(_) => None,
        }
    }

    /// Upscale the segments `next` hands out (each with its file, `None`: a null sink) one
    /// after another through one set of stages; `settle` gets each one's outcome once its
    /// file is finalized. Only a segment's frames are decoded past its keyframe.
    pub fn run_segments(
        &mut self,
        job: &JobSpec,
        next: &mut (dyn FnMut() -> Result<Option<(PlannedSegment, Option<PathBuf>)>> + Send),
        settle: &Settle<'_>,
        shared: &RunShared<'_>,
    ) -> Result<()> {
        let config = &job.config;
        let caps = config.channels;
        // Decoded surfaces may wait in the reader (to be placed), the decode and preprocess
        // channels, plus one in each stage.
        let held = (VideoReader::FRAMES_HELD + caps.decoded + caps.preprocessed + 2) as i32;
        let nvdec = self.nvdec.as_ref().map(|d| (d, held));
        let scale = self.scale;
        let nvenc = self.nvenc.as_ref().map(|n| NvencOutput {
            config: &n.config,
            surfaces: &n.surfaces,
        });
        let mut open = || -> Result<Option<OpenSegment>> {
            let Some((seg, out)) = next()? else {
                return Ok(None);
            };
            open_segment(job, &seg, out, nvdec, scale, nvenc).map(Some)
        };
        let surfaces = self.nvenc.as_ref().map(|n| n.surfaces.clone());
        let fail_after = config
            .inject_failure
            .and_then(|f| f.for_worker(self.on_gpu()))
            .map(|frames| FailAfter {
                frames,
                done: &self.injected_frames,
            });
        let Some(first) = open()? else {
            return Ok(());
        };
        run_stages(
            &self.engine,
            surfaces,
            StageRun {
                first,
                next: &mut open,
                settle,
                caps,
                progress: shared.progress,
                frames_total: None,
                cancel: shared.cancel,
                metrics: shared.metrics,
                copies: shared.copies,
                fail_after,
            },
        )
    }

    /// Shut the GPU backend down (its report stays readable).
    pub fn shutdown(&self) {
        if let Engine::Gpu(gpu) = &self.engine {
            gpu.backend.close().ok();
        }
    }
}

/// Open segment `seg`'s reader and, for a file `out`, its encoder and muxer.
fn open_segment(
    job: &JobSpec,
    seg: &PlannedSegment,
    out: Option<PathBuf>,
    nvdec: Option<(&CudaDevice, i32)>,
    scale: u32,
    nvenc: Option<NvencOutput<'_>>,
) -> Result<OpenSegment> {
    let config = &job.config;
    let bounds = FrameBounds {
        seek_to: seg.seek_pts,
        start: seg.start_pts,
        end: seg.end_pts,
        first_index: seg.first_frame,
        skip_before_keyframe: job.skip_before_keyframe && seg.seek_pts.is_none(),
    };
    let reader = VideoReader::open_within(
        &config.input,
        nvdec,
        bounds,
        job.structure.clone(),
        DecoderThreads {
            count: config.decoder_threads.unwrap_or(0),
            // Damage the plan's read found, or any the decoder may meet that the run keeps.
            same_every_run: job.damaged || config.allow_corrupt,
        },
    )?;
    let (w, h) = job.in_size;
    let sink = match out {
        Some(path) => {
            let mut writer = MediaWriter::create_segment(
                &path,
                &config.output,
                job.container,
                &reader,
                &config.encoder,
                w * scale,
                h * scale,
                nvenc,
            )?;
            // Write errors name the segment's file in the work folder (by its final name),
            // not the output.
            writer.name_write_errors(
                &path.with_file_name(super::work_folder::WorkFolder::segment_name(seg.index)),
            );
            Some((path, writer))
        }
        None => None,
    };
    Ok(OpenSegment {
        index: seg.index,
        frames: seg.frames,
        reader,
        sink,
        policy: DecodePolicy {
            allow_corrupt: config.allow_corrupt,
            max_frames: seg.end_pts.is_none().then_some(config.max_frames).flatten(),
        },
    })
}

/// NVENC for a worker: its configuration, the pool of CUDA surfaces on RAVE's context the
/// postprocess kernel writes, and the FFmpeg CUDA device they were made on (its stream the
/// encode stream: the kernel and NVENC's reads are ordered by it).
struct NvencPath {
    config: NvencConfig,
    surfaces: Arc<CudaSurfacePool>,
    _device: CudaDevice,
}

/// Keyframes every this many frames with NVENC (each an IDR, so segments join).
const NVENC_GOP: u32 = 250;

/// Whether the run encodes with NVENC (`--encoder auto|nvenc`): a session must open for the
/// codec at `out_size` and the output's bits, and the frames must be on the GPU; with `auto`
/// otherwise the software encoder and why, with `nvenc` otherwise an error (exit 6). With
/// `auto` on several GPUs, NVENC only where every GPU of the job (`own` is the worker's)
/// opens a session, so that every segment comes from one encoder.
fn choose_nvenc(
    job: &JobSpec,
    own: usize,
    engine: &Engine,
    out_size: (u32, u32),
    surfaces: u32,
) -> Result<(Option<NvencPath>, Option<String>)> {
    let config = &job.config;
    let settings = &config.encoder;
    if settings.request == EncoderRequest::Software || config.null_output {
        return Ok((None, None));
    }
    let gpu = match engine {
        Engine::Gpu(gpu) => Some(gpu),
        Engine::Cpu(_) => None,
    };
    let nvenc = match NvencConfig::new(
        settings.codec,
        Some(settings.crf),
        Some(&settings.preset),
        job.bit_depth,
        NVENC_GOP,
    ) {
        Ok(c) => c,
        // `auto` with settings NVENC cannot map: the software encoder, saying why.
        Err(e) if settings.request == EncoderRequest::Auto => {
            return Ok((None, Some(format!("not NVENC: {e}"))));
        }
        Err(e) => return Err(e),
    };
    // The probe opens its session on the device the surfaces would come from: RAVE's
    // context on the run's GPU (no context of FFmpeg's own, on whichever GPU is first).
    let device = match gpu {
        Some(gpu) => Some(gpu_stages::nvenc_device(&gpu.ctx)?),
        None => None,
    };
    let several_gpus = settings.request == EncoderRequest::Auto && config.gpu.gpus.len() > 1;
    if several_gpus && gpu.is_none() {
        // Frames on the CPU (the model fell back there) are encoded in software: the
        // other workers must be too, or this one cannot join them.
        let decided = job
            .nvenc_everywhere
            .get_or_init(|| Err(format!("GPU {own} runs the model on the CPU")));
        if decided.is_ok() {
            return Err(EngineError::NoGpu(format!(
                "GPU {own} runs the model on the CPU, so its frames cannot go to NVENC, and the other GPUs of --gpus encode with NVENC: the segments of one job must come from one encoder; drop GPU {own} from --gpus or use --encoder x264, x265 or svtav1"
            )));
        }
    }
    let pick = choose_encoder(
        settings.request,
        settings.codec,
        Some(out_size),
        nvenc.output_bits,
        gpu.is_some(),
        |ask| match several_gpus {
            true => job
                .nvenc_everywhere
                .get_or_init(|| {
                    nvenc_everywhere::open_on_every_gpu(
                        own,
                        &config.gpu.gpus,
                        || nvenc_session_on(ask, device.as_ref()),
                        |other| gpu_stages::nvenc_session_on_gpu(ask, other, Err),
                    )
                })
                .clone(),
            false => nvenc_session_on(ask, device.as_ref()),
        },
    );
    match (pick, device) {
        (Err(refusal), _) => Err(EngineError::NoGpu(refusal)),
        (Ok(EncoderPick::Software { reason }), _) => Ok((None, Some(reason))),
        (Ok(EncoderPick::Nvenc { .. }), Some(device)) => {
            let pool = CudaSurfacePool::new(&device, nvenc.surface, out_size, surfaces)?;
            Ok((
                Some(NvencPath {
                    config: nvenc,
                    surfaces: Arc::new(pool),
                    _device: device,
                }),
                None,
            ))
        }
        (Ok(EncoderPick::Nvenc { .. }), None) => Err(EngineError::InvariantViolation(
            "NVENC chosen for frames on the CPU".into(),
        )),
    }
}
