//! The start of a run, timed: named steps (probe, index or resume, model load, first frame)
//! measured from the run's start, each logged at info level (`rave -v`) as it ends.

use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use crate::report::StartupStep;

/// Start-up steps of one run, recorded from any thread.
pub struct StartupClock {
    started: Instant,
    steps: Mutex<Vec<StartupStep>>,
    first_frame: OnceLock<f64>,
}

impl StartupClock {
    /// A clock for a run that started at `started`.
    pub fn new(started: Instant) -> Self {
        Self {
            started,
            steps: Mutex::new(Vec::new()),
            first_frame: OnceLock::new(),
        }
    }

    /// Step `name`, which began at `began`, ends now. A name is recorded once: of several
    /// workers loading their models at once, the first to be ready.
    pub fn step(&self, name: &'static str, began: Instant) {
        // One reading of the clock for both, so that a step which began with the run never
        // lasts longer than the run so far; one begun before the run counts from its start.
        let now = Instant::now();
        let at_s = now.duration_since(self.started).as_secs_f64();
        let seconds = now.duration_since(began).as_secs_f64().min(at_s);
        self.record(name, at_s, |_| seconds);
    }

    /// The first output frame reached the encoder: the run's time to first frame, and the
    /// `first_frame` step (from the end of the step before it). Later calls change nothing.
    pub fn first_frame(&self) {
        let at_s = self.started.elapsed().as_secs_f64();
        if self.first_frame.set(at_s).is_ok() {
            self.record("first_frame", at_s, |steps| {
                let previous = steps.iter().map(|s| s.at_s).fold(0.0, f64::max);
                (at_s - previous).max(0.0)
            });
        }
    }

    /// When the run started.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// Seconds from the run's start to its first output frame, if one was written.
    pub fn first_frame_s(&self) -> Option<f64> {
        self.first_frame.get().copied()
    }

    /// The steps recorded so far, in the order they ended.
    pub fn steps(&self) -> Vec<StartupStep> {
        self.steps.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Record step `name` ending `at_s` into the run, lasting `seconds` (given the steps
    /// before it), unless it is recorded already.
    fn record(&self, name: &'static str, at_s: f64, seconds: impl FnOnce(&[StartupStep]) -> f64) {
        let mut steps = self.steps.lock().unwrap_or_else(|e| e.into_inner());
        if steps.iter().any(|s| s.name == name) {
            return;
        }
        let seconds = seconds(&steps);
        tracing::info!("start-up: {name} took {seconds:.3} s, {at_s:.3} s into the run");
        steps.push(StartupStep {
            name: name.into(),
            seconds,
            at_s,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_keep_their_order_and_the_first_frame_is_timed_once() {
        let clock = StartupClock::new(Instant::now());
        assert_eq!(clock.first_frame_s(), None);
        let t = Instant::now();
        clock.step("probe", t);
        clock.step("load_model", t);
        clock.step("load_model", Instant::now());
        std::thread::sleep(std::time::Duration::from_millis(2));
        clock.first_frame();
        let first = clock.first_frame_s().unwrap();
        assert!(steps_within_the_run(&clock.steps()));
        clock.first_frame();
        assert_eq!(clock.first_frame_s(), Some(first));
        let steps = clock.steps();
        let names: Vec<&str> = steps.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["probe", "load_model", "first_frame"]);
        let last = &steps[2];
        assert_eq!(last.at_s, first);
        assert!(last.seconds > 0.0 && last.seconds <= first, "{last:?}");
        assert!(steps.windows(2).all(|w| w[0].at_s <= w[1].at_s));
    }

    /// A step begun with the run, or before it, never lasts longer than the run so far
    /// (the clock is read once per step).
    #[test]
    fn a_step_begun_at_or_before_the_run_start_lasts_no_longer_than_the_run() {
        let early = Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let started = Instant::now();
        let clock = StartupClock::new(started);
        for _ in 0..1000 {
            clock.step("probe", started);
        }
        clock.step("index", early);
        assert!(steps_within_the_run(&clock.steps()), "{:?}", clock.steps());
    }

    fn steps_within_the_run(steps: &[StartupStep]) -> bool {
        steps
            .iter()
            .all(|s| s.seconds >= 0.0 && s.seconds <= s.at_s)
    }
}
