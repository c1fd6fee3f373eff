//! One module per `rave` command.

pub mod benchmark;
pub mod devices;
pub mod distributed;
pub mod models;
pub mod probe;
pub mod upscale;

use rave_core::error::ErrorFamily;
use rave_pipeline::report::RunStatus;

use crate::console::outln;

/// The exit code of a run that ended with `status`: 0, or 130 for a partial run (Ctrl+C).
pub fn exit_code_of(status: RunStatus) -> i32 {
    match status {
        RunStatus::Complete => 0,
        RunStatus::Partial => ErrorFamily::Cancelled.exit_code(),
    }
}

/// Print a command's result: pretty JSON on stdout with `--json`, else the human summary.
pub fn print_result<T: serde::Serialize>(json: bool, value: &T, human: impl FnOnce(&T)) {
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(value).unwrap_or_default()
        );
    } else {
        human(value);
    }
}
