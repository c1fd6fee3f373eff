//! The encode end of a worker's stages over its successive segments. The decode thread
//! announces each segment on a control channel (its file before the segment's first frame,
//! what it read after its last), so the encode stage knows where one segment's frames end
//! without a marker in the frame channels. A segment's file is handed to a finisher thread
//! at its last frame (encoder flush, trailer, then `settle`), so the next segment's frames
//! are encoded while the previous file drains: the stages never empty between segments.

use std::path::PathBuf;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender, TryRecvError};
use rave_core::codec::FrameSink;
use rave_core::damage::InputDamage;
use rave_core::error::{EngineError, Result};
use rave_core::frame::FrameMeta;
use rave_core::metrics::StageMetrics;
use rave_ffmpeg::cuda_surfaces::CudaSurface;
use rave_ffmpeg::{DecodeStats, MediaWriter, VideoReader};

use crate::cancel::{CancelToken, StopReason};
use crate::channel::recv;
use crate::progress::{Progress, ProgressSink};
use crate::segments::manifest::SegmentDecode;
use crate::stages::FirstError;

mod encode_frame;
pub use encode_frame::EncodeFrame;

/// A segment's output: a frame sink that knows the earliest timestamp written.
pub trait SegmentSink: FrameSink {
    /// The earliest timestamp written so far.
    fn first_pts(&self) -> Option<i64>;
    /// Encode a frame already in a CUDA surface of the sink's encoder (NVENC); a sink with
    /// a software encoder refuses it.
    fn write_surface(&mut self, meta: FrameMeta, surface: CudaSurface) -> Result<()> {
        let _ = surface;
        Err(EngineError::InvariantViolation(format!(
            "frame {}: a CUDA surface reached an output that encodes host frames",
            meta.index
        )))
    }
    /// Encode `frame`, whichever memory it is in.
    fn write(&mut self, frame: EncodeFrame) -> Result<()> {
        match frame {
            EncodeFrame::Host(f) => self.write_frame(f),
            EncodeFrame::Surface { meta, surface } => self.write_surface(meta, surface),
        }
    }
}

impl SegmentSink for MediaWriter {
    fn first_pts(&self) -> Option<i64> {
        MediaWriter::first_pts(self)
    }

    fn write_surface(&mut self, meta: FrameMeta, surface: CudaSurface) -> Result<()> {
        MediaWriter::write_surface(self, surface, meta.pts)
    }
}

/// What the decode stage knew of a segment when its reader stopped.
#[derive(Debug, Clone, Default)]
pub struct SegmentEnd {
    /// The reader reached the segment's end (not stopped by the run).
    pub reached_end: bool,
    /// Frames sent downstream.
    pub frames: u64,
    /// Decoding counts, for the manifest.
    pub decode: SegmentDecode,
    /// The reader's account of damage.
    pub damage: InputDamage,
    /// The reader's counters.
    pub stats: DecodeStats,
}

impl SegmentEnd {
    /// The end of `reader`'s segment after `frames` were sent (`None`: the run stopped it).
    pub fn of(reader: &VideoReader, frames: Option<u64>) -> Self {
        let damage = reader.damage();
        let stats = reader.stats().clone();
        Self {
            reached_end: frames.is_some(),
            frames: frames.unwrap_or(0),
            decode: SegmentDecode::of(&damage, &stats, reader.saw_interlaced()),
            damage,
            stats,
        }
    }
}

/// A message from the decode thread, in frame order.
pub enum Control<S> {
    /// Segment `index` begins with the next frame; `sink` is its file (`None`: a null sink).
    Start {
        /// The segment's index in the job.
        index: usize,
        /// Its file's path (`None` for a null sink).
        file: Option<PathBuf>,
        /// Its open file.
        sink: Option<S>,
    },
    /// The segment begun last has no more frames.
    End(Box<SegmentEnd>),
}

/// What processing one segment gave.
#[derive(Debug, Clone)]
pub struct SegmentOutcome {
    /// The segment's index in the job.
    pub index: usize,
    /// Its file (`None` for a null sink).
    pub file: Option<PathBuf>,
    /// Every frame of the segment was written and its file finalized.
    pub complete: bool,
    /// Its file was finalized (complete, or the frames done of a run stopped by the user).
    pub finalized: bool,
    /// Frames written.
    pub frames: u64,
    /// What decoding saw.
    pub decode: SegmentDecode,
    /// The reader's account of damage.
    pub damage: InputDamage,
    /// The reader's counters.
    pub stats: DecodeStats,
    /// The earliest timestamp written (the segment's first frame).
    pub first_pts: Option<i64>,
}

/// A segment whose frames are all in its file (or whose run stopped), for the finisher.
pub struct Finishing<S> {
    index: usize,
    file: Option<PathBuf>,
    sink: Option<S>,
    written: u64,
    end: Option<SegmentEnd>,
}

impl<S> Finishing<S> {
    fn complete(&self) -> bool {
        self.end
            .as_ref()
            .is_some_and(|e| e.reached_end && e.frames == self.written)
    }

    /// Every frame of a segment whose reader reached its end has been written: the next
    /// frame is another segment's. (After a stopped reader no frame of a later segment is
    /// decoded, so the frames still coming are this one's.)
    fn all_written(&self) -> bool {
        self.end
            .as_ref()
            .is_some_and(|e| e.reached_end && self.written >= e.frames)
    }
}

