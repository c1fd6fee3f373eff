//! One module per `rave` command.

pub mod benchmark;
pub mod devices;
pub mod distributed;
pub mod models;
pub mod probe;
pub mod upscale;

use rave_core::error::ErrorFamily;
use rave_pipeline::report::RunStatus;

use crate::console::{errln, outln};

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
        // A second Ctrl+C printing its error document at this moment has the last word.
        if !crate::interrupt::claim_final_document() {
            return;
        }
        match serde_json::to_string_pretty(value) {
            Ok(text) => outln!("{text}"),
            // Never an empty document in silence: what went wrong, on stderr.
            Err(e) => errln!("rave: error: the JSON report could not be written: {e}"),
        }
    } else {
        human(value);
    }
}
