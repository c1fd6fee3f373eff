//! The five stages of one segment on their own threads: decode (the frames within the
//! segment's bounds), preprocess, infer, postprocess on the CPU (host frames) or on the GPU
//! (device frames), and encode into the segment's file (or a null sink).

use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender, bounded};
use rave_core::backend::UpscaleBackend;
use rave_core::codec::FrameSource;
use rave_core::color::ColorInfo;
use rave_core::error::Result;
use rave_core::frame::HostYuvFrame;
use rave_ffmpeg::{MediaWriter, VideoReader};

use crate::backend_choice::{Engine, GpuPath};
use crate::cancel::CancelToken;
use crate::config::ChannelCapacities;
use crate::gpu_convert::{GpuConverter, HostCopies};
use crate::gpu_stages;
use crate::progress::ProgressSink;
use crate::stages::{self, DecodePolicy, FirstError, PipelineMetrics, guarded};

/// What one run of the stages reads, writes and reports to.
pub struct StageRun<'a> {
    /// The frames to upscale.
    pub reader: &'a mut VideoReader,
    /// The segment's file, or `None` for a null sink.
    pub sink: Option<&'a mut MediaWriter>,
    /// What decoding does with damage, and where it stops.
    pub policy: DecodePolicy,
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
}

/// Run the stages over `run.reader`'s frames with `engine`. Returns whether the sink's file
/// was finalized (complete, or an interrupted run's frames done); the first error of any
/// stage is the result.
pub fn run_stages(engine: &mut Engine, run: StageRun<'_>) -> Result<bool> {
    let StageRun {
        reader,
        sink,
        policy,
        caps,
        progress,
        frames_total,
        cancel,
        metrics,
        copies,
    } = run;
    let color = reader.color();
    let (post_tx, post_rx) = bounded(caps.inferred.max(1));
    let errors = FirstError::default();
    let mut finalized = false;
    std::thread::scope(|s| {
        let middle = Middle {
            reader,
            policy,
            decoded: caps.decoded.max(1),
            post_tx,
            shared: Shared {
                color: &color,
                capacity: caps.preprocessed.max(1),
                errors: &errors,
                cancel,
                metrics,
            },
        };
        match engine {
            Engine::Cpu(backend) => middle.spawn_cpu(s, backend.as_mut()),
            Engine::Gpu(gpu) => middle.spawn_gpu(s, gpu, copies, caps.inferred.max(1)),
        }
        guarded(&errors, cancel, || {
            let m = &metrics.encode;
            finalized = match sink {
                Some(w) => stages::encode(w, post_rx, progress, frames_total, cancel, m)?,
                None => stages::null_sink(post_rx, progress, frames_total, cancel, m),
            };
            Ok(())
        });
    });
    match errors.take() {
        Some(e) => Err(e),
        None => Ok(finalized),
    }
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
