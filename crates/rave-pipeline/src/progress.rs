//! Progress events the pipeline emits as frames are written; the CLI renders them as a bar
//! or JSON lines.

use std::time::Duration;

use serde::Serialize;

/// A snapshot of how far the run is.
#[derive(Debug, Clone, Serialize)]
pub struct Progress {
    /// Frames written to the output so far.
    pub frames_done: u64,
    /// Frames expected in total, when known.
    pub frames_total: Option<u64>,
    /// Seconds since the run started.
    pub elapsed_s: f64,
    /// Mean output frames per second so far.
    pub fps: f64,
    /// Estimated seconds left, when the total is known.
    pub eta_s: Option<f64>,
}

impl Progress {
    /// Compute rates from counts and elapsed time.
    pub fn new(frames_done: u64, frames_total: Option<u64>, elapsed: Duration) -> Self {
        let elapsed_s = elapsed.as_secs_f64();
        let fps = if elapsed_s > 0.0 {
            frames_done as f64 / elapsed_s
        } else {
            0.0
        };
        let eta_s = frames_total
            .filter(|_| fps > 0.0)
            .map(|t| t.saturating_sub(frames_done) as f64 / fps);
        Self {
            frames_done,
            frames_total,
            elapsed_s,
            fps,
            eta_s,
        }
    }
}

/// Receives progress from the encode stage.
pub trait ProgressSink: Send + Sync {
    /// The run started; `frames_total` is the expected frame count when known.
    fn started(&self, frames_total: Option<u64>);
    /// One more frame was written.
    fn frame_written(&self, progress: &Progress);
    /// The run ended (successfully or not).
    fn finished(&self);
    /// Something the user should know before the run goes on (e.g. options that are
    /// ignored); the same message may come more than once (a benchmark runs several times).
    fn warning(&self, message: &str);
}

/// A sink that ignores everything.
pub struct NoProgress;

impl ProgressSink for NoProgress {
    fn started(&self, _: Option<u64>) {}
    fn frame_written(&self, _: &Progress) {}
    fn finished(&self) {}
    fn warning(&self, _: &str) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eta_from_rate() {
        let p = Progress::new(50, Some(150), Duration::from_secs(10));
        assert_eq!(p.fps, 5.0);
        assert_eq!(p.eta_s, Some(20.0));
        assert_eq!(Progress::new(0, Some(10), Duration::ZERO).eta_s, None);
    }
}
