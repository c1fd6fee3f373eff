//! `run_upscale`: check everything that can be checked up front, then run the five stages
//! on their own threads and settle the output file by how the run ended. The middle three
//! stages run on the CPU (host frames) or on the GPU (device frames), as the backend choice
//! decided; decode and encode are shared.

use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender, bounded};
use rave_core::backend::UpscaleBackend;
use rave_core::codec::FrameSource;
use rave_core::color::ColorInfo;
use rave_core::error::{EngineError, Result};
use rave_core::frame::HostYuvFrame;
use rave_ffmpeg::{Container, MediaWriter, VideoReader, probe};

use crate::backend_choice::{ChosenBackend, Engine, GpuPath, choose_backend};
use crate::cancel::{CancelToken, StopReason};
use crate::config::UpscaleConfig;
use crate::gpu_convert::{GpuConverter, HostCopies};
use crate::gpu_stages;
use crate::output_file::OutputTarget;
use crate::progress::ProgressSink;
use crate::report::{GpuRunReport, ModelReport, RunReport, RunStatus, ratio};
use crate::stages::{self, DecodePolicy, FirstError, PipelineMetrics, guarded};
use rave_core::block_on::block_on;

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
    let (w, h) = info.frame_size()?;
    // Damage the file shows up front (a truncated file, a CRC mismatch, headers FFmpeg could
    // not parse) is refused before the model loads or any output exists.
    let mut reader = VideoReader::open(&config.input)?;
    if !config.allow_corrupt && reader.damage_seen() {
        return Err(stages::refuse_damaged(&mut reader, cancel));
    }
    // What the input cannot give the output, said at once and kept for the report.
    let mut input_warnings = Vec::new();
    let mut warn = |warning: String| {
        progress.warning(&warning);
        input_warnings.push(warning);
    };
    if !rave_ffmpeg::structure_check::is_checked(&info.container) {
        warn(format!(
            "the input's container ({}) has no structure or length RAVE can check: damage in it is found only where FFmpeg's demuxer or decoder reports it",
            info.container
        ));
    }
    let target = match config.null_output {
        true => None,
        false => Some(OutputTarget::prepare(
            &config.output,
            &config.input,
            config.overwrite,
        )?),
    };
    let discard = || {
        if let Some(t) = &target {
            t.discard();
        }
    };
    let caps = config.channels;
    // Frames the stages after inference may hold: the channel, plus one being converted.
    let downstream = caps.inferred.max(1) + 1;
    let ChosenBackend {
        mut engine,
        metadata: meta,
        model,
        report: backend_report,
        warning,
    } = choose_backend(config, (w, h), downstream)?;
    if let Some(message) = &warning {
        progress.warning(message);
    }
    if !meta.accepts(w, h) {
        return Err(EngineError::ModelMetadata(format!(
            "{}: model {} takes fixed {}x{} inputs, the video is {w}x{h}",
            model.display(),
            meta.name,
            meta.min_input_hw.1,
            meta.min_input_hw.0
        )));
    }
    if let Engine::Cpu(backend) = &engine
        && let Some(i) = backend.interrupter()
    {
        cancel.on_cancel(i);
    }
    let (out_w, out_h) = (w * meta.scale, h * meta.scale);
    // NVDEC decodes into RAVE's context; decoded surfaces may wait in the decode and
    // preprocess channels, plus one in each stage.
    let nvdec = match &engine {
        Engine::Gpu(gpu) if config.gpu.nvdec => Some(gpu_stages::nvdec_device(&gpu.ctx)?),
        _ => None,
    };
    let held = (caps.decoded + caps.preprocessed + 2) as i32;
    if let Some(device) = &nvdec {
        reader = reader.reopen_on(Some((device, held)))?;
    }
    let (packet_tx, packet_rx) = std::sync::mpsc::channel();
    let mut writer = match &target {
        Some(target) => {
            reader.set_copy_sink(packet_tx);
            Some(
                MediaWriter::create(
                    target.temp_path(),
                    &config.output,
                    container,
                    &reader,
                    &config.encoder,
                    out_w,
                    out_h,
                )
                .inspect_err(|_| target.discard())?,
            )
        }
        None => None,
    };
    for warning in writer.iter().flat_map(|w| &w.summary().warnings) {
        progress.warning(warning);
    }

    let color = reader.color();
    let (post_tx, post_rx) = bounded(caps.inferred.max(1));
    let metrics = Arc::new(PipelineMetrics::default());
    let errors = FirstError::default();
    let copies = Arc::new(HostCopies::default());
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
    let stages_started = Instant::now();
    std::thread::scope(|s| {
        let (errs, reader) = (&errors, &mut reader);
        let middle = Middle {
            reader,
            policy,
            decoded: caps.decoded.max(1),
            post_tx,
            shared: Shared {
                color: &color,
                capacity: caps.preprocessed.max(1),
                errors: errs,
                cancel,
                metrics: m,
            },
        };
        match &mut engine {
            Engine::Cpu(backend) => middle.spawn_cpu(s, backend.as_mut()),
            Engine::Gpu(gpu) => middle.spawn_gpu(s, gpu, &copies, caps.inferred.max(1)),
        }
        guarded(&errors, cancel, || {
            finalized = match writer.as_mut() {
                Some(w) => stages::encode(
                    w,
                    post_rx,
                    stages::CopiedStreams::new(packet_rx, config.allow_corrupt),
                    progress,
                    frames_total,
                    cancel,
                    &m.encode,
                )?,
                None => stages::null_sink(post_rx, progress, frames_total, cancel, &m.encode),
            };
            Ok(())
        });
    });
    progress.finished();
    let pipeline_s = stages_started.elapsed().as_secs_f64();
    let gpu_report = match &engine {
        Engine::Gpu(gpu) => {
            block_on(gpu.backend.shutdown()).ok();
            Some(GpuRunReport {
                backend: gpu.backend.report(),
                decoder: gpu_stages::describe_decoder(reader.stats(), config.gpu.nvdec),
                encoder: match config.null_output {
                    true => "none (null sink)".into(),
                    false => gpu_stages::describe_encoder(config.encoder.codec),
                },
                host_copies: copies.report(metrics.encode.frames()),
                health: gpu.ctx.health(),
            })
        }
        Engine::Cpu(_) => None,
    };

    // Stopped by the user before any frame reached the encoder: keep nothing (errors after
    // the stop are its consequences).
    if cancel.reason() == Some(StopReason::User) && metrics.encode.frames() == 0 {
        discard();
        return Err(EngineError::CancelledBeforeOutput);
    }
    if let Some(err) = errors.take() {
        discard();
        return Err(match err {
            // Damaged copied data the muxer refused: report the whole file's damage.
            EngineError::PacketRefused(why) => {
                reader.count_refused(1, Some(why));
                stages::refuse_damaged(&mut reader, cancel)
            }
            other => other,
        });
    }
    let status = match cancel.reason() {
        Some(StopReason::User) if finalized => RunStatus::Partial,
        Some(_) => {
            discard();
            return Err(EngineError::Cancelled);
        }
        None => RunStatus::Complete,
    };
    if let Some(w) = &writer {
        let mux = w.summary();
        reader.count_refused(mux.refused_packets, mux.first_refusal.clone());
    }
    let damage = reader.damage();
    if status == RunStatus::Complete
        && let Some(err) = stages::damage_refusal(&config.input, &damage, config.allow_corrupt)
    {
        discard();
        return Err(err);
    }
    let output = match (&target, status) {
        (Some(t), RunStatus::Complete) => t.commit()?,
        (Some(t), RunStatus::Partial) => t.keep_partial()?,
        (None, _) => std::path::PathBuf::from("(null sink)"),
    };
    let elapsed = started.elapsed().as_secs_f64();
    let mut mux = writer
        .as_ref()
        .map(|w| w.summary().clone())
        .unwrap_or_default();
    // Interlaced frames in a stream that does not declare its field order.
    if reader.saw_interlaced() && !mux.warnings.iter().any(|w| w.contains("interlaced")) {
        warn(rave_ffmpeg::carried_metadata::interlace_warning(
            "seen in its frames",
        ));
    }
    if let Some(at) = reader.stats().timestamp_resets.first() {
        warn(format!(
            "the input's timestamps restart {} time(s), first at {at:.3} s (a joined or spliced stream); the timeline was continued across them, every frame and packet kept",
            reader.stats().timestamp_resets.len()
        ));
    }
    mux.warnings.extend(input_warnings);
    let frames_out = match &writer {
        Some(_) => mux.frames_encoded,
        None => metrics.encode.frames(),
    };
    Ok(RunReport {
        status,
        input: config.input.clone(),
        output,
        model: ModelReport {
            metadata: meta,
            path: model,
        },
        backend: backend_report,
        encoder: config.encoder.clone(),
        input_size: [w, h],
        output_size: [out_w, out_h],
        frames_in: reader.stats().frames,
        frames_out,
        elapsed_s: elapsed,
        fps: ratio(frames_out as f64, elapsed),
        pipeline_s,
        pipeline_fps: ratio(frames_out as f64, pipeline_s),
        stages: metrics.snapshots(),
        decode: reader.stats().clone(),
        input_damage: damage,
        mux,
        gpu: gpu_report,
    })
}

