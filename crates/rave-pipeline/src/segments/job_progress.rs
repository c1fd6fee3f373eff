//! Progress of a whole job: every worker's frames counted into one total (with the frames
//! of segments reused from an earlier run), shown as one bar with fps and ETA, plus the
//! segments done; the first frame written is the end of the run's start-up.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use super::startup::StartupClock;
use crate::progress::{Progress, ProgressSink};

/// Counts the frames written by all workers and reports the job's progress to `inner`.
pub struct JobProgress<'a> {
    inner: &'a dyn ProgressSink,
    /// When this job's frames started (its rate leaves the preparation out).
    started: Instant,
    /// The run's start-up, from the run's own start.
    clock: &'a StartupClock,
    total: Option<u64>,
    /// Frames of segments done before this run (not counted in its rate).
    reused: u64,
    written: AtomicU64,
}

impl<'a> JobProgress<'a> {
    /// Progress of a job of `total` frames of which `reused` are already done; the first
    /// frame written is timed on `clock`.
    pub fn new(
        inner: &'a dyn ProgressSink,
        total: Option<u64>,
        reused: u64,
        clock: &'a StartupClock,
    ) -> Self {
        Self {
            inner,
            started: Instant::now(),
            clock,
            total,
            reused,
            written: AtomicU64::new(0),
        }
    }

    /// Frames written in this run (of segments that did not fail).
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }

    /// `frames` written into a segment that failed no longer count: the segment is run
    /// again, or missing from the job.
    pub fn rewind(&self, frames: u64) {
        let _ = self
            .written
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |w| {
                Some(w.saturating_sub(frames))
            });
    }
}

impl ProgressSink for JobProgress<'_> {
    fn started(&self, _: Option<u64>) {}

    fn frame_written(&self, _: &Progress) {
        let done = self.written.fetch_add(1, Ordering::Relaxed) + 1;
        if done == 1 {
            self.clock.first_frame();
        }
        let mut p = Progress::new(
            done,
            self.total.map(|t| t - self.reused.min(t)),
            self.started.elapsed(),
        );
        p.frames_done += self.reused;
        p.frames_total = self.total;
        self.inner.frame_written(&p);
    }

    fn finished(&self) {}

    fn warning(&self, message: &str) {
        self.inner.warning(message);
    }
}
