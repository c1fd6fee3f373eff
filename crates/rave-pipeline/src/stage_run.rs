//! The five stages of a worker on their own threads, over the segments it is given one after
//! another: decode (each segment's frames within its bounds), preprocess, infer, postprocess
//! on the CPU (host frames) or on the GPU (device frames), and encode into each segment's
//! file (or a null sink). The stages run on from one segment into the next; a segment's
//! file is finished beside them (see `segment_sink`).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender, bounded, unbounded};
use rave_core::backend::Upscaler;
use rave_core::codec::FrameSource;
use rave_core::color::ColorInfo;
use rave_core::error::{EngineError, Result};
use rave_core::frame::RgbImage;
use rave_ffmpeg::{MediaWriter, VideoReader};

use crate::backend_choice::{Engine, GpuPath};
use crate::cancel::CancelToken;
use crate::config::ChannelCapacities;
use crate::gpu_convert::{GpuConverter, HostCopies};
use crate::gpu_stages;
use crate::infer_stage;
use crate::injected_failure::{FailAfter, FailingUpscaler};
use crate::progress::ProgressSink;
use crate::segment_sink::{
    Control, EncodeFrame, EncodeReporting, SegmentEnd, SegmentOutcome, encode_segments,
    finish_segments,
};
use crate::stages::{self, DecodePolicy, FirstError, PipelineMetrics, guarded};
use rave_ffmpeg::cuda_surfaces::CudaSurfacePool;

/// A segment opened for the stages.
pub struct OpenSegment {
    /// Its index in the job.
    pub index: usize,
    /// Its frames.
    pub reader: VideoReader,
    /// Its file's path and the open file (`None`: a null sink).
    pub sink: Option<(PathBuf, MediaWriter)>,
    /// What decoding does with damage, and where it stops.
    pub policy: DecodePolicy,
    /// Its planned frames (0: unknown), for opening the next segment in time.
    pub frames: u64,
}

/// Opens a worker's next segment (on the decode thread); `None` when there is none left.
pub type NextSegment<'a> = dyn FnMut() -> Result<Option<OpenSegment>> + Send + 'a;

/// Takes each segment's outcome once its file is finalized (on the finisher thread).
pub type Settle<'a> = dyn Fn(SegmentOutcome) -> Result<()> + Sync + 'a;

/// What one run of the stages reads, writes and reports to.
pub struct StageRun<'a> {
    /// The first segment.
    pub first: OpenSegment,
    /// The ones after it.
    pub next: &'a mut NextSegment<'a>,
    /// Where each segment's outcome goes.
    pub settle: &'a Settle<'a>,
    /// Channel capacities between the stages.
    pub caps: ChannelCapacities,
    /// Progress of the frames written.
    pub progress: &'a dyn ProgressSink,
    /// Frames expected (for the progress of a single run).
    pub frames_total: Option<u64>,
    /// The job's cancellation.
    pub cancel: &'a CancelToken,
    /// The job's stage counters.
    pub metrics: &'a PipelineMetrics,
    /// Host copies of the GPU path.
    pub copies: &'a Arc<HostCopies>,
    /// When inference fails on purpose (a test's injected failure).
    pub fail_after: Option<FailAfter<'a>>,
}

/// Run the stages over `run.first` and the segments `run.next` opens, with `engine`. Every
/// segment opened is settled once; the first error of any stage is the result.
pub fn run_stages(
    engine: &Engine,
    surfaces: Option<Arc<CudaSurfacePool>>,
    run: StageRun<'_>,
) -> Result<()> {
    let StageRun {
        first,
        next,
        settle,
        caps,
        progress,
        frames_total,
        cancel,
        metrics,
        copies,
        fail_after,
    } = run;
    // Every segment is of the same input stream.
    let color = first.reader.color();
    let (post_tx, post_rx) = bounded(caps.inferred.max(1));
    let (control_tx, control_rx) = unbounded();
    // One file may drain while the next is encoded.
    let (finish_tx, finish_rx) = bounded(1);
    let errors = FirstError::default();
    // An error opening a later segment: reported once the segments before it are settled.
    let deferred: Mutex<Option<EngineError>> = Mutex::new(None);
    let retired = RetiredReaders::default();
    std::thread::scope(|s| {
        let middle = Middle {
            segments: Segments {
                first,
                next,
                control: control_tx,
                deferred: &deferred,
                retired: &retired,
            },
            decoded: caps.decoded.max(1),
            post_tx,
            shared: Shared {
                color: &color,
                capacity: caps.preprocessed.max(1),
                errors: &errors,
                cancel,
                metrics,
                fail_after,
            },
        };
        match engine {
            Engine::Cpu(backend) => middle.spawn_cpu(s, backend.as_ref(), caps.inferred.max(1)),
            Engine::Gpu(gpu) => {
                middle.spawn_gpu(s, gpu, copies, caps.inferred.max(1), surfaces.as_ref())
            }
        }
        let errors = &errors;
        s.spawn(move || finish_segments(finish_rx, settle, errors, cancel, &metrics.encode));
        let report = EncodeReporting {
            progress,
            frames_total,
            metrics: &metrics.encode,
        };
        encode_segments(post_rx, control_rx, finish_tx, report, errors, cancel);
    });
    if let Err(e) = rave_core::gpu::timeline::write() {
        tracing::warn!("RAVE_TIMELINE: could not write the timeline: {e}");
    }
    match (
        errors.take(),
        deferred.into_inner().unwrap_or_else(|e| e.into_inner()),
    ) {
        (Some(e), _) | (None, Some(e)) => Err(e),
        (None, None) => Ok(()),
    }
}

