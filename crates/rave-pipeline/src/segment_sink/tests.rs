//! Tests of the segment encode stage and finisher with a recording sink (no FFmpeg).

use std::sync::{Arc, Mutex};

use crossbeam_channel::{bounded, unbounded};
use rave_core::frame::{FrameMeta, HostYuvFrame, YuvFrame};

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
                        if !crate::channel::send(&frame_tx, frame(pts).into(), cancel) {
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
        let finisher = s.spawn(|| finish_segments(finish_rx, &settle, &errors, cancel, &metrics));
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
