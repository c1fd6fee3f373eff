//! `run_upscale`: check everything that can be checked up front, then run the five stages
//! on their own threads and settle the output file by how the run ended.

use std::sync::Arc;
use std::time::Instant;

use rave_core::backend::HostUpscaleBackend;
use rave_core::error::{EngineError, Result};
use rave_ffmpeg::{Container, MediaWriter, VideoReader, probe};
use rave_tensorrt::{CpuBackend, ModelOptions, OrtRuntime};

use crate::cancel::{CancelToken, StopReason};
use crate::config::{Device, UpscaleConfig};
use crate::output_file::OutputTarget;
use crate::progress::ProgressSink;
use crate::report::{BackendReport, ModelReport, RunReport, RunStatus};
use crate::stages::{self, DecodePolicy, FirstError, PipelineMetrics, guarded};

/// The inference backend chosen for a run, with the reason.
pub struct ChosenBackend {
    /// The backend.
    pub backend: Box<dyn HostUpscaleBackend>,
    /// Report entry.
    pub report: BackendReport,
}

/// Load the model on the backend `device` asks for.
pub fn choose_backend(config: &UpscaleConfig) -> Result<ChosenBackend> {
    let runtime = OrtRuntime::load(&config.runtime_candidates)?;
    let threads = if config.threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        config.threads
    };
    let backend = CpuBackend::new(runtime, &config.model, &ModelOptions { threads })?;
    let reason = match config.device {
        Device::Cpu => "--device cpu".to_string(),
        Device::Auto => {
            "auto: this build of RAVE has no GPU inference path yet, so the CPU runs the model"
                .to_string()
        }
    };
    Ok(ChosenBackend {
        report: BackendReport {
            requested: config.device,
            name: backend.backend_name().into(),
            reason,
            runtime_library: runtime.library().to_path_buf(),
        },
        backend: Box::new(backend),
    })
}

/// Upscale `config.input` into `config.output`. On cancellation the finalized partial file is
/// kept and the report says `partial`; on failure nothing is left behind.
pub fn run_upscale(
    config: &UpscaleConfig,
    progress: &dyn ProgressSink,
    cancel: &CancelToken,
) -> Result<RunReport> {
    let started = Instant::now();
    let container = Container::from_path(&config.output)?;
    let info = probe(&config.input)?;
    let target = OutputTarget::prepare(&config.output, &config.input, config.overwrite)?;
    let ChosenBackend {
        mut backend,
        report: backend_report,
    } = choose_backend(config)?;
    let meta = backend.metadata().clone();
    let (w, h) = (info.video.width, info.video.height);
    if !meta.accepts(w, h) {
        return Err(EngineError::ModelMetadata(format!(
            "{}: model {} takes fixed {}x{} inputs, the video is {w}x{h}",
            config.model.display(),
            meta.name,
            meta.min_input_hw.1,
            meta.min_input_hw.0
        )));
    }
    if let Some(i) = backend.interrupter() {
        cancel.on_cancel(i);
    }
    let (out_w, out_h) = (w * meta.scale, h * meta.scale);
    let mut reader = VideoReader::open(&config.input)?;
    let (packet_tx, packet_rx) = std::sync::mpsc::channel();
    reader.set_copy_sink(packet_tx);
    let mut writer = MediaWriter::create(
        target.temp_path(),
        container,
        &reader,
        &config.encoder,
        out_w,
        out_h,
    )
    .inspect_err(|_| target.discard())?;

    let color = reader.color();
    let caps = config.channels;
    let (dec_tx, dec_rx) = crossbeam_channel::bounded(caps.decoded.max(1));
    let (pre_tx, pre_rx) = crossbeam_channel::bounded(caps.preprocessed.max(1));
    let (inf_tx, inf_rx) = crossbeam_channel::bounded(caps.inferred.max(1));
    let (post_tx, post_rx) = crossbeam_channel::bounded(caps.inferred.max(1));
    let metrics = Arc::new(PipelineMetrics::default());
    let errors = FirstError::default();
    let policy = DecodePolicy {
        allow_corrupt: config.allow_corrupt,
        max_frames: config.max_frames,
    };
    let frames_total = match (info.video.frame_count, config.max_frames) {
        (Some(n), Some(m)) => Some(n.min(m)),
        (n, m) => n.or(m),
    };
    progress.started(frames_total);
    let m = &metrics;
    let mut finalized = false;
    std::thread::scope(|s| {
        let (errs, reader, backend) = (&errors, &mut reader, &mut backend);
        s.spawn(move || {
            guarded(errs, cancel, || {
                stages::decode(reader, dec_tx, policy, cancel, &m.decode)
            })
        });
        s.spawn(move || {
            stages::convert(dec_rx, pre_tx, cancel, &m.preprocess, |f| {
                stages::to_rgb(f, &color)
            })
        });
        s.spawn(move || {
            guarded(errs, cancel, || {
                stages::infer(backend.as_mut(), pre_rx, inf_tx, cancel, &m.infer)
            })
        });
        s.spawn(move || {
            stages::convert(inf_rx, post_tx, cancel, &m.postprocess, |f| {
                stages::to_yuv(f, &color)
            })
        });
        guarded(&errors, cancel, || {
            finalized = stages::encode(
                &mut writer,
                post_rx,
                packet_rx,
                progress,
                frames_total,
                cancel,
                &m.encode,
            )?;
            Ok(())
        });
    });
    progress.finished();

    if let Some(err) = errors.take() {
        target.discard();
        return Err(err);
    }
    let status = match cancel.reason() {
        Some(StopReason::User) if finalized => RunStatus::Partial,
        Some(_) => {
            target.discard();
            return Err(EngineError::Cancelled);
        }
        None => RunStatus::Complete,
    };
    if status == RunStatus::Complete
        && let Some(err) = reader.damage_error(stages::CORRUPT_HINT)
        && !config.allow_corrupt
    {
        target.discard();
        return Err(err);
    }
    let output = match status {
        RunStatus::Complete => target.commit()?,
        RunStatus::Partial => target.keep_partial()?,
    };
    let elapsed = started.elapsed().as_secs_f64();
    let frames_out = writer.summary().frames_encoded;
    Ok(RunReport {
        status,
        input: config.input.clone(),
        output,
        model: ModelReport {
            metadata: meta,
            path: config.model.clone(),
        },
        backend: backend_report,
        encoder: config.encoder.clone(),
        input_size: [w, h],
        output_size: [out_w, out_h],
        frames_in: reader.stats().frames,
        frames_out,
        elapsed_s: elapsed,
        fps: if elapsed > 0.0 {
            frames_out as f64 / elapsed
        } else {
            0.0
        },
        stages: metrics.snapshots(),
        decode: reader.stats().clone(),
        mux: writer.summary().clone(),
    })
}