/// The segments the decode thread reads, and where it announces them.
struct Segments<'a> {
    first: OpenSegment,
    next: &'a mut NextSegment<'a>,
    control: Sender<Control<MediaWriter>>,
    deferred: &'a Mutex<Option<EngineError>>,
    retired: &'a RetiredReaders,
}

/// Readers whose segment is decoded, dropped only after the stages have ended (the last
/// one) or when the next is retired: closing an NVDEC decoder holds up the other stages'
/// CUDA calls for a few hundred milliseconds, which would otherwise land on the last
/// frames of the run.
#[derive(Default)]
struct RetiredReaders(Mutex<Option<VideoReader>>);

impl RetiredReaders {
    /// Keep `reader` until the run ends (the one kept before is closed now).
    fn keep(&self, reader: VideoReader) {
        let before = self
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .replace(reader);
        drop(before);
    }
}

impl Segments<'_> {
    /// Decode every segment in turn with `pull`, announcing each one's start and end. A
    /// segment that cannot be opened ends the run after the ones before it (left in
    /// `deferred`).
    fn decode<T>(
        self,
        tx: &Sender<T>,
        cancel: &CancelToken,
        metrics: &rave_core::metrics::StageMetrics,
        mut pull: impl FnMut(&mut VideoReader) -> Result<Option<T>> + Send,
    ) -> Result<()> {
        let Self {
            first,
            next,
            control,
            deferred,
            retired,
        } = self;
        let announce = |seg: &mut OpenSegment| {
            let (file, sink) = seg.sink.take().unzip();
            // The encoder holds the receiver until this thread has ended.
            let _ = control.send(Control::Start {
                index: seg.index,
                file,
                sink,
            });
        };
        let end = |seg: &OpenSegment, sent: Option<u64>| {
            let _ = control.send(Control::End(Box::new(SegmentEnd::of(&seg.reader, sent))));
        };
        let mut seg = first;
        loop {
            announce(&mut seg);
            let sent_so_far = AtomicU64::new(0);
            let decoding = AtomicBool::new(true);
            let decoded_whole = AtomicBool::new(false);
            let (decoded, upcoming) = std::thread::scope(|s| {
                // The next segment is opened beside this one's last frames: a reader's seek
                // and decoder start and an encoder's set-up would otherwise stall the stages
                // at every seam.
                let open_from = seg.frames.saturating_sub(OPEN_AHEAD_FRAMES);
                let (decoding, decoded_whole, sent_so_far, next) =
                    (&decoding, &decoded_whole, &sent_so_far, &mut *next);
                let opener = s.spawn(move || {
                    while decoding.load(Ordering::Acquire)
                        && sent_so_far.load(Ordering::Relaxed) < open_from
                    {
                        std::thread::sleep(Duration::from_millis(2));
                    }
                    let failed =
                        !decoding.load(Ordering::Acquire) && !decoded_whole.load(Ordering::Acquire);
                    match failed || cancel.is_cancelled() {
                        true => Ok(None),
                        false => next(),
                    }
                });
                let counted = |r: &mut VideoReader| {
                    let frame = pull(r);
                    if matches!(frame, Ok(Some(_))) {
                        rave_core::gpu::timeline::host("dec_out");
                    }
                    sent_so_far.fetch_add(1, Ordering::Relaxed);
                    frame
                };
                let decoded =
                    stages::decode(&mut seg.reader, tx, seg.policy, cancel, metrics, counted);
                decoded_whole.store(matches!(decoded, Ok(Some(_))), Ordering::Release);
                decoding.store(false, Ordering::Release);
                let upcoming = opener
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                (decoded, upcoming)
            });
            let sent = decoded.as_ref().ok().copied().flatten();
            end(&seg, sent);
            let go_on = sent.is_some() && !cancel.is_cancelled();
            match upcoming {
                Ok(Some(next_seg)) if go_on => {
                    retired.keep(std::mem::replace(&mut seg, next_seg).reader);
                }
                Ok(Some(mut opened)) => {
                    // Opened, but the run stopped: announced unread, so it is settled.
                    announce(&mut opened);
                    end(&opened, None);
                    retired.keep(seg.reader);
                    return decoded.map(|_| ());
                }
                Ok(None) => {
                    retired.keep(seg.reader);
                    return decoded.map(|_| ());
                }
                Err(e) => {
                    // The segment before it is complete: let it be settled first.
                    *deferred.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                    retired.keep(seg.reader);
                    return decoded.map(|_| ());
                }
            }
        }
    }
}