/// What every stage thread borrows.
#[derive(Clone, Copy)]
struct Shared<'a> {
    color: &'a ColorInfo,
    capacity: usize,
    errors: &'a FirstError,
    cancel: &'a CancelToken,
    metrics: &'a PipelineMetrics,
}

/// The decode thread and the channels of the three middle stages.
struct Middle<'a> {
    reader: &'a mut VideoReader,
    policy: DecodePolicy,
    decoded: usize,
    post_tx: Sender<HostYuvFrame>,
    shared: Shared<'a>,
}

impl<'a> Middle<'a> {
    /// Start the decode thread, pulling frames with `pull`; returns its output channel, the
    /// channel to the encoder and what the other stages borrow.
    fn start<'s, T: Send + 's>(
        self,
        s: &'s std::thread::Scope<'s, '_>,
        pull: impl FnMut(&mut VideoReader) -> Result<Option<T>> + Send + 's,
    ) -> (Receiver<T>, Sender<HostYuvFrame>, Shared<'a>)
    where
        'a: 's,
    {
        let (tx, rx) = bounded(self.decoded);
        let (reader, policy, sh) = (self.reader, self.policy, self.shared);
        s.spawn(move || {
            guarded(sh.errors, sh.cancel, || {
                stages::decode(reader, tx, policy, sh.cancel, &sh.metrics.decode, pull)
            })
        });
        (rx, self.post_tx, sh)
    }

    /// Preprocess, infer and postprocess on the CPU.
    fn spawn_cpu<'s>(
        self,
        s: &'s std::thread::Scope<'s, '_>,
        backend: &'s mut dyn rave_core::backend::HostUpscaleBackend,
    ) where
        'a: 's,
    {
        let (dec_rx, post_tx, sh) = self.start(s, |r| r.next_frame());
        let (pre_tx, pre_rx) = bounded(sh.capacity);
        let (inf_tx, inf_rx) = bounded(sh.capacity);
        let m = sh.metrics;
        s.spawn(move || {
            guarded(sh.errors, sh.cancel, || {
                stages::convert(dec_rx, pre_tx, sh.cancel, &m.preprocess, |f| {
                    Ok(stages::to_rgb(f, sh.color))
                })
            })
        });
        s.spawn(move || {
            guarded(sh.errors, sh.cancel, || {
                stages::infer(backend, pre_rx, inf_tx, sh.cancel, &m.infer)
            })
        });
        s.spawn(move || {
            guarded(sh.errors, sh.cancel, || {
                stages::convert(inf_rx, post_tx, sh.cancel, &m.postprocess, |f| {
                    Ok(stages::to_yuv(f, sh.color))
                })
            })
        });
    }

