//! The inference stage, once for both paths: frames from the preprocess are collected into
//! micro-batches of up to the backend's `max_batch` (or whatever arrived within the latency
//! deadline of the first), run through the [`Upscaler`] and passed on in order.

use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use rave_core::backend::Upscaler;
use rave_core::batch::BatchCollector;
use rave_core::error::Result;
use rave_core::frame::{FrameMeta, HostRgbFrame};
use rave_core::gpu::timeline;
use rave_core::metrics::StageMetrics;

use crate::cancel::CancelToken;
use crate::channel::send;
use crate::gpu_convert::GpuFrame;
use crate::stages::name_frames;

/// A frame as the stages carry it: its identity and its picture, taken apart for the
/// backend and put back together after it.
pub trait CarriedFrame: Sized {
    /// The picture the backend upscales.
    type Image;
    /// Identity and picture.
    fn split(self) -> (FrameMeta, Self::Image);
    /// The frame of `meta` with `image`.
    fn join(meta: FrameMeta, image: Self::Image) -> Self;
}

impl CarriedFrame for HostRgbFrame {
    type Image = rave_core::frame::RgbImage;

    fn split(self) -> (FrameMeta, Self::Image) {
        (self.meta, self.image)
    }

    fn join(meta: FrameMeta, image: Self::Image) -> Self {
        Self { meta, image }
    }
}

impl CarriedFrame for GpuFrame {
    type Image = rave_core::types::GpuTexture;

    fn split(self) -> (FrameMeta, Self::Image) {
        (self.meta, self.texture)
    }

    fn join(meta: FrameMeta, texture: Self::Image) -> Self {
        Self { meta, texture }
    }
}

/// The GPU times of the frames whose inference has finished (all of them with `wait`), for
/// a backend that returns before the GPU is done; `None` for one whose run is synchronous
/// (the stage's host time is then its time).
pub type FinishedTimes<'a> = dyn Fn(bool) -> Result<Option<Vec<Duration>>> + 'a;

/// Run the model on every frame from `rx`, in micro-batches, sending the results to `tx` in
/// order. An error after cancellation (an interrupted run) is the cancellation, not a
/// failure.
pub fn infer<U, F>(
    backend: &U,
    rx: Receiver<F>,
    tx: Sender<F>,
    cancel: &CancelToken,
    metrics: &StageMetrics,
    finished: &FinishedTimes<'_>,
) -> Result<()>
where
    U: Upscaler + ?Sized,
    F: CarriedFrame<Image = U::Frame>,
{
    let stage = Stage {
        backend,
        tx: &tx,
        cancel,
        metrics,
        finished,
    };
    let mut collector = BatchCollector::new(backend.batching());
    loop {
        if cancel.is_cancelled() {
            return Ok(());
        }
        let wait = collector
            .time_left(Instant::now())
            .unwrap_or(Duration::from_millis(50));
        let ready = match rx.recv_timeout(wait) {
            Ok(frame) => collector.push(frame, Instant::now()),
            Err(RecvTimeoutError::Timeout) => collector.take_if_due(Instant::now()),
            Err(RecvTimeoutError::Disconnected) => {
                if let Some(rest) = collector.flush() {
                    stage.run(rest)?;
                }
                record_gpu_times(metrics, finished, true)?;
                return Ok(());
            }
        };
        if let Some(frames) = ready
            && !stage.run(frames)?
        {
            return Ok(());
        }
    }
}

/// What one batch's run needs.
struct Stage<'a, U: ?Sized, F> {
    backend: &'a U,
    tx: &'a Sender<F>,
    cancel: &'a CancelToken,
    metrics: &'a StageMetrics,
    finished: &'a FinishedTimes<'a>,
}

impl<U, F> Stage<'_, U, F>
where
    U: Upscaler + ?Sized,
    F: CarriedFrame<Image = U::Frame>,
{
    /// One `upscale` over `frames`; false when the next stage is gone or the run was
    /// interrupted.
    fn run(&self, frames: Vec<F>) -> Result<bool> {
        let (metas, images): (Vec<FrameMeta>, Vec<U::Frame>) =
            frames.into_iter().map(CarriedFrame::split).unzip();
        let (first, n) = (metas[0].index, metas.len());
        let t = Instant::now();
        timeline::host("inf_begin");
        let outputs = match self.backend.upscale(&images) {
            Ok(outputs) => outputs,
            Err(_) if self.cancel.is_cancelled() => return Ok(false),
            Err(e) => return Err(name_frames(e, first, n)),
        };
        timeline::host("inf_end");
        let per_frame = t.elapsed() / n as u32;
        // The inputs go back to their pool here (a device buffer's events order its next
        // writer after the run's reads; a synchronous run has finished them).
        drop(images);
        let gpu_timed = record_gpu_times(self.metrics, self.finished, false)?;
        for (meta, image) in metas.into_iter().zip(outputs) {
            if !gpu_timed {
                self.metrics.record(per_frame);
            }
            if !send(self.tx, F::join(meta, image), self.cancel) {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// Record the finished frames' GPU times; false where the backend's runs are synchronous.
fn record_gpu_times(
    metrics: &StageMetrics,
    finished: &FinishedTimes<'_>,
    wait: bool,
) -> Result<bool> {
    match finished(wait)? {
        Some(times) => {
            times.into_iter().for_each(|t| metrics.record(t));
            Ok(true)
        }
        None => Ok(false),
    }
}
