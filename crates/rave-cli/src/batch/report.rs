//! What a batch did with each input (its report, or its error) and the exit code of the
//! whole: the first failure's, or 130 when Ctrl+C stopped it.

use std::path::{Path, PathBuf};

use rave_core::error::{EngineError, ErrorFamily, Result};
use rave_pipeline::RunReport;
use rave_pipeline::report::RunStatus;
use serde::Serialize;

use super::plan::{InputJob, LeftOut};
use crate::failure::ErrorObject;

/// How one input of a batch ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InputStatus {
    /// Upscaled; the output is complete.
    Done,
    /// Refused or failed; nothing was kept.
    Failed,
    /// Stopped by Ctrl+C; the output is the finalized `.partial` file.
    Partial,
    /// Stopped by Ctrl+C before its first frame was written; nothing was kept.
    Interrupted,
    /// Not started: Ctrl+C stopped the batch before it.
    NotStarted,
    /// Left alone: its output existed (`--skip-existing`).
    Skipped,
}

impl InputStatus {
    /// Every status, in the order the summary counts them.
    pub const ALL: [InputStatus; 6] = [
        InputStatus::Done,
        InputStatus::Failed,
        InputStatus::Partial,
        InputStatus::Interrupted,
        InputStatus::NotStarted,
        InputStatus::Skipped,
    ];

    /// The status in words, as the summary counts it ("not started").
    pub fn words(self) -> &'static str {
        match self {
            InputStatus::Done => "done",
            InputStatus::Failed => "failed",
            InputStatus::Partial => "partial",
            InputStatus::Interrupted => "interrupted",
            InputStatus::NotStarted => "not started",
            InputStatus::Skipped => "skipped",
        }
    }
}

/// A path in the JSON, as text: a name that is not UTF-8 (failed as such, but listed) with
/// U+FFFD in place of the bytes that are not.
pub(crate) fn lossy_path<S: serde::Serializer>(
    path: &Path,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(&path.to_string_lossy())
}

/// One input of a batch.
#[derive(Debug, Serialize)]
pub struct InputResult {
    /// The input file.
    #[serde(serialize_with = "lossy_path")]
    pub input: PathBuf,
    /// The file written (the `.partial` file after Ctrl+C), or the planned output when none
    /// was.
    #[serde(serialize_with = "lossy_path")]
    pub output: PathBuf,
    /// How it ended.
    pub status: InputStatus,
    /// The run's report, when it ran to the end or was finalized after Ctrl+C.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report: Option<RunReport>,
    /// Why it failed or was interrupted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
}

impl InputResult {
    /// The result of running `job`.
    pub fn of_run(job: &InputJob, run: Result<RunReport>) -> Self {
        match run {
            Ok(report) => Self {
                input: job.input.clone(),
                output: report.output.clone(),
                status: match report.status {
                    RunStatus::Complete => InputStatus::Done,
                    RunStatus::Partial => InputStatus::Partial,
                },
                report: Some(report),
                error: None,
            },
            Err(err) => Self {
                status: match err.family() {
                    ErrorFamily::Cancelled => InputStatus::Interrupted,
                    _ => InputStatus::Failed,
                },
                error: Some(ErrorObject::of(&err)),
                ..Self::not_started(job)
            },
        }
    }

    /// `job`, left alone because its output exists.
    pub fn skipped(job: &InputJob) -> Self {
        Self {
            status: InputStatus::Skipped,
            ..Self::not_started(job)
        }
    }

    /// `job`, not started.
    pub fn not_started(job: &InputJob) -> Self {
        Self {
            input: job.input.clone(),
            output: job.output.clone(),
            status: InputStatus::NotStarted,
            report: None,
            error: None,
        }
    }
}

/// The batch as `--json` prints it.
#[derive(Debug, Serialize)]
pub struct BatchReport {
    /// The output folder.
    #[serde(serialize_with = "lossy_path")]
    pub output_folder: PathBuf,
    /// The exit code `rave` ends with.
    pub exit_code: i32,
    /// Each input, in the order they were taken.
    pub results: Vec<InputResult>,
    /// Files given that were not taken as inputs: RAVE's outputs of other inputs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<LeftOut>,
}

impl BatchReport {
    /// The report of `results`; `interrupted` when Ctrl+C stopped the batch.
    pub fn new(output_folder: PathBuf, results: Vec<InputResult>, interrupted: bool) -> Self {
        let mut report = Self {
            output_folder,
            exit_code: 0,
            results,
            left_out: Vec::new(),
        };
        report.set_exit_code(interrupted);
        report
    }

    /// Set the exit code from the results: 130 when `interrupted` (Ctrl+C stopped the
    /// batch), else the first failure's, else 0.
    pub fn set_exit_code(&mut self, interrupted: bool) {
        let first_failure = self
            .results
            .iter()
            .find_map(|r| r.error.as_ref().filter(|_| r.status == InputStatus::Failed));
        self.exit_code = match (interrupted, first_failure) {
            (true, _) => EngineError::Cancelled.family().exit_code(),
            (false, Some(e)) => e.exit_code,
            (false, None) => 0,
        };
    }

    /// How many inputs ended with `status`.
    pub fn count(&self, status: InputStatus) -> usize {
        self.results.iter().filter(|r| r.status == status).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(name: &str) -> InputJob {
        InputJob {
            input: PathBuf::from(format!("in/{name}")),
            output: PathBuf::from(format!("out/{name}")),
        }
    }

    fn failed(name: &str, err: EngineError) -> InputResult {
        InputResult::of_run(&job(name), Err(err))
    }

    #[test]
    fn the_exit_code_is_the_first_failures_unless_interrupted() {
        let model = EngineError::ModelNotFound("m".into());
        let input = EngineError::NotAVideo {
            path: "in/b.mp4".into(),
            reason: "file is empty".into(),
        };
        let report =
            |results, interrupted| BatchReport::new("out".into(), results, interrupted).exit_code;
        assert_eq!(report(vec![InputResult::not_started(&job("a"))], false), 0);
        assert_eq!(report(vec![InputResult::skipped(&job("a"))], false), 0);
        assert_eq!(
            report(vec![failed("b", input), failed("c", model)], false),
            3
        );
        let model = EngineError::ModelNotFound("m".into());
        let stopped = failed("d", EngineError::CancelledBeforeOutput);
        assert_eq!(stopped.status, InputStatus::Interrupted);
        assert_eq!(stopped.output, PathBuf::from("out/d"));
        let rest = InputResult::not_started(&job("e"));
        let batch = BatchReport::new("out".into(), vec![failed("c", model), stopped, rest], true);
        assert_eq!(batch.exit_code, 130);
        assert_eq!(batch.count(InputStatus::Failed), 1);
        assert_eq!(batch.count(InputStatus::Interrupted), 1);
        assert_eq!(batch.count(InputStatus::NotStarted), 1);
    }
}
