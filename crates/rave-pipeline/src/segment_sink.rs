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
use rave_core::frame::HostYuvFrame;
use rave_core::metrics::StageMetrics;
use rave_ffmpeg::{DecodeStats, MediaWriter, VideoReader};

use crate::cancel::{CancelToken, StopReason};
use crate::channel::recv;
use crate::progress::{Progress, ProgressSink};
use crate::segments::manifest::SegmentDecode;
use crate::stages::FirstError;

/// A segment's output: a frame sink that knows the earliest timestamp written.
pub trait SegmentSink: FrameSink {
    /// The earliest timestamp written so far.
    fn first_pts(&self) -> Option<i64>;
}

impl SegmentSink for MediaWriter {
    fn first_pts(&self) -> Option<i64> {
        MediaWriter::first_pts(self)
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
    rx: Receiver<HostYuvFrame>,
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
                sink.write_frame(frame)?;
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
mod tests {
    use std::sync::{Arc, Mutex};

    use crossbeam_channel::{bounded, unbounded};
    use rave_core::frame::{FrameMeta, YuvFrame};

    use super::*;
    use crate::progress::NoProgress;

    /// What each sink was given and whether it was finished, in the order they were dropped.
    type Log = Arc<Mutex<Vec<(Vec<i64>, bool)>>>;

    /// A sink that records the timestamps it is given and whether it was finished.
    struct Recorder {
        pts: Vec<i64>,
        finished: bool,
        fail_finish: bool,
        fail_write_at: Option<usize>,
        log: Log,
    }

    impl Recorder {
        fn new(log: &Log) -> Self {
            Self {
                pts: Vec::new(),
                finished: false,
                fail_finish: false,
                fail_write_at: None,
                log: log.clone(),
            }
        }
    }

    impl FrameSink for Recorder {
        fn write_frame(&mut self, frame: HostYuvFrame) -> Result<()> {
            if self.fail_write_at == Some(self.pts.len()) {
                return Err(EngineError::Encode("write failed".into()));
            }
            self.pts.push(frame.meta.pts);
            Ok(())
        }
        fn finish(&mut self) -> Result<()> {
            if self.fail_finish {
                return Err(EngineError::Encode("disk full".into()));
            }
            self.finished = true;
            Ok(())
        }
    }

    impl SegmentSink for Recorder {
        fn first_pts(&self) -> Option<i64> {
            self.pts.iter().copied().min()
        }
    }

    impl Drop for Recorder {
        fn drop(&mut self) {
            let mut log = self.log.lock().unwrap();
            log.push((std::mem::take(&mut self.pts), self.finished));
        }
    }

    fn frame(pts: i64) -> HostYuvFrame {
        HostYuvFrame {
            meta: FrameMeta {
                index: pts as u64,
                pts,
                keyframe: false,
            },
            image: YuvFrame::zeroed(2, 2, 8),
        }
    }

    fn end(frames: u64, reached_end: bool) -> Control<Recorder> {
        Control::End(Box::new(SegmentEnd {
            reached_end,
            frames,
            ..Default::default()
        }))
    }

    /// One decode side's messages: `Start`, then `None` for each frame, `End`, in order.
    enum Step {
        Start(usize, Recorder),
        Frame(i64),
        End(u64, bool),
        /// Wait until the encoder has written this many frames, then stop the run as the
        /// user would.
        UserStopAfter(u64),
    }

    /// Run the encode stage and the finisher over `steps` (sent as the decode thread would:
    /// frames through a small channel, announcements beside them); `cancel_after` frames
    /// written the user stops the run. Returns the outcomes in the order settled.
    fn run(steps: Vec<Step>, cancel: &CancelToken) -> (Result<()>, Vec<SegmentOutcome>) {
        run_with(steps, cancel, 2)
    }

    /// `run` with a frame channel of `capacity` (a large one lets the decode side send
    /// everything before the encoder reads: the announcements are then all ahead of it).
    fn run_with(
        steps: Vec<Step>,
        cancel: &CancelToken,
        capacity: usize,
    ) -> (Result<()>, Vec<SegmentOutcome>) {
        let (frame_tx, frame_rx) = bounded(capacity);
        let (control_tx, control_rx) = unbounded();
        let (finish_tx, finish_rx) = bounded(1);
        let settled = Mutex::new(Vec::new());
        let settle = |o: SegmentOutcome| {
            settled.lock().unwrap().push(o);
            Ok(())
        };
        let metrics = StageMetrics::default();
        let errors = FirstError::default();
        let written = &metrics;
        std::thread::scope(|s| {
            s.spawn(move || {
                for step in steps {
                    match step {
                        Step::Start(index, sink) => {
                            let file = Some(PathBuf::from(format!("seg{index}")));
                            control_tx
                                .send(Control::Start {
                                    index,
                                    file,
                                    sink: Some(sink),
                                })
                                .unwrap();
                        }
                        Step::Frame(pts) => {
                            if !crate::channel::send(&frame_tx, frame(pts), cancel) {
                                return;
                            }
                        }
                        Step::End(n, reached) => control_tx.send(end(n, reached)).unwrap(),
                        Step::UserStopAfter(n) => {
                            while written.frames() < n {
                                std::thread::sleep(std::time::Duration::from_millis(1));
                            }
                            cancel.cancel(StopReason::User);
                        }
                    }
                }
            });
            let finisher =
                s.spawn(|| finish_segments(finish_rx, &settle, &errors, cancel, &metrics));
            let report = EncodeReporting {
                progress: &NoProgress,
                frames_total: None,
                metrics: &metrics,
            };
            encode_segments(frame_rx, control_rx, finish_tx, report, &errors, cancel);
            finisher.join().unwrap();
        });
        let result = errors.take().map_or(Ok(()), Err);
        (result, settled.into_inner().unwrap())
    }

    fn segment(index: usize, pts: std::ops::Range<i64>, log: &Log) -> Vec<Step> {
        let n = pts.end - pts.start;
        let mut steps = vec![Step::Start(index, Recorder::new(log))];
        steps.extend(pts.map(Step::Frame));
        steps.push(Step::End(n as u64, true));
        steps
    }

    #[test]
    fn each_segment_gets_exactly_its_frames_and_is_finished() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut steps = segment(0, 0..5, &log);
        steps.extend(segment(1, 5..6, &log));
        steps.extend(segment(2, 6..13, &log));
        let (result, outcomes) = run(steps, &CancelToken::new());
        result.unwrap();
        let got: Vec<_> = outcomes
            .iter()
            .map(|o| (o.index, o.frames, o.complete, o.first_pts))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, 5, true, Some(0)),
                (1, 1, true, Some(5)),
                (2, 7, true, Some(6))
            ]
        );
        let log = log.lock().unwrap();
        assert_eq!(
            *log,
            vec![
                ((0..5).collect(), true),
                (vec![5], true),
                ((6..13).collect(), true)
            ]
        );
    }

    #[test]
    fn a_segment_with_no_frames_is_settled_in_its_place() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut steps = segment(0, 0..3, &log);
        steps.extend(segment(1, 3..3, &log));
        steps.extend(segment(2, 3..5, &log));
        let (result, outcomes) = run(steps, &CancelToken::new());
        result.unwrap();
        let got: Vec<_> = outcomes.iter().map(|o| (o.index, o.frames)).collect();
        assert_eq!(got, vec![(0, 3), (1, 0), (2, 2)]);
    }

    #[test]
    fn a_user_stop_finishes_the_current_file_as_partial_and_drops_the_rest() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let cancel = CancelToken::new();
        let mut steps = segment(0, 0..4, &log);
        // Segment 1 is stopped by the user after its third frame: its reader does not reach
        // the end, and its file keeps those frames; segment 2 was announced (opened) but
        // gets no frame, so its file is not finalized (there is nothing to keep).
        steps.extend(segment(1, 4..7, &log));
        steps.pop();
        steps.push(Step::UserStopAfter(7));
        steps.push(Step::End(3, false));
        steps.extend(segment(2, 7..7, &log));
        steps.pop();
        let (result, outcomes) = run(steps, &cancel);
        result.unwrap();
        let got: Vec<_> = outcomes
            .iter()
            .map(|o| (o.index, o.frames, o.complete, o.finalized))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, 4, true, true),
                (1, 3, false, true),
                (2, 0, false, false)
            ]
        );
    }

    #[test]
    fn after_a_failure_incomplete_files_are_not_finalized() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let cancel = CancelToken::new();
        let mut steps = segment(0, 0..2, &log);
        steps.pop();
        steps.push(Step::End(1, false));
        cancel.cancel(StopReason::Failure);
        let (_, outcomes) = run(steps, &cancel);
        assert!(outcomes.iter().all(|o| !o.finalized && !o.complete));
        assert!(log.lock().unwrap().iter().all(|(_, finished)| !finished));
    }

    #[test]
    fn a_failed_finish_is_the_error_and_its_segment_is_not_complete() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut steps = segment(0, 0..2, &log);
        if let Step::Start(_, sink) = &mut steps[0] {
            sink.fail_finish = true;
        }
        steps.extend(segment(1, 2..4, &log));
        let (result, outcomes) = run(steps, &CancelToken::new());
        assert!(result.unwrap_err().to_string().contains("disk full"));
        assert!(!outcomes[0].complete && !outcomes[0].finalized);
    }

    #[test]
    fn a_frame_before_its_segment_is_an_invariant_violation() {
        let (result, _) = run(vec![Step::Frame(0)], &CancelToken::new());
        assert!(matches!(
            result.unwrap_err(),
            EngineError::InvariantViolation(_)
        ));
    }

    /// Run `f` on a thread; fail the test if it has not returned within 20 s (a hang).
    fn within_20_s<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
        let (tx, rx) = crossbeam_channel::bounded(1);
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(std::time::Duration::from_secs(20))
            .expect("the stages hung")
    }

    #[test]
    fn an_encoder_failure_stops_the_run_instead_of_hanging_it() {
        let (result, outcomes, reason) = within_20_s(|| {
            let log = Arc::new(Mutex::new(Vec::new()));
            let mut steps = segment(0, 0..50, &log);
            if let Step::Start(_, sink) = &mut steps[0] {
                sink.fail_write_at = Some(3);
            }
            let cancel = CancelToken::new();
            let (result, outcomes) = run(steps, &cancel);
            (result, outcomes, cancel.reason())
        });
        assert!(result.unwrap_err().to_string().contains("write failed"));
        assert_eq!(reason, Some(StopReason::Failure));
        let got: Vec<_> = outcomes.iter().map(|o| (o.index, o.finalized)).collect();
        assert_eq!(got, vec![(0, false)]);
    }

    #[test]
    fn a_finish_failure_stops_the_run_at_once() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut steps = segment(0, 0..2, &log);
        if let Step::Start(_, sink) = &mut steps[0] {
            sink.fail_finish = true;
        }
        let cancel = CancelToken::new();
        let (result, _) = run(steps, &cancel);
        assert!(result.is_err());
        assert_eq!(cancel.reason(), Some(StopReason::Failure));
    }

    #[test]
    fn frames_of_a_stopped_segment_stay_in_it_when_its_end_is_ahead_of_them() {
        // The decode side announces everything before the encoder reads a frame: segment 0
        // stopped after 3 frames (its reader did not reach the end, so its end says 0
        // frames), and segment 1 was opened but not read.
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut steps = segment(0, 0..3, &log);
        steps.pop();
        steps.push(Step::End(0, false));
        steps.extend(segment(1, 3..3, &log));
        steps.pop();
        steps.push(Step::End(0, false));
        let (result, outcomes) = run_with(steps, &CancelToken::new(), 16);
        result.unwrap();
        let got: Vec<_> = outcomes
            .iter()
            .map(|o| (o.index, o.frames, o.complete))
            .collect();
        assert_eq!(got, vec![(0, 3, false), (1, 0, false)]);
        assert_eq!(log.lock().unwrap()[0].0, vec![0, 1, 2]);
    }
}