/// How many frames before a segment's planned end the next one is opened.
const OPEN_AHEAD_FRAMES: u64 = 48;

/// What every stage thread borrows.
#[derive(Clone, Copy)]
struct Shared<'a> {
    color: &'a ColorInfo,
    capacity: usize,
    errors: &'a FirstError,
    cancel: &'a CancelToken,
    metrics: &'a PipelineMetrics,
    fail_after: Option<FailAfter<'a>>,
}

/// The decode thread and the channels of the three middle stages.
struct Middle<'a> {
    segments: Segments<'a>,
    decoded: usize,
    post_tx: Sender<EncodeFrame>,
    shared: Shared<'a>,
}

impl<'a> Middle<'a> {
    /// Start the decode thread, pulling frames with `pull`; returns its output channel, the
    /// channel to the encoder and what the other stages borrow.
    fn start<'s, T: Send + 's>(
        self,
        s: &'s std::thread::Scope<'s, '_>,
        pull: impl FnMut(&mut VideoReader) -> Result<Option<T>> + Send + 's,
    ) -> (Receiver<T>, Sender<EncodeFrame>, Shared<'a>)
    where
        'a: 's,
    {
        let (tx, rx) = bounded(self.decoded);
        let (segments, sh) = (self.segments, self.shared);
        s.spawn(move || {
            guarded(sh.errors, sh.cancel, || {
                segments.decode(&tx, sh.cancel, &sh.metrics.decode, pull)
            })
        });
        (rx, self.post_tx, sh)
    }

    /// Preprocess, infer and postprocess on the CPU.
    fn spawn_cpu<'s>(
        self,
        s: &'s std::thread::Scope<'s, '_>,
        backend: &'s dyn Upscaler<Frame = RgbImage>,
        inferred: usize,
    ) where
        'a: 's,
    {
        let (dec_rx, post_tx, sh) = self.start(s, |r| r.next_frame());
        let (pre_tx, pre_rx) = bounded(sh.capacity);
        let (inf_tx, inf_rx) = bounded(inferred);
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
                let backend = FailingUpscaler::new(backend, sh.fail_after);
                infer_stage::infer(&backend, pre_rx, inf_tx, sh.cancel, &m.infer, &|_| Ok(None))
            })
        });
        s.spawn(move || {
            guarded(sh.errors, sh.cancel, || {
                stages::convert(inf_rx, post_tx, sh.cancel, &m.postprocess, |f| {
                    Ok(stages::to_yuv(f, sh.color).into())
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
        surfaces: Option<&'s Arc<CudaSurfacePool>>,
    ) where
        'a: 's,
    {
        let (dec_rx, post_tx, sh) = self.start(s, gpu_stages::next_decoded);
        let (color, capacity, errors, cancel, m) =
            (sh.color, sh.capacity, sh.errors, sh.cancel, sh.metrics);
        let fail_after = sh.fail_after;
        let tensor = match gpu.backend.model() {
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
        s.spawn(move || {
            guarded(errors, cancel, || {
                let backend = gpu.backend.as_ref();
                let finished = |wait| backend.finished_gpu_times(wait);
                let failing = FailingUpscaler::new(backend, fail_after);
                infer_stage::infer(&failing, pre_rx, inf_tx, cancel, &m.infer, &finished)
            })
        });
        let depth = color.bit_depth;
        s.spawn(move || {
            guarded(errors, cancel, || {
                stages::convert_measured(inf_rx, post_tx, cancel, &m.postprocess, |f| {
                    match surfaces {
                        // NVENC: into a surface of its pool, no host copy or wait.
                        Some(pool) => {
                            let t = std::time::Instant::now();
                            let mut surface = pool.take()?;
                            converter.to_surface(&f, &mut surface)?;
                            let meta = f.meta;
                            Ok((EncodeFrame::Surface { meta, surface }, t.elapsed()))
                        }
                        None => converter
                            .download(f, depth)
                            .map(|(frame, busy)| (frame.into(), busy)),
                    }
                })
            })
        });
    }
}
