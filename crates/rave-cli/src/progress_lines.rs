//! `--progress bar` where stderr is not a terminal (a log file, a pipe): the bar's numbers
//! as a plain line every few seconds, since a bar redrawn with cursor moves would fill a
//! log with escape codes, and indicatif draws none there.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use rave_pipeline::progress::{Progress, ProgressSink};

use crate::console::errln;

/// How often a line is written while frames are done.
const EVERY: Duration = Duration::from_secs(5);

/// Progress as lines on stderr: when the run starts, every [`EVERY`], and when it ends.
#[derive(Default)]
pub struct ProgressLines {
    state: Mutex<LinesState>,
    said: crate::progress_view::Said,
}

#[derive(Default)]
struct LinesState {
    /// When the last line was written.
    last_line: Option<Instant>,
    /// The last progress seen, and whether a line said it.
    last: Option<(Progress, bool)>,
}

/// The line for `p`: frames done (of the total, with the share), rate and time left.
fn line(p: &Progress) -> String {
    let of = match p.frames_total {
        Some(n) if n > 0 => format!("/{n} ({:.0}%)", p.frames_done as f64 * 100.0 / n as f64),
        Some(n) => format!("/{n}"),
        None => String::new(),
    };
    let eta = p
        .eta_s
        .map(|s| format!(", ETA {}", crate::progress_view::format_duration(s)))
        .unwrap_or_default();
    format!(
        "rave: progress: {}{of} frames, {:.2} fps{eta}",
        p.frames_done, p.fps
    )
}

impl ProgressSink for ProgressLines {
    fn started(&self, frames_total: Option<u64>) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        *state = LinesState {
            last_line: Some(Instant::now()),
            last: None,
        };
        match frames_total {
            Some(n) => errln!("rave: progress: started, {n} frames"),
            None => errln!("rave: progress: started"),
        }
    }

    fn frame_written(&self, p: &Progress) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let due = state.last_line.is_none_or(|t| t.elapsed() >= EVERY);
        if due {
            errln!("{}", line(p));
            state.last_line = Some(Instant::now());
        }
        state.last = Some((p.clone(), due));
    }

    fn finished(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((p, false)) = state.last.take() {
            errln!("{}", line(&p));
        }
    }

    fn warning(&self, message: &str) {
        self.said.warn(message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_says_frames_share_rate_and_time_left() {
        let p = Progress::new(120, Some(480), Duration::from_secs(4));
        let text = line(&p);
        assert!(
            text.starts_with("rave: progress: 120/480 (25%) frames, 30.00 fps, ETA 0:00:12"),
            "{text}"
        );
        let open = Progress::new(7, None, Duration::from_secs(1));
        assert_eq!(line(&open), "rave: progress: 7 frames, 7.00 fps");
    }
}