/// Where the encode stage reports.
pub struct EncodeReporting<'a> {
    /// Progress of the frames written.
    pub progress: &'a dyn ProgressSink,
    /// Frames expected (for the progress of a single run).
    pub frames_total: Option<u64>,
    /// The encode stage's counters.
    pub metrics: &'a StageMetrics,
}

/// The encode stage: write each frame of `rx` into its segment's sink, as `control`
/// announces them, and hand each segment to `finish` after its last frame (or when the run
/// stops). Every segment announced is handed on exactly once, after a failure too: the
/// failure is recorded in `errors` at once (stopping the other stages), then the rest of the
/// announcements are drained.
pub fn encode_segments<S: SegmentSink>(
    rx: Receiver<EncodeFrame>,
    control: Receiver<Control<S>>,
    finish: Sender<Finishing<S>>,
    report: EncodeReporting<'_>,
    errors: &FirstError,
    cancel: &CancelToken,
) {
    let start = Instant::now();
    let mut current: Option<Finishing<S>> = None;
    let hand_on = |seg: Finishing<S>| {
        // The finisher only stops after this stage drops its sender; a send fails only if
        // it panicked, and the scope reports that.
        let _ = finish.send(seg);
    };
    let written = (|| -> Result<()> {
        while let Some(frame) = recv(&rx, cancel) {
            // Find the segment this frame belongs to.
            loop {
                if let Some(seg) = current.take_if(|s| s.all_written()) {
                    hand_on(seg);
                    continue;
                }
                if current.as_ref().is_some_and(|s| s.end.is_some()) {
                    break;
                }
                match control.try_recv() {
                    Ok(msg) => apply(msg, &mut current, &hand_on)?,
                    Err(TryRecvError::Empty | TryRecvError::Disconnected) => match current {
                        Some(_) => break,
                        None => {
                            return Err(EngineError::InvariantViolation(
                                "a frame reached the encoder before its segment was announced"
                                    .into(),
                            ));
                        }
                    },
                }
            }
            let seg = current.as_mut().expect("a segment is current");
            let t = Instant::now();
            if let Some(sink) = seg.sink.as_mut() {
                sink.write(frame)?;
            }
            seg.written += 1;
            report.metrics.record(t.elapsed());
            report.progress.frame_written(&Progress::new(
                report.metrics.frames(),
                report.frames_total,
                start.elapsed(),
            ));
        }
        Ok(())
    })();
    if let Err(e) = written {
        errors.record(e, cancel);
    }
    drop(rx);
    // The decode thread ends once the run stops or its segments are read: settle every
    // segment it announced.
    while let Ok(msg) = control.recv() {
        if let Err(e) = apply(msg, &mut current, &hand_on) {
            errors.record(e, cancel);
        }
    }
    if let Some(seg) = current {
        hand_on(seg);
    }
}

fn apply<S>(
    msg: Control<S>,
    current: &mut Option<Finishing<S>>,
    hand_on: &impl Fn(Finishing<S>),
) -> Result<()> {
    match msg {
        Control::Start { index, file, sink } => {
            if let Some(seg) = current.take() {
                hand_on(seg);
            }
            *current = Some(Finishing {
                index,
                file,
                sink,
                written: 0,
                end: None,
            });
        }
        Control::End(end) => match current {
            Some(seg) if seg.end.is_none() => seg.end = Some(*end),
            _ => {
                return Err(EngineError::InvariantViolation(
                    "a segment's end was announced without its start".into(),
                ));
            }
        },
    }
    Ok(())
}

/// The finisher: flush and finalize each segment's file (a complete one always; one with
/// frames but incomplete only when the user stopped the run, for the `.partial` file), then
/// give its outcome to `settle`. A failure is recorded in `errors` at once (stopping the
/// run); the segments after it are still settled.
pub fn finish_segments<S: SegmentSink>(
    rx: Receiver<Finishing<S>>,
    settle: &(dyn Fn(SegmentOutcome) -> Result<()> + Sync),
    errors: &FirstError,
    cancel: &CancelToken,
    metrics: &StageMetrics,
) {
    for mut seg in rx {
        let complete = seg.complete();
        let user_stop = cancel.reason() == Some(StopReason::User);
        let wanted = complete || (user_stop && seg.written > 0);
        let mut finalized = false;
        if wanted {
            let t = Instant::now();
            match seg.sink.as_mut().map_or(Ok(()), |s| s.finish()) {
                Ok(()) => finalized = true,
                Err(e) => errors.record(e, cancel),
            }
            metrics.add_busy(t.elapsed());
        }
        let end = seg.end.take().unwrap_or_default();
        let outcome = SegmentOutcome {
            index: seg.index,
            file: seg.file.take(),
            complete: complete && finalized,
            finalized,
            frames: seg.written,
            first_pts: seg.sink.as_ref().and_then(|s| s.first_pts()),
            decode: end.decode,
            damage: end.damage,
            stats: end.stats,
        };
        drop(seg.sink);
        if let Err(e) = settle(outcome) {
            errors.record(e, cancel);
        }
    }
}

#[cfg(test)]
mod tests;
