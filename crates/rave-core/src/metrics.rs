//! Per-stage counters that stages update as they run and the report reads at the end.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

/// Live counters of one pipeline stage; shared between the stage thread and observers.
#[derive(Debug, Default)]
pub struct StageMetrics {
    frames: AtomicU64,
    busy_ns: AtomicU64,
    peak_ns: AtomicU64,
    /// When the first and the latest frame were recorded: nanoseconds after [`origin`]
    /// plus one (0: none yet).
    first_at: AtomicU64,
    last_at: AtomicU64,
}

/// The instant the recording times count from (the first use in the process).
fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

/// Now as a stamp: nanoseconds after [`origin`] plus one.
fn stamp_now() -> u64 {
    u64::try_from(origin().elapsed().as_nanos()).unwrap_or(u64::MAX - 1) + 1
}

fn instant_of(stamp: u64) -> Option<Instant> {
    stamp
        .checked_sub(1)
        .map(|ns| origin() + Duration::from_nanos(ns))
}

impl StageMetrics {
    /// Record one frame that kept the stage busy for `busy`.
    pub fn record(&self, busy: Duration) {
        let ns = u64::try_from(busy.as_nanos()).unwrap_or(u64::MAX);
        self.frames.fetch_add(1, Ordering::Relaxed);
        self.busy_ns.fetch_add(ns, Ordering::Relaxed);
        self.peak_ns.fetch_max(ns, Ordering::Relaxed);
        let now = stamp_now();
        let _ = self
            .first_at
            .compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed);
        self.last_at.fetch_max(now, Ordering::Relaxed);
    }

    /// When the first frame was recorded, if any was.
    pub fn first_recorded(&self) -> Option<Instant> {
        instant_of(self.first_at.load(Ordering::Relaxed))
    }

    /// When the latest frame was recorded or busy time added, if any was.
    pub fn last_recorded(&self) -> Option<Instant> {
        instant_of(self.last_at.load(Ordering::Relaxed))
    }

    /// Add busy time not tied to a frame (flushes, finalisation), ending now: it moves
    /// [`StageMetrics::last_recorded`] (an encoder's flush writes the last frames).
    pub fn add_busy(&self, busy: Duration) {
        let ns = u64::try_from(busy.as_nanos()).unwrap_or(u64::MAX);
        self.busy_ns.fetch_add(ns, Ordering::Relaxed);
        self.last_at.fetch_max(stamp_now(), Ordering::Relaxed);
    }

    /// Frames recorded so far.
    pub fn frames(&self) -> u64 {
        self.frames.load(Ordering::Relaxed)
    }

    /// A serialisable copy of the counters.
    pub fn snapshot(&self, name: &'static str) -> StageSnapshot {
        let frames = self.frames();
        let busy_s = self.busy_ns.load(Ordering::Relaxed) as f64 / 1e9;
        StageSnapshot {
            name,
            frames,
            busy_s,
            avg_ms: if frames > 0 {
                busy_s * 1e3 / frames as f64
            } else {
                0.0
            },
            peak_ms: self.peak_ns.load(Ordering::Relaxed) as f64 / 1e6,
            capacity_fps: if busy_s > 0.0 {
                frames as f64 / busy_s
            } else {
                0.0
            },
        }
    }
}

/// What one stage did during a run.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StageSnapshot {
    /// Stage name (decode, preprocess, infer, postprocess, encode).
    pub name: &'static str,
    /// Frames the stage handled.
    pub frames: u64,
    /// Seconds the stage spent working (not waiting on its neighbours).
    pub busy_s: f64,
    /// Mean busy time per frame in milliseconds (time not tied to a frame, an encoder's
    /// flush, included).
    pub avg_ms: f64,
    /// Longest busy time of one frame in milliseconds (a single call: an encoder with
    /// lookahead does most of a short run's work in its flush, so this can be below
    /// `avg_ms`).
    pub peak_ms: f64,
    /// Frames per second the stage could sustain alone (`frames / busy_s`).
    pub capacity_fps: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_derives_rates() {
        let m = StageMetrics::default();
        m.record(Duration::from_millis(10));
        m.record(Duration::from_millis(30));
        let s = m.snapshot("infer");
        assert_eq!(s.frames, 2);
        assert!((s.avg_ms - 20.0).abs() < 1e-6);
        assert!((s.peak_ms - 30.0).abs() < 1e-6);
        assert!((s.capacity_fps - 50.0).abs() < 1e-6);
    }

    #[test]
    fn the_first_and_latest_records_are_timed() {
        let m = StageMetrics::default();
        assert_eq!((m.first_recorded(), m.last_recorded()), (None, None));
        let before = Instant::now();
        m.record(Duration::ZERO);
        std::thread::sleep(Duration::from_millis(20));
        m.record(Duration::ZERO);
        let after = Instant::now();
        let (first, last) = (m.first_recorded().unwrap(), m.last_recorded().unwrap());
        // The stamps have nanosecond steps from an origin taken at the first record.
        let slack = Duration::from_micros(1);
        assert!(first + slack >= before && first <= last && last <= after + slack);
        assert!(
            last - first >= Duration::from_millis(20),
            "{:?}",
            last - first
        );
        // Busy time added after the frames (an encoder's flush) ends the stage later.
        std::thread::sleep(Duration::from_millis(5));
        m.add_busy(Duration::from_millis(1));
        assert!(m.last_recorded().unwrap() >= last + Duration::from_millis(5));
        assert_eq!(m.first_recorded(), Some(first));
    }
}
