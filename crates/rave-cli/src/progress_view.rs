//! Showing progress: an indicatif bar with fps and ETA on a terminal, JSON lines for
//! machines, or nothing; warnings are printed once each, whatever the display.

use std::io::IsTerminal;
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rave_pipeline::{Progress, ProgressSink};

use crate::args::ProgressArg;
use crate::batch::{BatchReport, InputJob, InputStatus};
use crate::console::{self, errln};

/// Pick the progress display for `mode`.
pub fn sink_for(mode: ProgressArg) -> Box<dyn ProgressSink> {
    match mode {
        ProgressArg::Jsonl => Box::new(JsonLines::default()),
        ProgressArg::Bar if !std::io::stderr().is_terminal() => {
            Box::new(crate::progress_lines::ProgressLines::default())
        }
        _ if shows_bar(mode) => Box::new(Bar::default()),
        _ => Box::new(Quiet::default()),
    }
}

/// Whether `mode` shows a bar: always with `bar`, on a terminal with `auto`.
fn shows_bar(mode: ProgressArg) -> bool {
    match mode {
        ProgressArg::Bar => true,
        ProgressArg::Auto => std::io::stderr().is_terminal(),
        ProgressArg::Jsonl | ProgressArg::Off => false,
    }
}

/// The warnings already printed.
#[derive(Default)]
pub(crate) struct Said(Mutex<Vec<String>>);

impl Said {
    /// Whether `message` is new (and remember it).
    fn first_time(&self, message: &str) -> bool {
        let mut said = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let new = !said.iter().any(|m| m == message);
        if new {
            said.push(message.to_string());
        }
        new
    }

    /// Print `message` as a warning line, the first time only.
    pub(crate) fn warn(&self, message: &str) {
        if self.first_time(message) {
            errln!("rave: warning: {message}");
        }
    }
}

/// No progress; warnings only.
#[derive(Default)]
struct Quiet(Said);

impl ProgressSink for Quiet {
    fn started(&self, _: Option<u64>) {}
    fn frame_written(&self, _: &Progress) {}
    fn finished(&self) {}
    fn warning(&self, message: &str) {
        self.0.warn(message);
    }
}

/// A terminal progress bar on stderr.
#[derive(Default)]
struct Bar(Mutex<Option<ProgressBar>>, Said);

impl ProgressSink for Bar {
    fn started(&self, frames_total: Option<u64>) {
        let bar = match frames_total {
            Some(n) => ProgressBar::with_draw_target(Some(n), ProgressDrawTarget::stderr()),
            None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()),
        };
        let style = ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} frames  {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(bar);
    }

    fn frame_written(&self, p: &Progress) {
        if let Some(bar) = self.0.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            bar.set_position(p.frames_done);
            let eta = p
                .eta_s
                .map(|s| format!("  ETA {}", format_duration(s)))
                .unwrap_or_default();
            bar.set_message(format!("{:.2} fps{eta}", p.fps));
        }
    }

    fn finished(&self) {
        if let Some(bar) = self.0.lock().unwrap_or_else(|e| e.into_inner()).take() {
            bar.finish_and_clear();
        }
    }

    fn warning(&self, message: &str) {
        if !self.1.first_time(message) {
            return;
        }
        let line = || errln!("rave: warning: {message}");
        match self.0.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            Some(bar) => bar.suspend(line),
            None => line(),
        }
    }
}

/// `seconds` as H:MM:SS.
pub(crate) fn format_duration(seconds: f64) -> String {
    let s = seconds.round() as u64;
    format!("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
}

/// One JSON object per event on stderr.
#[derive(Default)]
struct JsonLines(Said);

impl ProgressSink for JsonLines {
    fn started(&self, frames_total: Option<u64>) {
        errln!(
            "{}",
            serde_json::json!({"event": "started", "frames_total": frames_total})
        );
    }

    fn frame_written(&self, p: &Progress) {
        let mut v = serde_json::to_value(p).unwrap_or_default();
        v["event"] = "progress".into();
        errln!("{v}");
    }

    /// The stages stopped: how the run ended is said by the command ([`run_ended`]), once it
    /// knows (the output is written after the stages).
    fn finished(&self) {}

    fn warning(&self, message: &str) {
        if self.0.first_time(message) {
            errln!(
                "{}",
                serde_json::json!({"event": "warning", "message": message})
            );
        }
    }
}

/// With `--progress jsonl`, the last event of a run that succeeded: `finished`, with the
/// run's status (`complete`, or `partial` after Ctrl+C) where it has one. A run that fails
/// ends with an `error` event instead (`failure::report`).
pub fn run_ended(mode: ProgressArg, status: Option<rave_pipeline::report::RunStatus>) {
    if mode == ProgressArg::Jsonl {
        let mut event = serde_json::json!({"event": "finished"});
        if let Some(status) = status {
            event["status"] = serde_json::to_value(status).unwrap_or_default();
        }
        errln!("{event}");
    }
}

/// Say which input of a batch starts (`at` is its place and the batch's length): a line on
/// stderr above the bar, a JSON event with `--progress jsonl`, nothing otherwise.
pub fn announce_input(mode: ProgressArg, at: (usize, usize), job: &InputJob) {
    if mode == ProgressArg::Jsonl {
        errln!(
            "{}",
            serde_json::json!({
                "event": "input", "index": at.0, "count": at.1,
                "input": job.input.to_string_lossy(), "output": job.output.to_string_lossy(),
            })
        );
    } else if shows_bar(mode) {
        errln!(
            "rave: [{}/{}] {} -> {}",
            at.0,
            at.1,
            console::shown(&job.input),
            console::shown(&job.output)
        );
    }
}

/// Say that an input is left alone because its output exists (`--skip-existing`; `at` is
/// its place in a batch): a `skipped` event with `--progress jsonl`, else a line on stderr
/// (in a batch, where a terminal shows progress).
pub fn announce_skip(mode: ProgressArg, at: Option<(usize, usize)>, job: &InputJob) {
    let place = at.map_or(String::new(), |(i, n)| format!("[{i}/{n}] "));
    if mode == ProgressArg::Jsonl {
        let mut event = serde_json::json!({
            "event": "skipped", "input": job.input.to_string_lossy(),
            "output": job.output.to_string_lossy(),
            "reason": "the output exists (--skip-existing)",
        });
        if let Some((index, count)) = at {
            event["index"] = index.into();
            event["count"] = count.into();
        }
        errln!("{event}");
    } else if shows_bar(mode) {
        errln!(
            "rave: {place}{} skipped: {} exists (--skip-existing)",
            console::shown(&job.input),
            console::shown(&job.output)
        );
    }
}

/// The last event of a batch with `--progress jsonl`: `batch`, with its exit code and how
/// many inputs ended each way.
pub fn batch_ended(batch: &BatchReport) {
    let mut counts = serde_json::Map::new();
    for status in InputStatus::ALL {
        let key = serde_json::to_value(status).unwrap_or_default();
        if let Some(key) = key.as_str() {
            counts.insert(key.to_owned(), batch.count(status).into());
        }
    }
    let mut event =
        serde_json::json!({"event": "batch", "exit_code": batch.exit_code, "inputs": counts});
    if !batch.left_out.is_empty() {
        event["left_out"] = serde_json::to_value(&batch.left_out).unwrap_or_default();
    }
    errln!("{event}");
}