    /// Upload + preprocess kernel, GPU inference, postprocess kernel + download.
    fn spawn_gpu<'s>(
        self,
        s: &'s std::thread::Scope<'s, '_>,
        gpu: &'s GpuPath,
        copies: &'s Arc<HostCopies>,
        inferred: usize,
    ) where
        'a: 's,
    {
        let ctx = gpu.ctx.clone();
        let (dec_rx, post_tx, sh) = self.start(s, move |r| gpu_stages::next_decoded(r, &ctx));
        let (color, capacity, errors, cancel, m) =
            (sh.color, sh.capacity, sh.errors, sh.cancel, sh.metrics);
        let tensor = match gpu.backend.metadata() {
            Ok(meta) => meta.tensor_format,
            Err(e) => return errors.record(e, cancel),
        };
        let converter = match GpuConverter::new(gpu.ctx.clone(), *color, tensor, copies.clone()) {
            Ok(c) => Arc::new(c),
            Err(e) => return errors.record(e, cancel),
        };
        let (pre_tx, pre_rx) = bounded(capacity);
        let (inf_tx, inf_rx) = bounded(inferred);
        let up = converter.clone();
        s.spawn(move || {
            guarded(errors, cancel, || {
                stages::convert(dec_rx, pre_tx, cancel, &m.preprocess, |f| up.ingest(f))
            })
        });
        let batch = gpu.backend.batch_config();
        s.spawn(move || {
            guarded(errors, cancel, || {
                gpu_stages::infer(&gpu.backend, batch, pre_rx, inf_tx, cancel, &m.infer)
            })
        });
        let depth = color.bit_depth;
        s.spawn(move || {
            guarded(errors, cancel, || {
                stages::convert(inf_rx, post_tx, cancel, &m.postprocess, |f| {
                    converter.download(f, depth)
                })
            })
        });
    }
}
